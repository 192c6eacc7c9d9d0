// A wallet screen built on the wallet_history JSON-RPC API, as example code
// for front-end developers: plain browser JavaScript, no framework, no build.
//
// What a front end of this API has to know, and where it is done here:
//  1. Transport (callApi): one JSON-RPC 2.0 object per HTTP POST, to the same
//     origin that served the page (the deployment's RPC endpoint routes
//     `wallet_history.*` to the API). A JSON-RPC error comes back as HTTP 200
//     with an `error` member; a proxy or a down server may answer otherwise.
//  2. Paging (loadPage): newest first, by an opaque cursor. `next_cursor` of
//     a page fetches the next (older) one; to go back, keep the cursors you
//     used (the API has no "previous" cursor). Never build or parse a cursor.
//  3. Money (formatAmount): amounts are exact decimal strings ("59.441772").
//     Show them as they are; never pass them through Number() or parseFloat.
//  4. Filters: get_methods lists the op types answered by default and the
//     opt-in ones; `op_types` asks for exactly those.
//  5. Reward totals: server-side sums over an optional [from, to) window.
//  6. Balances: get_balances answers only where the store holds every block
//     from the first; otherwise an error that says what is missing.
//  7. A balance over time (loadChart): get_balance_history's changes of one
//     component, paged like the history, drawn as a small hand-made SVG
//     (drawChart). Amounts stay strings there too: Number() only computes
//     where a dot goes on the screen, never a figure that is shown.
'use strict';

// ---------------------------------------------------------------------------
// 1. Calling the API
// ---------------------------------------------------------------------------

// The page is served by the JSON-RPC router, which takes POSTs on "/".
const API_ENDPOINT = '/';

let nextRequestId = 1;

// The API answered with a JSON-RPC error object ({code, message}).
class ApiError extends Error {
  constructor(code, message) {
    super(message);
    this.code = code;
  }
}

// The request got no JSON-RPC answer at all (network down, HTTP error page).
class TransportError extends Error {}

// JSON-RPC error codes the page tells apart (spec 000, docs/wallet-history-api.md).
const INVALID_PARAMS = -32602;

async function callApi(method, params) {
  const request = { jsonrpc: '2.0', id: nextRequestId++, method: `wallet_history.${method}`, params };
  let response;
  try {
    response = await fetch(API_ENDPOINT, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify(request),
    });
  } catch (error) {
    throw new TransportError(`the API cannot be reached (${error.message})`);
  }
  let answer;
  try {
    answer = await response.json();
  } catch {
    throw new TransportError(`the server answered HTTP ${response.status} without a JSON-RPC answer`);
  }
  if (answer && answer.error) throw new ApiError(answer.error.code, answer.error.message);
  if (!answer || !('result' in answer)) {
    throw new TransportError(`the server answered HTTP ${response.status} without a result`);
  }
  return answer.result;
}

// ---------------------------------------------------------------------------
// 2. What the page shows now
// ---------------------------------------------------------------------------

const state = {
  account: '',
  opTypes: [],          // checked filter types; empty: the API's default types
  pageSize: 25,
  cursors: [null],      // cursors[i] fetches page i (page 0: no cursor)
  pageIndex: 0,
  nextCursor: null,     // of the page shown; null on the oldest page
  indexedTime: null,    // the chain time the index has reached (get_status)
  generation: 0,        // bumped per account shown: answers of an older one are dropped
};

const $ = (id) => document.getElementById(id);

// ---------------------------------------------------------------------------
// 3. Rendering helpers (text only: API strings never go through innerHTML)
// ---------------------------------------------------------------------------

// An exact decimal string and its symbol, as the API gave them.
function formatAmount(amount, symbol) {
  return `${amount} ${symbol}`;
}

// "2016-09-08T07:52:42Z" -> "2016-09-08 07:52:42" (the table says UTC).
function formatTime(iso) {
  return iso.replace('T', ' ').replace('Z', '');
}

