#!/usr/bin/env bash
# get_balances at scale (run as `t/bench/run balances`; issue 28).
#
# The synthetic chain with its ledger (the simulator's --ledger: mainnet op
# shares, payable operations, find_accounts at the head) is loaded from
# block 1 by wallet-backfill (parallel shards, row by row: the path that runs
# the balance pass, at the shipped CHAIN_BALANCE_SNAPSHOT_BLOCKS unless
# BENCH_SNAPSHOT_BLOCKS says otherwise) after the chain's genesis balances
# (change runs without events at block 0, as the balances tests store them); wallet-indexer
# then tails it to the head. Then, in the same run:
#   (a) latency: one keep-alive client through nginx (the API's shipped
#       settings), BENCH_REQUESTS sequential requests per scenario:
#       get_balances at the head and at uniformly random blocks, of the
#       account with the most events (busy) and of the median one (normal),
#       get_balance_history pages of one component (hive_balance, the
#       wallet page's limit of 25) of the same two accounts: the first page
#       and a deep one (the cursor reached by following next_cursor to the
#       middle of the account's events), and get_wallet_history's first
#       page of the same two accounts (the baseline): requests/s and p99 of
#       each;
#   (b) shared buffers per request (hit + read of EXPLAIN (ANALYZE, BUFFERS)
#       of the API's prepared statements, in one warm session as the API's
#       role): get_balances of the same scenarios (BENCH_SAMPLE each) and
#       the balance-history pages (the first, and the page below the middle
#       of the account's events) and get_wallet_history's first page: mean
#       and largest; beside them, the baseline in the same run, the same
#       pages by the previous release's function (migration 0024's
#       wallet_balance_history_run_rows: the page's events from wallet_events);
#   (c) the balance tables' bytes (change runs closed and open, carried,
#       undecodable, the pass's checkpoint, with their indexes and TOAST) per stored event,
#       and over the events' own bytes (wallet_events with its indexes);
#   (d) reconciliation: every component of every stored account's
#       get_balances at the head against the simulator's
#       database_api.find_accounts -> differences.
# Ends with `RESULT balances balances_p99_ms=<largest p99 of the get_balances
# scenarios> balances_buffers=<largest mean buffers of them>
# balance_page_buffers=<largest mean buffers of the balance-history pages>
# balance_page_buffers_previous=<the same by the previous release's function>
# balance_page_p99_ms=<largest p99 of them> added_bytes_per_event=... differences=...
# history_p99_ms=<largest p99 of the history pages>` and the figures of
# each scenario.
#
# Environment: WALLET_BUILD_DIR (set by t/bench/run), BENCH_BLOCKS (default
# 20000), BENCH_ACCOUNTS (the chain's accounts, default 20000),
# BENCH_SNAPSHOT_BLOCKS (default: the shipped period, 28,800: longer than the
# default chain, so no period is passed and every read replays the account
# from its genesis state, as a read above the pass's checkpoint does on a
# live store; BENCH_SNAPSHOT_BLOCKS=2000 measures reads below it), BENCH_REQUESTS (100),
# BENCH_SAMPLE (10), BENCH_WORKERS (4, backfill), BENCH_HOLD_SECONDS (keeps
# the store up after the RESULT line).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${WALLET_BUILD_DIR:-$root/build}
blocks=${BENCH_BLOCKS:-20000}
accounts=${BENCH_ACCOUNTS:-20000}
requests=${BENCH_REQUESTS:-100}
sample=${BENCH_SAMPLE:-10}
workers=${BENCH_WORKERS:-4}
seed=28
backfill=$build/backfill/wallet-backfill
indexer=$build/indexer/wallet-indexer
sim=$build/t/sim/hive-node-sim
setup=$build/common/wallet-db-setup
tool=$build/t/bench/api_bench_tool
genesis=$build/t/bench/balances_bench_tool
module=$build/ngx_module/ngx_http_wallet_module.so
source "$here/lib.bash"
for f in "$backfill" "$indexer" "$sim" "$setup" "$tool" "$genesis" "$module" "$bench_pg_bin/postgres"; do
  [ -e "$f" ] || { echo "missing $f" >&2; exit 1; }
done

