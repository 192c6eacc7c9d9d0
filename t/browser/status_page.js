// The status page (www/status) for driver.js: its steps and what it shows.
// The test (t/integration/browser_status_page_test.cpp) decides what is right.
// Steps: {"wait": {"updates": N, "indexer": STATE, "nodes": N, "nodes_out": N, "loading": TEXT,
//                  "databases": N}}
//        (up to 60 s until every condition given holds: N refreshes done, the
//        indexer's state shown, rows of the pools, of them out, TEXT in what
//        is still loading, rows of the databases) |
//        {"pause": true} (stops its refreshes; the last one ended).
'use strict';

const idle = (page) => page.waitForFunction(() => document.body.dataset.busy === 'false', null, { timeout: 20000 });

async function loaded(page) {
  await page.waitForFunction(() => Number(document.body.dataset.updates) >= 1, null, { timeout: 20000 });
  return {};
}

async function step(page, action) {
  if ('wait' in action) {
    // A function, not a string: the page's policy forbids eval.
    await page.waitForFunction((want) => {
      const rows = [...document.querySelectorAll('#nodes-table tbody tr')];
      const out = rows.filter((tr) => tr.cells[2].textContent === 'out').length;
      return (want.updates === undefined || Number(document.body.dataset.updates) >= want.updates) &&
        (want.indexer === undefined || document.querySelector('[data-field=indexer_state]').dataset.state === want.indexer) &&
        (want.nodes === undefined || rows.length === want.nodes) &&
        (want.nodes_out === undefined || out === want.nodes_out) &&
        (want.loading === undefined || document.querySelector('[data-field=loading]').textContent.includes(want.loading)) &&
        (want.databases === undefined || document.querySelectorAll('#databases-table tbody tr').length === want.databases);
    }, action.wait, { timeout: 60000, polling: 200 });
    await idle(page);
  } else if ('pause' in action) {
    await page.click('#pause');
    await idle(page);
  } else {
    throw new Error(`unknown step ${JSON.stringify(action)}`);
  }
}

// What a reader sees: each fact (text and state), the tables cell by cell.
function snapshot(page) {
  return page.evaluate(() => {
    const fields = {};
    for (const element of document.querySelectorAll('[data-field]')) {
      fields[element.dataset.field] = { text: element.textContent, state: element.dataset.state || null };
    }
    const rows = (id) => [...document.querySelectorAll(`#${id} tbody tr`)].map((tr) => [...tr.cells].map((td) => td.textContent));
    const problem = document.getElementById('problem');
    return {
      fields,
      nodes: rows('nodes-table'),
      classes: rows('classes-table'),
      databases: rows('databases-table'),
      problem: problem.hidden ? null : problem.textContent,
      loading_bar: document.getElementById('loading-bar').style.width,
      table_header_shown: getComputedStyle(document.querySelector('#nodes-table thead')).display !== 'none',
      page_width: document.documentElement.scrollWidth,
      viewport_width: window.innerWidth,
    };
  });
}

module.exports = { loaded, step, snapshot };