const NONE = '—';

// The liquid and the vesting amount of an event (a few events carry both).
function eventAmount(event) {
  const parts = [];
  if (event.amount !== null) parts.push(formatAmount(event.amount, event.symbol));
  if (event.vesting_amount !== null) parts.push(formatAmount(event.vesting_amount, event.vesting_symbol));
  return parts.length > 0 ? parts.join(' + ') : NONE;
}

// A transfer's memo, or the post a reward was paid for.
function eventDetails(event) {
  if (event.memo !== null && event.memo !== '') return event.memo;
  if (event.author !== null && event.permlink !== null) return `@${event.author}/${event.permlink}`;
  return NONE;
}

function cell(text, label) {
  const td = document.createElement('td');
  td.textContent = text;
  td.dataset.label = label;  // the phone layout shows it before the value
  return td;
}

function showMessage(text, kind) {
  const message = $('message');
  message.textContent = text;
  message.className = kind;
  message.hidden = false;
}

function hideMessage() {
  $('message').hidden = true;
}

// What to tell the reader about a failed call.
function describeError(error, what) {
  if (error instanceof ApiError) return `The API answered an error while loading ${what}: ${error.message} (code ${error.code}).`;
  if (error instanceof TransportError) return `The API could not be reached while loading ${what}: ${error.message}.`;
  return `Something went wrong while loading ${what}: ${error.message}.`;
}

// Every user action runs as one tracked promise: <body data-busy> is "true"
// until all are done, so tests and scripts know when the page is settled.
let actionsRunning = 0;
function track(promise) {
  actionsRunning += 1;
  document.body.dataset.busy = 'true';
  return promise.catch(() => {}).finally(() => {
    actionsRunning -= 1;
    if (actionsRunning === 0) document.body.dataset.busy = 'false';
  });
}

// ---------------------------------------------------------------------------
// 4. History: pages and filters
// ---------------------------------------------------------------------------

function historyParams() {
  const params = { account: state.account, limit: state.pageSize };
  const cursor = state.cursors[state.pageIndex];
  if (cursor !== null) params.cursor = cursor;
  if (state.opTypes.length > 0) params.op_types = state.opTypes;
  return params;
}

function renderPage(page) {
  const body = $('history-table').tBodies[0];
  body.replaceChildren();
  for (const event of page.items) {
    const row = document.createElement('tr');
    row.append(
      cell(formatTime(event.timestamp), 'Time'),
      cell(event.op_type, 'Operation'),
      cell(event.role, 'Role'),
      cell(eventAmount(event), 'Amount'),
      cell(event.counterparty ?? NONE, 'Counterparty'),
      cell(eventDetails(event), 'Details'),
      cell(String(event.block_num), 'Block'),
    );
    body.append(row);
  }
  state.nextCursor = page.next_cursor;
  $('history-empty').hidden = page.items.length > 0;
  $('page-number').textContent = `Page ${state.pageIndex + 1}`;
  $('newer').disabled = state.pageIndex === 0;
  $('older').disabled = page.next_cursor === null;
  $('indexer').textContent = `Indexed up to block ${page.indexer.indexed_block}` +
    (state.indexedTime ? ` (${formatTime(state.indexedTime)} UTC).` : '.');
  $('indexer').hidden = false;
}

async function loadPage() {
  const generation = state.generation;
  try {
    const page = await callApi('get_wallet_history', historyParams());
    if (generation !== state.generation) return;
    renderPage(page);
    hideMessage();
    return page;
  } catch (error) {
    if (generation === state.generation) showMessage(describeError(error, 'the history'), 'error');
    throw error;
  }
}

// Back to the newest page, e.g. after the filter or the page size changed.
function reloadFromFirstPage() {
  state.cursors = [null];
  state.pageIndex = 0;
  track(loadPage());
}