work=$(mktemp -d /tmp/wallet-bench-balances.XXXXXX)
sim_pid=""
nginx_pid=""
cleanup() {
  [ -n "$nginx_pid" ] && kill -QUIT "$nginx_pid" 2>/dev/null && wait "$nginx_pid" 2>/dev/null
  [ -n "$sim_pid" ] && kill "$sim_pid" 2>/dev/null && wait "$sim_pid" 2>/dev/null
  bench_pg_stop "$work"
  rm -rf "$work"
}
trap cleanup EXIT

log() { echo "[balances bench] $*" >&2; }
calc() { python3 -c "print($1)"; }

# ---- PostgreSQL, the chain, the load ----------------------------------------------------
superpass=bench-superuser-$RANDOM$RANDOM
bench_pg_start "$work" "$superpass" -c max_connections=100 -c shared_buffers=1GB -c max_wal_size=8GB \
  -c checkpoint_timeout=30min
export DB_USER=postgres DB_PASSWORD=$superpass DB_BIND_HOST=127.0.0.1 DB_BIND_PORT=$pg_port DB_NAME=wallet
export WALLET_WRITER_PASSWORD=bench-writer-password-1 WALLET_API_READER_PASSWORD=bench-reader-password-1
"$setup" >&2
db="postgresql://postgres:$superpass@127.0.0.1:$pg_port/wallet"
reader="postgresql://wallet_api_reader:$WALLET_API_READER_PASSWORD@127.0.0.1:$pg_port/wallet"
q() { psql -qAt -v ON_ERROR_STOP=1 "$db" "$@"; }

export CHAIN_HARDFORKS=genesis
[ -n "${BENCH_SNAPSHOT_BLOCKS:-}" ] && export CHAIN_BALANCE_SNAPSHOT_BLOCKS=$BENCH_SNAPSHOT_BLOCKS
"$genesis" genesis "$seed" "$accounts" | q >/dev/null
port=$(free_port)
"$sim" --synthetic --ledger --seed "$seed" --accounts "$accounts" --length $((blocks + 1)) --block-interval-ms 0 \
  --port "$port" >"$work/sim.log" 2>&1 &
sim_pid=$!
for _ in $(seq 300); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done
log "loading $blocks blocks of $accounts accounts (wallet-backfill, $workers workers; snapshot period ${CHAIN_BALANCE_SNAPSHOT_BLOCKS:-shipped})"
started=$(date +%s)
BACKFILL_RPC_URLS=http://127.0.0.1:$port/ BACKFILL_START_BLOCK=1 BACKFILL_END_BLOCK=$blocks BACKFILL_WORKERS=$workers \
  BACKFILL_BATCH_SIZE=100 BACKFILL_SHARD_SIZE=2500 DB_PASSWORD='' "$backfill" 2>"$work/backfill.log" ||
  { tail -50 "$work/backfill.log" >&2; exit 1; }
# Its summary lines (their times give the balance pass's, the last).
grep "summary:" "$work/backfill.log" | while read -r line; do log "wallet-backfill: $line"; done
# The indexer to the head: a checkpoint, and the pass over what follows.
CHAIN_RPC_URL=http://127.0.0.1:$port/ INDEXER_START_BLOCK=$((blocks + 1)) INDEXER_TARGET_IRREVERSIBLE=false \
  INDEXER_TRAIL_BLOCKS=0 INDEXER_POLL_INTERVAL_MS=100 INDEXER_HEALTH_ADDR= DB_PASSWORD='' "$indexer" >"$work/indexer.log" 2>&1 &
indexer_pid=$!
for _ in $(seq 600); do
  [ "$(q -c "SELECT coalesce(indexed_block, 0) FROM wallet_store_state")" -ge $((blocks + 1)) ] && break
  kill -0 "$indexer_pid" 2>/dev/null || { tail -50 "$work/indexer.log" >&2; exit 1; }
  sleep 0.1
done
kill -TERM "$indexer_pid"; wait "$indexer_pid" 2>/dev/null || true
head=$(q -c "SELECT indexed_block FROM wallet_store_state")
[ "$head" -ge $((blocks + 1)) ] || { echo "the indexer did not reach the head:" >&2; tail -50 "$work/indexer.log" >&2; exit 1; }
q -c "VACUUM ANALYZE" >/dev/null
events=$(q -c "SELECT count(*) FROM wallet_events")
log "loaded $events events in $(( $(date +%s) - started )) s; indexed block $head, balance pass through $(q -c "SELECT through_block FROM wallet_balance_snapshot_state"), $(q -c "SELECT count(*) FROM wallet_balance_runs") closed change runs, $(q -c "SELECT count(*) FROM wallet_balance_open_runs") open"

