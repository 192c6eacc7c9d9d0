#!/usr/bin/env bash
# Issue 28's reconciliation proof with the real processes (run as
# `t/bench/run reconcile`; at a small size, the ctest reconcile_small).
#
# The simulator's synthetic chain with its ledger (mainnet op shares, payable
# operations, find_accounts at the head), the genesis balances stored first,
# is loaded by parallel wallet-backfill shards (each worker takes shards as
# they come: out of order) and then the live wallet-indexer to the head. Then
# every component of get_balances (through nginx, the shipped API conf) of
# every account is compared with the simulator's database_api.find_accounts
# at that head, after the load and again after each disruption:
#   fork     the simulator's last irreversible block held back, blocks added
#            and indexed (reversible ones), then a fork replacing the latest
#            of them: the indexer rewinds and follows the new branch;
#   kill     blocks added, the indexer killed (SIGKILL) inside a batch (its
#            events stored, the transaction open: held at its checkpoint by a
#            lock), restarted, to the head;
#   rerun    wallet-backfill over a range again: shards already done set back
#            to pending (their rows stored) and the indexer's blocks (new
#            shards over stored rows), beside the tailing indexer;
#   decoder  the store brought back to decoder version 1 as the backfill
#            tests do it (the rows of the types version 2 added and their
#            stored operations removed, every range marked 1): get_balances
#            must refuse (not answer a number) until wallet-backfill re-run
#            over the whole range adds the missing rows.
# Prints each stage's differences (zero expected) and times (the disruption
# with the catch-up, and the comparison), and ends with
# `RESULT reconcile blocks=... accounts=... stages=... differences=<total>
# <stage>_differences=... <stage>_s=... <stage>_compare_s=...`; exits 1 when
# any stage differs.
#
# Environment: WALLET_BUILD_DIR (set by t/bench/run), BENCH_BLOCKS (default
# 20000), BENCH_ACCOUNTS (the chain's accounts, default 20000),
# BENCH_SNAPSHOT_BLOCKS (the balance pass's period, default a tenth of the
# blocks: the pass goes through ten periods and reads start from its runs),
# BENCH_WORKERS (4, backfill), BENCH_ADVANCE (blocks added by the kill
# stage, default a period and a fortieth of the blocks: the pass goes on).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${WALLET_BUILD_DIR:-$root/build}
blocks=${BENCH_BLOCKS:-20000}
accounts=${BENCH_ACCOUNTS:-20000}
workers=${BENCH_WORKERS:-4}
period=${BENCH_SNAPSHOT_BLOCKS:-$(( blocks / 10 ))}
# The kill stage's catch-up crosses a period's end: the pass runs after the restart.
advance=${BENCH_ADVANCE:-$(( period + blocks / 40 ))}
shard=$(( blocks / 8 ))  # backfill shards: eight over the chain
seed=28
source "$here/lib.bash"
for f in "$build/backfill/wallet-backfill" "$build/indexer/wallet-indexer" "$build/t/sim/hive-node-sim" \
         "$build/common/wallet-db-setup" "$build/t/bench/balances_bench_tool" "$build/ngx_module/ngx_http_wallet_module.so" \
         "$bench_pg_bin/postgres"; do
  [ -e "$f" ] || { echo "missing $f" >&2; exit 1; }
done

work=$(mktemp -d /tmp/wallet-bench-reconcile.XXXXXX)
pids=()  # the simulator, nginx, each indexer run: stopped with PostgreSQL on exit (bench_cleanup)
trap bench_cleanup EXIT
log() { echo "[reconcile] $*" >&2; }

superpass=bench-superuser-$RANDOM$RANDOM
bench_pg_start "$work" "$superpass" -c max_connections=100 -c shared_buffers=512MB -c max_wal_size=8GB \
  -c checkpoint_timeout=30min
export DB_USER=postgres DB_PASSWORD=$superpass DB_BIND_HOST=127.0.0.1 DB_BIND_PORT=$pg_port DB_NAME=wallet
export WALLET_WRITER_PASSWORD=bench-writer-password-1 WALLET_API_READER_PASSWORD=bench-reader-password-1
"$build/common/wallet-db-setup" >"$work/setup.log" 2>&1 || { cat "$work/setup.log" >&2; exit 1; }
db="postgresql://postgres:$superpass@127.0.0.1:$pg_port/wallet"
q() { "$bench_pg_bin/psql" -qAt -v ON_ERROR_STOP=1 "$db" "$@"; }
export CHAIN_HARDFORKS=genesis CHAIN_BALANCE_SNAPSHOT_BLOCKS=$period
# Several batches in the kill stage's catch-up.
export INDEXER_MAX_BATCH_BLOCKS=25