function showOlder() {
  if (state.nextCursor === null) return;
  state.cursors[state.pageIndex + 1] = state.nextCursor;
  state.pageIndex += 1;
  track(loadPage().catch((error) => { state.pageIndex -= 1; throw error; }));
}

function showNewer() {
  if (state.pageIndex === 0) return;
  state.pageIndex -= 1;
  track(loadPage().catch((error) => { state.pageIndex += 1; throw error; }));
}

// One checkbox per op type that get_methods names.
function renderFilters(opTypes) {
  for (const [group, types] of [['types-default', opTypes.default], ['types-opt-in', opTypes.opt_in]]) {
    const fieldset = $(group);
    fieldset.querySelectorAll('label').forEach((label) => label.remove());
    for (const type of types) {
      const label = document.createElement('label');
      const box = document.createElement('input');
      box.type = 'checkbox';
      box.value = type;
      box.name = 'op_type';
      label.append(box, ` ${type}`);
      fieldset.append(label);
    }
  }
}

function filterChanged() {
  state.opTypes = [...document.querySelectorAll('input[name=op_type]:checked')].map((box) => box.value);
  $('filter-summary').textContent = state.opTypes.length > 0 ? `(${state.opTypes.join(', ')})` : '(the default wallet types)';
  reloadFromFirstPage();
}

// ---------------------------------------------------------------------------
// 5. Reward totals over a window
// ---------------------------------------------------------------------------

const DAY_MS = 24 * 3600 * 1000;