read -r busy busy_events < <(q -F ' ' -c "SELECT a.name, e.n FROM (SELECT account_id, count(*) AS n FROM wallet_events GROUP BY 1 ORDER BY 2 DESC LIMIT 1) e JOIN wallet_accounts a ON a.id = e.account_id")
read -r normal normal_events < <(q -F ' ' -c "SELECT a.name, e.n FROM (SELECT account_id, count(*) AS n FROM wallet_events GROUP BY 1 ORDER BY 2 OFFSET (SELECT count(DISTINCT account_id) / 2 FROM wallet_events) LIMIT 1) e JOIN wallet_accounts a ON a.id = e.account_id")
busy_id=$(q -c "SELECT id FROM wallet_accounts WHERE name = '$busy'")
normal_id=$(q -c "SELECT id FROM wallet_accounts WHERE name = '$normal'")
log "busy account $busy ($busy_events events), normal account $normal ($normal_events events)"

# ---- (a) latency through nginx ------------------------------------------------------------
# As api.sh: one client asking as fast as it can measures the API, not the
# per-client limits (which would refuse most of it).
export WALLET_API_RATE_RPS=0 WALLET_API_MAX_INFLIGHT=0
export WALLET_API_CURSOR_SECRET=bench-cursor-secret-0123456789
api_port=$(free_port)
bench_api_nginx "$work/nginx" "$api_port" "$module" "$root"
nginx_pid=$bench_nginx_pid
python3 - "$api_port" "$requests" "$head" "$busy" "$normal" "$busy_events" "$normal_events" >"$work/latency" <<'PY'
import http.client, json, random, sys, time
port, count, head, busy, normal = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
events = {busy: int(sys.argv[6]), normal: int(sys.argv[7])}
random.seed(28)
conn = http.client.HTTPConnection("127.0.0.1", port)
def call(method, params):
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "wallet_history." + method, "params": params})
    conn.request("POST", "/", body, {"Content-Type": "application/json"})
    answer = json.loads(conn.getresponse().read())
    if "result" not in answer:
        sys.exit("%s %s: %s" % (method, params, answer))
    return answer["result"]
# A balance-history page as the wallet page asks (its 25 rows), of one component.
page_limit, scan = 25, 100  # scan: api_sql.hpp's balance_history_scan(25)
def page(account, cursor=None):
    params = {"account": account, "component": "hive_balance", "limit": page_limit}
    if cursor:
        params["cursor"] = cursor
    return call("get_balance_history", params)
