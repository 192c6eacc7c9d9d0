// The wallet page (www/wallet) for driver.js: its steps and what it shows.
// The test (t/integration/browser_wallet_page_test.cpp) decides what is right.
// Steps: {"account": NAME} | {"click": "older"|"newer"} |
//        {"check": [OP_TYPE...]} | {"window": "all"|"7"|...} |
//        {"custom_window": [FROM_DATE, TO_DATE]} | {"chart": COMPONENT} |
//        {"open": DETAILS_ID} | {"page_size": "10"|"25"|"50"|"100"}
// Loaded: {"filters": {"default": [...], "opt_in": [...]}}.
'use strict';

// Waits until every action the page started has finished (wallet.js sets
// <body data-busy> while one runs).
async function settled(page) {
  await page.waitForFunction(() => document.body.dataset.busy === 'false', null, { timeout: 20000 });
}

// What a reader sees: texts of the visible parts, cell by cell.
function snapshot(page) {
  return page.evaluate(() => {
    const visible = (id) => !document.getElementById(id).hidden;
    const text = (id) => document.getElementById(id).textContent.trim();
    const rows = (selector) =>
      [...document.querySelectorAll(`${selector} tbody tr`)].map((tr) => [...tr.cells].map((td) => td.textContent));
    const pairs = (selector) =>
      [...document.querySelectorAll(`${selector} dt`)].map((dt) => [dt.textContent, dt.nextElementSibling.textContent]);
    const message = document.getElementById('message');
    return {
      message: message.hidden ? null : { text: message.textContent, kind: message.className },
      history_visible: visible('history'),
      totals_visible: visible('totals'),
      balances_visible: visible('balances'),
      page_number: text('page-number'),
      newer_enabled: !document.getElementById('newer').disabled,
      older_enabled: !document.getElementById('older').disabled,
      rows: rows('#history-table'),
      empty_note_visible: visible('history-empty'),
      totals: rows('#totals-table'),
      totals_window: text('totals-window'),
      balances_note: visible('balances-note') ? text('balances-note') : null,
      // The balances as [name, value] pairs: the main ones, then every component (in a <details>).
      balances: pairs('#balances-main'),
      balances_all: pairs('#balances-all'),
      // The balance chart: its component, note and points (oldest first), each with the exact balance it shows.
      chart_visible: visible('balances') && visible('chart'),
      chart_component: document.getElementById('chart-component').value,
      chart_choices: [...document.getElementById('chart-component').options].map((option) => option.value),
      chart_note: text('chart-note'),
      chart_points: [...document.querySelectorAll('#chart-svg circle')].map(
        (dot) => ({ block_num: Number(dot.dataset.blockNum), balance: dot.dataset.balance, time: dot.dataset.time })),
      chart_labels: [...document.querySelectorAll('#chart-svg text')].map((label) => label.textContent),
      chart_right: Math.round(document.getElementById('chart-svg').getBoundingClientRect().right),
      // The phone layout: no header row, and nothing wider than the screen.
      table_header_shown: getComputedStyle(document.querySelector('#history-table thead')).display !== 'none',
      page_width: document.documentElement.scrollWidth,
      viewport_width: window.innerWidth,
    };
  });
}

async function run(page, step) {
  if ('account' in step) {
    await page.fill('#account', step.account);
    await page.click('#show');
  } else if ('click' in step) {
    await page.click(`#${step.click}`);
  } else if ('check' in step) {
    await page.evaluate(() => { document.getElementById('filters').open = true; });
    for (const type of step.check) await page.check(`input[name=op_type][value="${type}"]`);
  } else if ('window' in step) {
    await page.selectOption('#window', step.window);
  } else if ('chart' in step) {
    await page.selectOption('#chart-component', step.chart);
  } else if ('page_size' in step) {
    await page.selectOption('#page-size', step.page_size);
  } else if ('open' in step) {
    await page.click(`#${step.open} > summary`);
  } else if ('custom_window' in step) {
    await page.selectOption('#window', 'custom');
    await settled(page);
    await page.fill('#window-from', step.custom_window[0]);
    await settled(page);
    await page.fill('#window-to', step.custom_window[1]);
  } else {
    throw new Error(`unknown step ${JSON.stringify(step)}`);
  }
  await settled(page);
}

// Once loaded: the op types the filter offers.
async function loaded(page) {
  await settled(page);
  return page.evaluate(() => {
    const types = (id) => [...document.querySelectorAll(`#${id} input`)].map((box) => box.value);
    return { filters: { default: types('types-default'), opt_in: types('types-opt-in') } };
  });
}

module.exports = { loaded, step: run, snapshot };