// "YYYY-MM-DDTHH:MM:SSZ", the API's timestamp form.
function isoSeconds(date) {
  return date.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

// {from, to} of the chosen window; the last N days end at the indexed chain
// time, not the wall clock (a node that is catching up, or the demo's chain
// of 2016, would otherwise show empty windows).
function totalsWindow() {
  const choice = $('window').value;
  if (choice === 'all') return {};
  if (choice === 'custom') {
    const window = {};
    if ($('window-from').value) window.from = `${$('window-from').value}T00:00:00Z`;
    if ($('window-to').value) window.to = `${$('window-to').value}T00:00:00Z`;
    return window;
  }
  const end = state.indexedTime ? new Date(state.indexedTime) : new Date();
  return { from: isoSeconds(new Date(end.getTime() - Number(choice) * DAY_MS)) };
}

const REWARD_NAMES = {
  author_reward: 'Author rewards',
  curation_reward: 'Curation rewards',
  comment_benefactor_reward: 'Beneficiary rewards',
};

function renderTotals(result) {
  const body = $('totals-table').tBodies[0];
  body.replaceChildren();
  for (const [type, total] of Object.entries(result.totals)) {
    const row = document.createElement('tr');
    const liquid = (total.liquid ?? []).map((part) => formatAmount(part.amount, part.symbol)).join(' + ');
    row.append(
      cell(REWARD_NAMES[type] ?? type, 'Reward'),
      cell(String(total.count), 'Count'),
      cell(formatAmount(total.vesting_amount, total.vesting_symbol), 'Vesting'),
      cell(liquid || NONE, 'Liquid'),
    );
    body.append(row);
  }
  const from = result.from ? formatTime(result.from) : 'the first indexed block';
  const to = result.to ? formatTime(result.to) : 'now';
  $('totals-window').textContent = `From ${from} to ${to} (UTC).`;
}

async function loadTotals() {
  const generation = state.generation;
  try {
    const result = await callApi('get_reward_totals', { account: state.account, ...totalsWindow() });
    if (generation === state.generation) renderTotals(result);
  } catch (error) {
    if (generation === state.generation) {
      $('totals-table').tBodies[0].replaceChildren();
      $('totals-window').textContent = describeError(error, 'the reward totals');
    }
  }
}

// ---------------------------------------------------------------------------
// 6. Balances (when the store can compute them)
// ---------------------------------------------------------------------------

// The balances a wallet shows first, in this order: the API's field, what to
// call it, and its asset (for the chart's tooltips). get_balances answers
// more (pending amounts, counts); the page lists those as they come.
const MAIN_BALANCES = [
  { field: 'hive_balance', name: 'HIVE', symbol: 'HIVE' },
  { field: 'hbd_balance', name: 'HBD', symbol: 'HBD' },
  { field: 'vesting_shares', name: 'Vesting shares (Hive Power)', symbol: 'VESTS' },
  { field: 'hive_savings', name: 'HIVE in savings', symbol: 'HIVE' },
  { field: 'hbd_savings', name: 'HBD in savings', symbol: 'HBD' },
  { field: 'delegated_vests', name: 'Delegated to others', symbol: 'VESTS' },
  { field: 'received_vests', name: 'Received by delegation', symbol: 'VESTS' },
];

function balanceEntry(list, name, value) {
  const term = document.createElement('dt');
  term.textContent = name;
  const definition = document.createElement('dd');
  definition.textContent = String(value);  // exact decimals as given, counts as integers
  list.append(term, definition);
}

async function loadBalances() {
  const generation = state.generation;
  const note = $('balances-note');
  $('balances-main').replaceChildren();
  $('balances-all').replaceChildren();
  try {
    const result = await callApi('get_balances', { account: state.account });
    if (generation !== state.generation) return;
    for (const { field, name } of MAIN_BALANCES) {
      if (field in result.balances) balanceEntry($('balances-main'), name, result.balances[field]);
    }
    for (const [field, value] of Object.entries(result.balances)) balanceEntry($('balances-all'), field, value);
    note.textContent = `After block ${result.block}.`;
    $('balances-more').hidden = false;
    // The chart asks for the same account's history of one component: only
    // worth asking once the store has shown it can compute balances.
    $('chart').hidden = false;
    await loadChart();
  } catch (error) {
    if (generation !== state.generation) return;
    // Not every store can answer (a store without the oldest blocks, or one
    // still loading them): the history and totals stand without balances.
    note.textContent = error instanceof ApiError ? `Balances are not available here: ${error.message}.`
                                                 : describeError(error, 'the balances');
    $('balances-more').hidden = true;
    $('chart').hidden = true;
  } finally {
    if (generation === state.generation) note.hidden = false;
  }
}

// ---------------------------------------------------------------------------
// 7. One balance over time: a hand-made SVG chart
// ---------------------------------------------------------------------------

// get_balance_history pages are newest first; a few pages of the API's
// default size cover the recent changes without loading a whole life (the
// note under the select says when the chart shows only the most recent).
const CHART_PAGE_LIMIT = 50;
const CHART_MAX_PAGES = 6;

const SVG_NS = 'http://www.w3.org/2000/svg';

function svgElement(name, attributes, text) {
  const element = document.createElementNS(SVG_NS, name);
  for (const [key, value] of Object.entries(attributes)) element.setAttribute(key, String(value));
  if (text !== undefined) element.textContent = text;
  return element;
}

// The component's changes, oldest first: [{time, block, balance}] with the
// balance as the API's exact decimal string (the balance after the change),
// and whether they are all of them (the last page had no next_cursor).
async function balanceChanges(component) {
  const changes = [];
  let cursor = null;
  let complete = false;
  for (let page = 0; page < CHART_MAX_PAGES; ++page) {
    const params = { account: state.account, component, limit: CHART_PAGE_LIMIT };
    if (cursor !== null) params.cursor = cursor;
    const result = await callApi('get_balance_history', params);
    for (const item of result.items) changes.push({ time: item.timestamp, block: item.block_num, balance: item.balance });
    cursor = result.next_cursor;
    // A page may hold fewer rows than the limit, or none, and still have a
    // next_cursor (docs/wallet-history-api.md): only null means the end.
    if (cursor === null) { complete = true; break; }
  }
  return { changes: changes.reverse(), complete };
}

// Draws the changes as a step line (a balance holds until its next change),
// one dot per change. Sized in real pixels from the element's width, so its
// text stays readable on a phone; redrawn when the window is resized.
function drawChart(changes) {
  const svg = $('chart-svg');
  svg.replaceChildren();
  if (changes.length === 0) return;
  const width = Math.max(svg.clientWidth, 280);
  const height = 220;
  const margin = { left: 8, right: 8, top: 22, bottom: 40 };
  svg.setAttribute('viewBox', `0 0 ${width} ${height}`);
  svg.setAttribute('height', String(height));

  // Number() only to place a dot on the screen: a float is exact enough for a
  // pixel, never for money, so every text shown (labels, tooltips) is the
  // API's exact string, never a float printed back.
  const times = changes.map((change) => Date.parse(change.time));
  const values = changes.map((change) => Number(change.balance));
  const lowest = values.indexOf(Math.min(...values));
  const highest = values.indexOf(Math.max(...values));
  const timeSpan = Math.max(times[times.length - 1] - times[0], 1);
  const valueSpan = values[highest] - values[lowest] || 1;
  const x = (i) => margin.left + ((times[i] - times[0]) / timeSpan) * (width - margin.left - margin.right);
  const y = (i) => height - margin.bottom - ((values[i] - values[lowest]) / valueSpan) * (height - margin.top - margin.bottom);

  // Steps: across at the old balance, then up or down at the change.
  let path = `M ${x(0)} ${y(0)}`;
  for (let i = 1; i < changes.length; ++i) path += ` H ${x(i)} V ${y(i)}`;
  svg.append(svgElement('path', { d: path, class: 'chart-line' }));

  const symbol = $('chart-component').selectedOptions[0]?.dataset.symbol ?? '';
  changes.forEach((change, i) => {
    // The data-* attributes say what the dot stands for, for scripts and tests.
    const dot = svgElement('circle', { cx: x(i), cy: y(i), r: 3.5, class: 'chart-point', 'data-block-num': change.block,
                                       'data-balance': change.balance, 'data-time': change.time });
    // A native tooltip (and what a screen reader says) for each change.
    dot.append(svgElement('title', {}, `${formatTime(change.time)} UTC, block ${change.block}: ${change.balance} ${symbol}`));
    svg.append(dot);
  });

  // Labels: the highest and lowest balance, the first and last time (the
  // date, or the date and minute when all changes are of one day).
  const first = changes[0].time;
  const last = changes[changes.length - 1].time;
  const axisTime = (iso) => (first.slice(0, 10) === last.slice(0, 10) ? formatTime(iso).slice(0, 16) : iso.slice(0, 10));
  svg.append(
    svgElement('text', { x: margin.left, y: 14, class: 'chart-label' }, `max ${changes[highest].balance}`),
    svgElement('text', { x: margin.left, y: height - 24, class: 'chart-label' }, `min ${changes[lowest].balance}`),
    svgElement('text', { x: margin.left, y: height - 6, class: 'chart-label' }, axisTime(first)),
    svgElement('text', { x: width - margin.right, y: height - 6, class: 'chart-label', 'text-anchor': 'end' },
               axisTime(last)),
  );
}

// The select's choices: the main balances.
function renderChartChoices() {
  const select = $('chart-component');
  for (const { field, name, symbol } of MAIN_BALANCES) {
    const option = document.createElement('option');
    option.value = field;
    option.textContent = name;
    option.dataset.symbol = symbol;
    select.append(option);
  }
}

let chartChanges = [];

async function loadChart() {
  const generation = state.generation;
  const component = $('chart-component').value;
  const note = $('chart-note');
  chartChanges = [];
  drawChart(chartChanges);
  note.textContent = 'Loading …';
  try {
    const { changes, complete } = await balanceChanges(component);
    if (generation !== state.generation || component !== $('chart-component').value) return;
    chartChanges = changes;
    drawChart(changes);
    const name = $('chart-component').selectedOptions[0].textContent;
    if (changes.length === 0) {
      note.textContent = `${name}: no change in the indexed history.`;
    } else {
      note.textContent = `${name}: ${changes.length} ${complete ? '' : 'most recent '}change${changes.length === 1 ? '' : 's'}, ` +
        `${formatTime(changes[0].time)} to ${formatTime(changes[changes.length - 1].time)} UTC.`;
    }
  } catch (error) {
    if (generation !== state.generation || component !== $('chart-component').value) return;
    note.textContent = error instanceof ApiError ? `The balance history is not available here: ${error.message}.`
                                                 : describeError(error, 'the balance history');
  }
}

// ---------------------------------------------------------------------------
// 8. Showing an account
// ---------------------------------------------------------------------------

function hideSections() {
  for (const id of ['balances', 'chart', 'totals', 'history', 'indexer']) $(id).hidden = true;
}

async function showAccount(account) {
  state.generation += 1;
  const generation = state.generation;
  state.account = account;
  state.cursors = [null];
  state.pageIndex = 0;
  hideSections();
  showMessage(`Loading @${account} …`, 'info');
  history.replaceState(null, '', `#${encodeURIComponent(account)}`);
  try {
    // The chain time the index has reached, for the totals' windows.
    const status = await callApi('get_status', {});
    state.indexedTime = status.indexed_time;
    const page = await loadPage();
    if (generation !== state.generation) return;
    // The index knows an account by its events: none at all (no filter, the
    // newest page) means it has never seen this name.
    if (page.items.length === 0 && state.opTypes.length === 0) {
      showMessage(`Unknown account @${account}: this index holds no wallet history for it. Check the spelling.`, 'error');
      return;
    }
    $('history').hidden = false;
    $('totals').hidden = false;
    $('balances').hidden = false;
    await Promise.all([loadTotals(), loadBalances()]);
  } catch (error) {
    if (generation !== state.generation) return;
    if (error instanceof ApiError && error.code === INVALID_PARAMS && error.message === 'invalid account') {
      showMessage(`“${account}” is not a valid Hive account name: 3 to 16 characters, lower-case letters, ` +
                  'digits, hyphens and dots, each part starting with a letter.', 'error');
    } else {
      showMessage(describeError(error, `@${account}`), 'error');
    }
  }
}

async function start() {
  $('account-form').addEventListener('submit', (event) => {
    event.preventDefault();
    // Leading "@" as people write names; the API itself judges the name.
    const account = $('account').value.trim().replace(/^@/, '');
    if (account !== '') track(showAccount(account));
  });
  $('older').addEventListener('click', showOlder);
  $('newer').addEventListener('click', showNewer);
  $('page-size').addEventListener('change', () => {
    state.pageSize = Number($('page-size').value);
    reloadFromFirstPage();
  });
  $('window').addEventListener('change', () => {
    $('custom-window').hidden = $('window').value !== 'custom';
    track(loadTotals());
  });
  $('window-from').addEventListener('change', () => track(loadTotals()));
  $('window-to').addEventListener('change', () => track(loadTotals()));
  $('types-default').addEventListener('change', filterChanged);
  $('types-opt-in').addEventListener('change', filterChanged);
  $('clear-filters').addEventListener('click', () => {
    document.querySelectorAll('input[name=op_type]:checked').forEach((box) => { box.checked = false; });
    filterChanged();
  });
  state.pageSize = Number($('page-size').value);
  renderChartChoices();
  $('chart-component').addEventListener('change', () => track(loadChart()));
  window.addEventListener('resize', () => drawChart(chartChanges));

  // The filter's op types, from the API itself.
  try {
    const methods = await callApi('get_methods', {});
    renderFilters(methods.op_types);
  } catch (error) {
    $('filters').hidden = true;  // the history still works with the default types
  }

  // A link to an account: /wallet/#camilla
  const linked = decodeURIComponent(location.hash.slice(1));
  if (linked !== '') {
    $('account').value = linked;
    track(showAccount(linked));
  }
}

track(start());