def deep_cursor(account):
    # next_cursor followed to the middle of the account's events (each page
    # looks at `scan` of them); the last cursor there is (a short history: none).
    cursor = None
    for _ in range(events[account] // 2 // scan):
        following = page(account, cursor)["next_cursor"]
        if following is None:
            break
        cursor = following
    return cursor
deep = {account: deep_cursor(account) for account in (busy, normal)}
print("deep_pages", int(deep[busy] is not None), int(deep[normal] is not None))
scenarios = [
    ("balances_head_busy", lambda: call("get_balances", {"account": busy})),
    ("balances_random_busy", lambda: call("get_balances", {"account": busy, "block": random.randint(1, head)})),
    ("balances_head_normal", lambda: call("get_balances", {"account": normal})),
    ("balances_random_normal", lambda: call("get_balances", {"account": normal, "block": random.randint(1, head)})),
    ("page_first_busy", lambda: page(busy)),
    ("page_deep_busy", lambda: page(busy, deep[busy])),
    ("page_first_normal", lambda: page(normal)),
    ("page_deep_normal", lambda: page(normal, deep[normal])),
    ("history_busy", lambda: call("get_wallet_history", {"account": busy})),
    ("history_normal", lambda: call("get_wallet_history", {"account": normal})),
]
for name, run in scenarios:
    for _ in range(20):
        run()
    times = []
    started = time.perf_counter()
    for _ in range(count):
        t = time.perf_counter()
        run()
        times.append((time.perf_counter() - t) * 1000)
    elapsed = time.perf_counter() - started
    times.sort()
    print(name, round(count / elapsed), round(times[len(times) // 2], 2), round(times[int(len(times) * 0.99) - 1], 2))
PY
declare -A rps p50 p99
while read -r name r m p; do
  if [ "$name" = deep_pages ]; then
    log "deep balance-history pages (by cursor, the middle of the events): busy $r, normal $m (0: the first page is the last)"
    continue
  fi
  rps[$name]=$r; p50[$name]=$m; p99[$name]=$p
  log "$name: $r requests/s, p50 $m ms, p99 $p ms"
done <"$work/latency"

# ---- (b) buffers per request -----------------------------------------------------------
version=$(q -c "SELECT max(decoder_version) FROM indexer_ranges")
generation=$(q -c "SELECT generation FROM wallet_store_state")
{ "$tool" prepare wh_balances; "$tool" prepare wh_balance_history; "$tool" prepare wh_page; } >"$work/prepare.sql"
# The deep balance-history page's position: below the middle of the
# account's events, as the cursor the latency part followed (a history of
# fewer than two pages' events: the first page).
deep_position() {  # account id, its events -> "block key"
  if [ $(($2 / 2)) -lt 100 ]; then echo "2147483647 0"; return; fi
  q -F ' ' -c "SELECT block_num, block_seq * 100 + role FROM wallet_events WHERE account_id = $1
               ORDER BY block_num DESC, block_seq * 100 + role DESC OFFSET $(($2 / 2)) LIMIT 1"
}
busy_deep=$(deep_position "$busy_id" "$busy_events")
normal_deep=$(deep_position "$normal_id" "$normal_events")
# One warm session as the API's role: the first calls load the catalogs and
# plan (once per connection; the API's connections persist), left out.
python3 - "$sample" "$head" "$busy" "$busy_id" "$normal" "$normal_id" "$version" "$generation" "$busy_deep" "$normal_deep" \
  >"$work/buffers.sql" <<'PY'
import random, sys
sample, head, busy, busy_id, normal, normal_id, version, generation, busy_deep, normal_deep = sys.argv[1:]
deep = {busy: busy_deep.split(), normal: normal_deep.split()}
random.seed(28)
print("\\o /dev/null")
print("EXECUTE wh_balances('%s', NULL, %s, %s, %s);" % (normal, version, normal_id, generation))
print("EXECUTE wh_balance_history('%s', 2147483647, 0, NULL, NULL, 100, %s, %s, %s);" % (normal, version, normal_id, generation))
print("EXECUTE wh_page('%s', '-infinity', 'infinity', 2147483647, 0, '', 51, %s, %s);" % (normal, normal_id, generation))
print("\\o")
for _ in range(int(sample)):
    for kind in ("balances_head_busy", "balances_random_busy", "balances_head_normal", "balances_random_normal",
                 "page_first_busy", "page_deep_busy", "page_first_normal", "page_deep_normal",
                 "history_busy", "history_normal"):
        name, account_id = (busy, busy_id) if kind.endswith("busy") else (normal, normal_id)
        block = str(random.randint(1, int(head))) if "random" in kind else "NULL"
        print("\\echo %s" % kind)
        if kind.startswith("page"):
            # As the API asks for a page of 25 (it looks at 4 x 25 events).
            position = deep[name] if "deep" in kind else ["2147483647", "0"]
            print("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) EXECUTE wh_balance_history('%s', %s, %s, NULL, NULL, 100, %s, %s, %s);"
                  % (name, position[0], position[1], version, account_id, generation))
            # The baseline in the same run: the previous release's page function (migration 0024's, kept for
            # its module until nginx reloads), which reads the page's events from wallet_events.
            print("\\echo %s_previous" % kind)
            print("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) SELECT * FROM wallet_balance_history_run_rows('%s', %s, %s, NULL, NULL, 100, %s::smallint);"
                  % (name, position[0], position[1], version))
        elif kind.startswith("history"):
            # As a warm worker asks: with the account's id and the store's generation.
            print("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) EXECUTE wh_page('%s', '-infinity', 'infinity', 2147483647, 0, '', 51, %s, %s);"
                  % (name, account_id, generation))
        else:
            print("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) EXECUTE wh_balances('%s', %s, %s, %s, %s);"
                  % (name, block, version, account_id, generation))
PY
{ echo "\\i $work/prepare.sql"; cat "$work/buffers.sql"; } | psql -qAt -v ON_ERROR_STOP=1 "$reader" >"$work/plans"
python3 - "$work/plans" >"$work/buffers" <<'PY'
import json, sys
from collections import defaultdict
found = defaultdict(list)
kind, text = None, ""
def close():
    if kind and text.strip():
        plan = json.loads(text)[0]["Plan"]
        found[kind].append(plan["Shared Hit Blocks"] + plan["Shared Read Blocks"])
for line in open(sys.argv[1]):
    if line.startswith(("balances_", "page_", "history_")):
        close()
        kind, text = line.strip(), ""
    else:
        text += line
close()
for kind in sorted(found):
    values = found[kind]
    print("%s|%.1f|%d" % (kind, sum(values) / len(values), max(values)))
PY
declare -A buffers_mean buffers_max
while IFS='|' read -r kind mean most; do buffers_mean[$kind]=$mean; buffers_max[$kind]=$most
  log "buffers per request, $kind: mean $mean (largest $most)"
done <"$work/buffers"

# ---- (c) the balance tables' bytes per event -------------------------------------------------
read -r balance_bytes event_bytes < <(q -F ' ' -c "SELECT
    (SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c WHERE c.relname IN
      ('wallet_balance_runs', 'wallet_balance_open_runs', 'wallet_balance_carried', 'wallet_balance_undecodable',
       'wallet_balance_snapshot_state', 'wallet_block_time_segments')),
    pg_total_relation_size('wallet_events')")
added_bytes_per_event=$(calc "round($balance_bytes / $events, 2)")
event_bytes_per_event=$(calc "round($event_bytes / $events, 2)")
log "balance tables: $balance_bytes bytes, $added_bytes_per_event per event; wallet_events $event_bytes_per_event per event (ratio $(calc "round($balance_bytes / $event_bytes, 4)"))"

# ---- (d) reconciliation with the node ------------------------------------------------------
q -c "SELECT name FROM wallet_accounts ORDER BY name" >"$work/accounts"
differences=$(balances_reconcile "$api_port" "$port" "$work/accounts")
log "reconciliation: $differences differences over $(wc -l <"$work/accounts") accounts"

balances_p99=$(printf '%s\n' "${p99[balances_head_busy]}" "${p99[balances_random_busy]}" "${p99[balances_head_normal]}" "${p99[balances_random_normal]}" | largest)
history_p99=$(printf '%s\n' "${p99[history_busy]}" "${p99[history_normal]}" | largest)
balances_buffers=$(printf '%s\n' "${buffers_mean[balances_head_busy]}" "${buffers_mean[balances_random_busy]}" "${buffers_mean[balances_head_normal]}" "${buffers_mean[balances_random_normal]}" | largest)
history_buffers=$(printf '%s\n' "${buffers_mean[history_busy]}" "${buffers_mean[history_normal]}" | largest)
pages="page_first_busy page_deep_busy page_first_normal page_deep_normal"
page_p99=$(for name in $pages; do echo "${p99[$name]}"; done | largest)
page_buffers=$(for name in $pages; do echo "${buffers_mean[$name]}"; done | largest)
page_buffers_previous=$(for name in $pages; do echo "${buffers_mean[${name}_previous]}"; done | largest)
figures=""
for name in balances_head_busy balances_random_busy balances_head_normal balances_random_normal $pages history_busy history_normal; do
  figures+=" ${name}_rps=${rps[$name]} ${name}_p99_ms=${p99[$name]} ${name}_buffers=${buffers_mean[$name]} ${name}_buffers_max=${buffers_max[$name]}"
done
echo "RESULT balances balances_p99_ms=$balances_p99 balances_buffers=$balances_buffers balance_page_buffers=$page_buffers" \
  "balance_page_buffers_previous=$page_buffers_previous balance_page_p99_ms=$page_p99 added_bytes_per_event=$added_bytes_per_event differences=$differences history_p99_ms=$history_p99" \
  "history_buffers=$history_buffers balances_to_history_p99_ratio=$(ratio_of "$balances_p99" "$history_p99")" \
  "event_bytes_per_event=$event_bytes_per_event events=$events blocks=$blocks accounts=$accounts$figures"
if [ -n "${BENCH_HOLD_SECONDS:-}" ]; then log "holding: $db"; sleep "$BENCH_HOLD_SECONDS"; fi
