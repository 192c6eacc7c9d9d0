// The operator's status page. Every few seconds it reads, on this origin,
//  - wallet_history.get_status (POST /): the index, what is still loading,
//    the decoder's coverage and the API's database connections;
//  - /metrics (the module's Prometheus text): the router's node pools with
//    each chain node's head, the cache, requests and errors by method class,
//    the API's PostgreSQL errors, and each database of the API: primary or
//    standby, reachable, replay delay;
// and shows them. Rates are the counters' differences between two reads.
// The page keeps no state beyond the previous read: a stall is an indexed
// block that did not move for `stall` seconds while the chain did.
// Query parameters: refresh=SECONDS (default 3), stall=SECONDS (default 60).
'use strict';

const params = new URLSearchParams(location.search);
const setting = (name, fallback, min, max) => {
  const value = Number(params.get(name));
  return Number.isFinite(value) && value >= min && value <= max ? value : fallback;
};
const REFRESH_SECONDS = setting('refresh', 3, 1, 3600);
const STALL_SECONDS = setting('stall', 60, 1, 86400);
const BLOCK_SECONDS = 3;  // Hive's block interval
const STANDBY_BEHIND_SECONDS = 60;  // conf/monitoring/alerts.yml, WalletApiStandbyBehind
// The API's own failures; a client's mistakes are not the server's errors.
const SERVER_FAILURES = new Set(['busy', 'timeout', 'database_error', 'internal_error']);

const $ = (id) => document.getElementById(id);
const field = (name) => document.querySelector(`[data-field="${name}"]`);
function show(name, text, state) {
  const element = field(name);
  element.textContent = text;
  if (state !== undefined) {
    element.dataset.state = state;
    element.className = { stalled: 'bad', out: 'bad', progressing: 'good', 'caught-up': 'good' }[state] || '';
  }
}

// ---------------------------------------------------------------------------
// Reading
// ---------------------------------------------------------------------------

async function getStatus() {
  const response = await fetch('/', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'wallet_history.get_status', params: {} }),
  });
  const answer = await response.json().catch(() => {
    throw new Error(`get_status: the server answered HTTP ${response.status} without a JSON-RPC answer`);
  });
  if (answer.error) throw new Error(`get_status: ${answer.error.message} (code ${answer.error.code})`);
  return answer.result;
}

