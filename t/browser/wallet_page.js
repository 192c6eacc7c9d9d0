// Drives the wallet page (www/wallet) in Debian's Chromium, headless, through
// playwright-core, the way a person uses it, and reports what the page shows.
// The test (t/integration/browser_wallet_page_test.cpp) decides what is right.
//
// Usage: node wallet_page.js CHROMIUM PORT_FILE
// Launches Chromium once, then serves POST /run on a free loopback port,
// written to PORT_FILE: each request (one test) runs one script on the page
// loaded afresh, so the tests share the browser's start-up.
// Script: {"url", "screenshot", "phone": bool,
//          "steps": [{"account": NAME} | {"click": "older"|"newer"} |
//                    {"check": [OP_TYPE...]} | {"window": "all"|"7"|...} |
//                    {"custom_window": [FROM_DATE, TO_DATE]}]}
// Answer: {"filters": {"default": [...], "opt_in": [...]},
//          "snapshots": [what the page shows after each step], "problems": [...]}
// or HTTP 500 with the error.
'use strict';

const fs = require('fs');
const http = require('http');
const { chromium } = require('playwright-core');

const [chromiumPath, portFile] = process.argv.slice(2);

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
      balances: [...document.querySelectorAll('#balances-main dt')].map((dt) => [dt.textContent, dt.nextElementSibling.textContent]),
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

// One tab per kind of screen, kept from script to script: a new one costs a
// renderer's start-up, and loading the page again starts it afresh anyway.
const tabs = {};
async function tab(browser, phone) {
  const kind = phone ? 'phone' : 'desktop';
  if (!tabs[kind]) {
    const context = await browser.newContext(
      phone ? { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true }
            : { viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    page.setDefaultTimeout(10000);
    const problems = [];
    page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
    page.on('console', (message) => { if (message.type() === 'error') problems.push(`console: ${message.text()}`); });
    tabs[kind] = { page, problems };
  }
  return tabs[kind];
}

async function runScript(browser, script) {
  const { page, problems } = await tab(browser, script.phone);
  problems.length = 0;
  await page.goto('about:blank');
  await page.goto(script.url);
  await settled(page);
  const filters = await page.evaluate(() => {
    const types = (id) => [...document.querySelectorAll(`#${id} input`)].map((box) => box.value);
    return { default: types('types-default'), opt_in: types('types-opt-in') };
  });
  const snapshots = [];
  try {
    for (const step of script.steps) {
      await run(page, step);
      snapshots.push(await snapshot(page));
    }
  } finally {
    // Also when a step failed: the picture says what the page showed.
    await page.screenshot({ path: script.screenshot, fullPage: true, timeout: 30000 });
  }
  return { filters, snapshots, problems: [...problems] };
}

async function main() {
  const browser = await chromium.launch({ executablePath: chromiumPath, headless: true });
  const server = http.createServer((request, response) => {
    let body = '';
    request.on('data', (chunk) => { body += chunk; });
    request.on('end', async () => {
      try {
        const result = await runScript(browser, JSON.parse(body));
        response.writeHead(200, { 'Content-Type': 'application/json' });
        response.end(JSON.stringify(result));
      } catch (error) {
        response.writeHead(500, { 'Content-Type': 'text/plain' });
        response.end(error && error.stack ? error.stack : String(error));
      }
    });
  });
  server.listen(0, '127.0.0.1', () => fs.writeFileSync(portFile, String(server.address().port)));
  // Stopped by the test with SIGTERM: Chromium goes with it.
  process.on('SIGTERM', async () => {
    server.close();
    await browser.close();
    process.exit(0);
  });
}

main().catch((error) => {
  console.error(error && error.stack ? error.stack : String(error));
  process.exit(1);
});
