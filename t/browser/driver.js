// Drives a page of the product in Debian's Chromium, headless, through
// playwright-core, the way a person uses it, and reports what the page shows.
// The tests (t/integration/browser_*_test.cpp) decide what is right.
//
// Usage: node driver.js PAGE_MODULE CHROMIUM PORT_FILE
// Launches Chromium once, then serves POST /run on a free loopback port,
// written to PORT_FILE: each request runs one script, so the tests share the
// browser's start-up. PAGE_MODULE (wallet_page.js, status_page.js) knows its
// page: loaded(page) -> what it reports once loaded, step(page, step),
// snapshot(page) -> what it shows.
// Script: {"url" (absent: go on with the page already open), "screenshot",
//          "phone": bool, "steps": [...]}
// Answer: {...loaded(page), "snapshots": [after each step], "problems": [...]}
// or HTTP 500 with the error.
'use strict';

const fs = require('fs');
const http = require('http');
const path = require('path');
const { chromium } = require('playwright-core');

const [pageModule, chromiumPath, portFile] = process.argv.slice(2);
const pageDriver = require(path.resolve(__dirname, pageModule));

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
  let loaded = {};
  if (script.url) {
    problems.length = 0;
    await page.goto('about:blank');
    await page.goto(script.url);
    loaded = await pageDriver.loaded(page);
  }
  const snapshots = [];
  try {
    for (const step of script.steps) {
      await pageDriver.step(page, step);
      snapshots.push(await pageDriver.snapshot(page));
    }
  } finally {
    // Also when a step failed: the picture says what the page showed.
    await page.screenshot({ path: script.screenshot, fullPage: true, timeout: 30000 });
  }
  return { ...loaded, snapshots, problems: [...problems] };
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