// Prometheus text: [{name, labels, value}], comments skipped.
function parseMetrics(text) {
  const samples = [];
  for (const line of text.split('\n')) {
    const match = /^([A-Za-z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match) continue;
    const labels = {};
    for (const label of (match[2] || '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) {
      labels[label[1]] = label[2].replace(/\\(.)/g, (_, c) => (c === 'n' ? '\n' : c));
    }
    samples.push({ name: match[1], labels, value: Number(match[3]) });
  }
  return samples;
}

async function getMetrics() {
  const response = await fetch('/metrics');
  if (!response.ok) throw new Error(`/metrics answered HTTP ${response.status}`);
  return parseMetrics(await response.text());
}

const named = (samples, name) => samples.filter((s) => s.name === name);
const sum = (samples) => samples.reduce((total, s) => total + s.value, 0);
const key = (labels) => JSON.stringify(labels);

// ---------------------------------------------------------------------------
// Showing
// ---------------------------------------------------------------------------

const watch = { indexed: null, changedAt: 0, headAtChange: null, previous: null, paused: false, timer: null };

function chainBlocks(samples) {
  const best = (name) => {
    const values = named(samples, name).map((s) => s.value);
    return values.length ? Math.max(...values) : null;
  };
  return { head: best('jsonrpc_router_url_head_block'), irreversible: best('jsonrpc_router_url_irreversible_block') };
}

// The lag behind the head shown above, so that the two agree: get_status's
// lag_blocks counts from the head the indexer last saw, which stands still
// when the indexer stops while the router's polls go on.
function showLag(status, head, headFromRouter) {
  const indexerView = status.lag_blocks !== undefined
    ? `the indexer last saw head ${status.head_block}, get_status's lag: ${status.lag_blocks} blocks, ${status.lag_seconds} s`
    : 'the indexer has not seen the head lately';
  if (!headFromRouter) {
    // The head shown is the indexer's: get_status's lag is behind it (on a
    // standby, plus the standby's replay delay).
    show('lag', status.lag_blocks !== undefined ? `${status.lag_blocks} blocks, ${status.lag_seconds} s` : `${status.lag_seconds} s`);
    show('lag_indexer', status.lag_blocks !== undefined ? '' : '(the chain head is not known: the indexer has not seen it lately)');
    return;
  }
  const blocks = Math.max(0, head - status.indexed_block);
  show('lag', `${blocks} blocks, about ${blocks * BLOCK_SECONDS} s`);
  // The indexer's own view, when it saw another head than the one shown.
  show('lag_indexer', status.head_block !== head ? `(${indexerView})` : '');
}

function showChain(status, samples, now) {
  const chain = chainBlocks(samples || []);
  // The router's poll of the node is live; get_status's head is the indexer's last observation.
  const head = chain.head !== null ? chain.head : status && status.head_block !== undefined ? status.head_block : null;
  show('head_block', head === null ? '—' : String(head));
  show('irreversible_block', chain.irreversible === null ? '—' : String(chain.irreversible));
  if (!status) return;
  show('indexed_block', String(status.indexed_block));
  show('indexed_time', status.indexed_time.replace('T', ' ').replace('Z', ''));
  showLag(status, head, chain.head !== null);

  if (watch.indexed !== status.indexed_block) {
    watch.indexed = status.indexed_block;
    watch.changedAt = now;
    watch.headAtChange = head;
  }
  const still = Math.round((now - watch.changedAt) / 1000);
  const advanced = head !== null && watch.headAtChange !== null ? head - watch.headAtChange : 0;
  if (still >= STALL_SECONDS && advanced > 0) {
    show('indexer_state', `stalled: no block indexed for ${still} s while the chain advanced ${advanced} blocks;` +
      ' check that the indexer runs (the package: journalctl -u wallet-indexer) and that its node answers', 'stalled');
  } else if (status.lag_blocks !== undefined && advanced === 0 && still >= REFRESH_SECONDS) {
    show('indexer_state', 'caught up: waiting for the next block', 'caught-up');
  } else {
    show('indexer_state', `progressing (last new block seen ${still} s ago)`, 'progressing');
  }

  const loading = status.loading;
  if (loading) {
    // The unfinished shards' span (from the start of the shard holding the
    // first missing block) and the share of it stored. An API older than
    // shards_from: the span starts at the first missing block.
    const start = loading.shards_from !== undefined ? loading.shards_from : loading.from;
    const span = loading.to - start + 1;
    const stored = span - loading.blocks;
    const percent = Math.floor((100 * stored) / span);  // 100 only when done
    show('loading', `Backfill shards over blocks ${start} to ${loading.to}: ${stored} of ${span} blocks stored ` +
      `(${percent} %), ${loading.blocks} still loading from block ${loading.from}.`);
    $('loading-bar').style.width = `${percent}%`;
  } else {
    show('loading', 'Nothing: every block of the configured range is stored.');
    $('loading-bar').style.width = '100%';
  }
  const decoder = status.decoder;
  show('decoder', decoder.up_to_date
    ? `Version ${decoder.current_version}: every stored block was decoded by it.`
    : `Version ${decoder.current_version}: blocks ${decoder.outdated.from} to ${decoder.outdated.to} were decoded by ` +
      'an older version; run wallet-backfill over them.');
  const connections = status.db_connections;
  show('db_connections', `at most ${connections.max} (all workers), ${connections.per_worker_max} per worker`);
}

function cell(row, label, text, className) {
  const td = row.insertCell();
  td.dataset.label = label;
  td.textContent = text;
  if (className) td.className = className;
}

function showNodes(samples) {
  const body = $('nodes-table').tBodies[0];
  body.replaceChildren();
  const byUrl = (name) => new Map(named(samples, name).map((s) => [key(s.labels), s.value]));
  const heads = byUrl('jsonrpc_router_url_head_block');
  const libs = byUrl('jsonrpc_router_url_irreversible_block');
  const nodes = named(samples, 'jsonrpc_router_url_in');
  const bestHead = {};
  for (const node of nodes) {
    const head = heads.get(key(node.labels));
    if (node.value === 1 && head !== undefined) bestHead[node.labels.target] = Math.max(bestHead[node.labels.target] || 0, head);
  }
  for (const node of nodes) {
    const { target, url } = node.labels;
    const head = heads.get(key(node.labels));
    const lib = libs.get(key(node.labels));
    const errors = sum(named(samples, 'jsonrpc_router_upstream_errors_total').filter((s) => s.labels.target === target && s.labels.url === url));
    const row = body.insertRow();
    cell(row, 'Target', target);
    cell(row, 'Node', url);
    cell(row, 'State', node.value === 1 ? 'in' : 'out', node.value === 1 ? 'good' : 'bad');
    cell(row, 'Head', head === undefined ? '—' : String(head));
    cell(row, 'Irreversible', lib === undefined ? '—' : String(lib));
    cell(row, 'Lag', head === undefined || bestHead[target] === undefined ? '—' : `${Math.max(0, bestHead[target] - head)} blocks`);
    cell(row, 'Errors', String(errors));
  }
  $('nodes-empty').hidden = nodes.length > 0;
}

// Requests and errors by method class: the API's methods, the router's
// routes (calls) and its targets (upstream requests and their failures).
function methodClasses(samples) {
  const classes = new Map();
  const add = (name, requests, errors) => {
    const entry = classes.get(name) || { requests: 0, errors: errors === null ? null : 0 };
    entry.requests += requests;
    if (errors !== null) entry.errors += errors;
    classes.set(name, entry);
  };
  for (const s of named(samples, 'wallet_history_requests_total')) {
    add(`API ${s.labels.method}`, s.value, SERVER_FAILURES.has(s.labels.outcome) ? s.value : 0);
  }
  for (const s of named(samples, 'jsonrpc_router_calls_total')) add(`route ${s.labels.route}`, s.value, null);
  for (const s of named(samples, 'jsonrpc_router_upstream_duration_seconds_count')) add(`upstream ${s.labels.target}`, s.value, 0);
  for (const s of named(samples, 'jsonrpc_router_upstream_errors_total')) add(`upstream ${s.labels.target}`, 0, s.value);
  return [...classes].filter(([, c]) => c.requests > 0);
}

function showTraffic(samples, now) {
  const cache = { hit: 0, miss: 0, coalesced: 0 };
  for (const s of named(samples, 'jsonrpc_router_cache_total')) cache[s.labels.result] += s.value;
  const cacheable = cache.hit + cache.miss + cache.coalesced;
  show('cache_hit_ratio', cacheable ? `${((100 * cache.hit) / cacheable).toFixed(1)} %` : '— (no cacheable call yet)');
  show('cache_counts', `(hit ${cache.hit}, miss ${cache.miss}, coalesced ${cache.coalesced})`);

  const classes = methodClasses(samples);
  const previous = watch.previous;
  const seconds = previous ? (now - previous.at) / 1000 : 0;
  const rate = (value, before) => (previous && before !== undefined && seconds > 0 ? `${((value - before) / seconds).toFixed(1)}` : '—');
  const body = $('classes-table').tBodies[0];
  body.replaceChildren();
  for (const [name, c] of classes) {
    const before = previous ? previous.classes.get(name) : undefined;
    const row = body.insertRow();
    cell(row, 'Method class', name);
    cell(row, 'Requests', String(c.requests));
    cell(row, 'Errors', c.errors === null ? '—' : String(c.errors), c.errors ? 'bad' : '');
    cell(row, 'Requests/s', rate(c.requests, before && before.requests));
    cell(row, 'Errors/s', c.errors === null ? '—' : rate(c.errors, before && before.errors));
  }
  watch.previous = { at: now, classes: new Map(classes) };

  const pgErrors = named(samples, 'wallet_history_postgresql_errors_total');
  show('db_errors', `${sum(pgErrors)} (${pgErrors.map((s) => `${s.labels.error} ${s.value}`).join(', ')})`);
  const reruns = (reason) => sum(named(samples, 'wallet_history_statement_reruns_total').filter((s) => s.labels.reason === reason));
  show('db_behind', String(reruns('behind_cursor')));
  show('db_retried', String(reruns('retryable_error')));
}

// The API's databases as the worker that answered /metrics last probed them:
// role and replay delay only while the database answers.
function showDatabases(samples) {
  const body = $('databases-table').tBodies[0];
  body.replaceChildren();
  const byName = (name) => new Map(named(samples, name).map((s) => [s.labels.database, s.value]));
  const standby = byName('wallet_history_database_standby');
  const delay = byName('wallet_history_database_replay_delay_seconds');
  const databases = named(samples, 'wallet_history_database_up');
  for (const db of databases) {
    const name = db.labels.database;
    const row = body.insertRow();
    cell(row, 'Database', name);
    const isStandby = standby.get(name) === 1;
    cell(row, 'Role', standby.has(name) ? (isStandby ? 'standby' : 'primary') : '—');
    cell(row, 'Reachable', db.value === 1 ? 'yes' : 'no', db.value === 1 ? 'good' : 'bad');
    // Red from the delay the alert WalletApiStandbyBehind fires at.
    cell(row, 'Replay delay', isStandby && delay.has(name) ? `${delay.get(name).toFixed(1)} s` : '—',
      isStandby && delay.get(name) > STANDBY_BEHIND_SECONDS ? 'bad' : '');
  }
  $('databases-empty').hidden = databases.length > 0;
}

async function refresh() {
  document.body.dataset.busy = 'true';
  const problems = [];
  // get_status first: the metrics read after it count that call too.
  const status = await getStatus().catch((error) => { problems.push(error.message); return null; });
  const samples = await getMetrics().catch((error) => { problems.push(error.message); return null; });
  const now = Date.now();
  showChain(status, samples, now);
  if (samples) {
    showNodes(samples);
    showTraffic(samples, now);
    showDatabases(samples);
  }
  $('problem').hidden = problems.length === 0;
  $('problem').textContent = problems.length ? `Not everything could be read: ${problems.join('; ')}.` : '';
  $('updated').textContent = `Updated ${new Date(now).toISOString().slice(11, 19)} UTC` +
    (watch.paused ? ', paused.' : `, every ${REFRESH_SECONDS} s.`);
  document.body.dataset.updates = String(Number(document.body.dataset.updates) + 1);
  document.body.dataset.busy = 'false';
}

async function loop() {
  try {
    await refresh();
  } finally {
    if (!watch.paused) watch.timer = setTimeout(loop, REFRESH_SECONDS * 1000);
  }
}

$('pause').addEventListener('click', () => {
  watch.paused = !watch.paused;
  document.body.dataset.paused = String(watch.paused);
  $('pause').textContent = watch.paused ? 'Resume' : 'Pause';
  clearTimeout(watch.timer);
  if (!watch.paused) loop();
  else $('updated').textContent = $('updated').textContent.replace(/, every .*$/, ', paused.');
});

loop();