# The API through nginx, the shipped conf; one client per worker asking as fast as it can.
export WALLET_API_RATE_RPS=0 WALLET_API_MAX_INFLIGHT=0 WALLET_API_CURSOR_SECRET=bench-cursor-secret-0123456789
api_port=$(free_port)
bench_api_nginx "$work/nginx" "$api_port" "$build/ngx_module/ngx_http_wallet_module.so" "$root" 2
pids+=("$bench_nginx_pid")

stages=() total=0
declare -A stage_s stage_differences stage_compare_s
# compare STAGE STARTED: every account against the node; records the stage.
compare() {
  local stage=$1 started=$2 compared differences head
  compared=$(date +%s.%N)
  head=$(node_state head)
  [ "$(q -c "SELECT indexed_block FROM wallet_store_state")" = "$head" ] || { echo "$stage: the store is not at the node's head $head" >&2; exit 1; }
  q -c "SELECT name FROM wallet_accounts ORDER BY name" >"$work/accounts"
  differences=$(balances_reconcile "$api_port" "$node_port" "$work/accounts" 2)
  stages+=("$stage")
  stage_s[$stage]=$(awk -v a="$started" -v b="$compared" 'BEGIN { printf "%.1f", b - a }')
  stage_compare_s[$stage]=$(awk -v a="$compared" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  stage_differences[$stage]=$differences
  total=$((total + differences))
  log "$stage: $differences differences over $(wc -l <"$work/accounts") accounts at block $head (balance pass through" \
      "$(q -c "SELECT through_block FROM wallet_balance_snapshot_state")); ${stage_s[$stage]} s, compared in ${stage_compare_s[$stage]} s"
}

# ---- load: backfill shards, then the indexer -------------------------------------------
started=$(date +%s.%N)
balances_chain_start "$seed" "$accounts" "$blocks"
pids+=("$node_pid")
log "loading $blocks blocks of $accounts accounts (wallet-backfill, $workers workers; pass period $CHAIN_BALANCE_SNAPSHOT_BLOCKS)"
balances_backfill 1 "$blocks" "$workers" "$shard"
balances_indexer_start $((blocks + 1))
pids+=("$indexer_pid")
balances_indexed $((blocks + 1))
log "$(q -c "SELECT count(*) FROM wallet_events") events; shards done in the order $(q -c "SELECT string_agg(start_block::text, ' ' ORDER BY finished_at) FROM backfill_shards")"
compare load "$started"

# ---- fork: a fork of reversible blocks the indexer stored --------------------------------
started=$(date +%s.%N)
node_control '{"lib_lag": 30}' >/dev/null
node_control "{\"advance\": 60}" >/dev/null
balances_indexed "$(node_state head)"
node_control '{"fork": 12}' >/dev/null
node_control '{"advance": 3}' >/dev/null
balances_indexed "$(node_state head)" "$(node_state head_block_id)"
grep "fork reconciled" "$work/indexer.log" | while read -r line; do log "fork: wallet-indexer: ${line#*] }"; done
grep -q "fork reconciled" "$work/indexer.log" || { echo "fork: the indexer reconciled no fork" >&2; tail -20 "$work/indexer.log" >&2; exit 1; }
# The last irreversible block one behind the head again, as in the other stages.
node_control '{"lib_lag": 1}' >/dev/null
compare fork "$started"

# ---- kill: SIGKILL inside a batch ---------------------------------------------------------
# The checkpoint table locked (SHARE: reads go on), blocks are added: the
# indexer's first batch stores its events and waits at its checkpoint, in its
# open transaction; the indexer is killed there.
started=$(date +%s.%N)
PGAPPNAME=reconcile-lock "$bench_pg_bin/psql" -qAt "$db" -c "LOCK TABLE indexer_checkpoint IN SHARE MODE; SELECT pg_sleep(600)" \
  >/dev/null 2>&1 &
locker=$!
deadline=$((SECONDS + 60))
until [ "$(q -c "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
                 WHERE a.application_name = 'reconcile-lock' AND l.granted AND l.mode = 'ShareLock'")" -gt 0 ]; do
  [ $SECONDS -lt $deadline ] || { echo "kill: the checkpoint table was not locked" >&2; exit 1; }
  sleep 0.05
done
node_control "{\"advance\": $advance}" >/dev/null
target=$(node_state head)
deadline=$((SECONDS + 120))
until [ "$(q -c "SELECT count(*) FROM pg_stat_activity WHERE usename = 'wallet_writer' AND wait_event_type = 'Lock'
                 AND query LIKE '%INSERT INTO indexer_checkpoint%'")" -gt 0 ]; do
  [ $SECONDS -lt $deadline ] || { echo "kill: the indexer's batch never waited at its checkpoint" >&2; exit 1; }
  sleep 0.05
done
killed_at=$(q -c "SELECT indexed_block FROM wallet_store_state")
events_before=$(q -c "SELECT count(*) FROM wallet_events")
kill -KILL "$indexer_pid"; wait "$indexer_pid" 2>/dev/null || true
q -c "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'reconcile-lock'" >/dev/null
wait "$locker" 2>/dev/null || true
[ "$killed_at" -lt "$target" ] || { echo "kill: the indexer was at the head already" >&2; exit 1; }
log "kill: indexer killed inside a batch (its events stored, waiting at its checkpoint) at indexed block $killed_at" \
    "of $target; events $events_before, after the kill $(q -c "SELECT count(*) FROM wallet_events"); restarted"
balances_indexer_start $((blocks + 1))
pids+=("$indexer_pid")
balances_indexed "$target"
compare kill "$started"

# ---- rerun: wallet-backfill over a range again ---------------------------------------------
started=$(date +%s.%N)
head=$(node_state head)
lib=$(node_state last_irreversible_block_num)
first=$((2 * shard + 1))
reset=$(q -c "UPDATE backfill_shards SET state = 'pending', next_block = start_block, owner = NULL, heartbeat_at = NULL
              WHERE start_block >= $first AND end_block <= $((4 * shard)) RETURNING start_block" | wc -l)
events_before=$(q -c "SELECT count(*) FROM wallet_events")
balances_backfill "$first" "$lib" "$workers" "$shard"
events_after=$(q -c "SELECT count(*) FROM wallet_events")
log "rerun: wallet-backfill over blocks $first..$lib ($reset shards set back to pending, the indexer's blocks" \
    "$((blocks + 1))..$lib in new shards): events $events_before -> $events_after"
[ "$events_before" = "$events_after" ] || { echo "rerun: the re-run changed the events" >&2; exit 1; }
compare rerun "$started"

# ---- decoder: a store of decoder version 1 brought up to date --------------------------------
started=$(date +%s.%N)
# The head is irreversible: the re-run covers every range the indexer recorded.
node_control '{"lib_lag": 0}' >/dev/null
head=$(node_state head)
q >/dev/null <<'SQL'
DELETE FROM wallet_events WHERE wide;
WITH kept AS (SELECT DISTINCT block_num, block_seq FROM wallet_events),
     stripped AS (SELECT b.block_num, json_object_agg(o.key, o.value ORDER BY o.key::integer) AS ops
                    FROM wallet_blocks b CROSS JOIN LATERAL json_each(b.ops) o
                    JOIN kept k ON k.block_num = b.block_num AND k.block_seq = o.key::integer GROUP BY b.block_num)
UPDATE wallet_blocks b SET ops = s.ops FROM stripped s WHERE s.block_num = b.block_num;
DELETE FROM wallet_blocks b WHERE NOT EXISTS (SELECT FROM wallet_events e WHERE e.block_num = b.block_num);
UPDATE backfill_shards SET decoder_version = 1;
UPDATE indexer_ranges SET decoder_version = 1;
SQL
# While outdated, a balance is refused, never a number: 50 accounts asked.
q -c "SELECT name FROM wallet_accounts ORDER BY name LIMIT 50" >"$work/outdated"
answered=$(python3 - "$api_port" "$work/outdated" <<'PY'
import http.client, json, sys
api = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]))
answered = 0
for name in open(sys.argv[2]).read().split():
    api.request("POST", "/", json.dumps({"jsonrpc": "2.0", "id": 1, "method": "wallet_history.get_balances",
                                        "params": {"account": name}}), {"Content-Type": "application/json"})
    answered += "result" in json.loads(api.getresponse().read())
print(answered)
PY
)
log "decoder: version 1 ($(q -c "SELECT count(*) FROM wallet_events") events left): $answered of 50 get_balances answered a number"
balances_backfill 1 "$head" "$workers" "$shard"
log "decoder: re-run 1..$head: $(q -c "SELECT count(*) FROM wallet_events") events"
compare decoder "$started"
stage_differences[decoder]=$(( stage_differences[decoder] + answered * 14 ))
total=$((total + answered * 14))

figures=""
for stage in "${stages[@]}"; do
  figures+=" ${stage}_differences=${stage_differences[$stage]} ${stage}_s=${stage_s[$stage]} ${stage}_compare_s=${stage_compare_s[$stage]}"
done
echo "RESULT reconcile blocks=$blocks accounts=$(wc -l <"$work/accounts") stages=${#stages[@]} differences=$total" \
  "events=$(q -c "SELECT count(*) FROM wallet_events") head=$(node_state head)$figures"
[ "$total" = 0 ]
