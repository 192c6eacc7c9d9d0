#!/usr/bin/env bash
# Benchmark of the wallet_history API on a hot standby (run as
# `t/bench/run replicas`; issue 20, docs/scaling-out.md).
#
# A private PostgreSQL primary gets a synthetic store (bench_load_events: by
# default 1,000,000 events over 20,000 accounts, one of them with 500,000),
# and a hot standby is made from it by pg_basebackup -R (streaming
# replication on loopback, same machine). A writer (pgbench on the primary,
# rate-limited, as the indexer's role: events through wallet_operation_events
# and the checkpoint, in one transaction) runs all along. wrk asks for the big
# account's first page, in alternating rounds, from nginx on the primary alone
# (the baseline) and from nginx on the list primary + standby; every half
# second the standby's replay lag is sampled (seconds behind the primary's last
# commit while WAL waits to be replayed, and bytes not yet replayed).
# Then the reorder's merge (issue 32): the store's blocks, counted as ordered,
# are merged as one range twice, first in one transaction (the merge before
# migration 0016: --merge-rows=0 --standby-wait-ms=0, the baseline), then in
# groups of BENCH_MERGE_ROWS events (default 100,000) waiting for the standby
# between them (the shipped behaviour), the standby's lag sampled every 0.2 s
# during each.
# Ends with `RESULT replicas replicas_ratio=<median of per-round ratios>
# primary_rps=<baseline> replicas_rps=... replay_lag_*`, the writer's rate and
# `merge_one_tx_*` / `merge_bounded_*` (seconds, lag in bytes and seconds).
# On two cores both databases share the same CPUs: the ratio says little about
# more machines; the figures show the path works under the writer's load.
#
# Environment: WALLET_BUILD_DIR (set by t/bench/run), BENCH_ROUNDS (default
# 10) of BENCH_SECONDS (default 2) each, BENCH_ACCOUNTS / BENCH_EVENTS /
# BENCH_BIG_EVENTS, BENCH_WRITER_TPS (default 100 transactions of 20 events).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${WALLET_BUILD_DIR:-$root/build}
seconds=${BENCH_SECONDS:-2}
rounds=${BENCH_ROUNDS:-10}
accounts=${BENCH_ACCOUNTS:-20000}
events=${BENCH_EVENTS:-1000000}
big_events=${BENCH_BIG_EVENTS:-500000}
writer_tps=${BENCH_WRITER_TPS:-100}
big=bigwhale
tool=$build/t/bench/api_bench_tool
module=$build/ngx_module/ngx_http_wallet_module.so
source "$here/lib.bash"
for f in "$tool" "$module" "$bench_pg_bin/postgres" "$bench_pg_bin/pg_basebackup"; do
  [ -e "$f" ] || { echo "missing $f" >&2; exit 1; }
done
command -v wrk >/dev/null || { echo "wrk is missing (scripts/install-deps)" >&2; exit 1; }

work=$(mktemp -d /tmp/wallet-bench-replicas.XXXXXX)
nginx_pids=()
writer_pid=""
sampler_pid=""
cleanup() {
  local pid
  for pid in $writer_pid $sampler_pid; do kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true; done
  for pid in "${nginx_pids[@]}"; do kill -QUIT "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true; done
  bench_pg_stop "$work/standby"
  bench_pg_stop "$work"
  rm -rf "$work"
}
trap cleanup EXIT

log() { echo "[replicas bench] $*" >&2; }

# ---- primary and data ----------------------------------------------------------------
superpass=bench-superuser-$RANDOM$RANDOM
pg_settings=(-c max_connections=200 -c shared_buffers=512MB -c work_mem=64MB -c maintenance_work_mem=512MB
  -c max_wal_size=8GB -c checkpoint_timeout=30min)
bench_pg_start "$work" "$superpass" "${pg_settings[@]}"
primary_port=$pg_port
export DB_USER=postgres DB_PASSWORD=$superpass DB_NAME=wallet DB_BIND_HOST=127.0.0.1 DB_BIND_PORT=$primary_port
export WALLET_WRITER_PASSWORD=bench-writer-password-1 WALLET_API_READER_PASSWORD=bench-reader-password-1
"$build/common/wallet-db-setup" >&2
writer="postgresql://wallet_writer:$WALLET_WRITER_PASSWORD@127.0.0.1:$primary_port/wallet"
superuser="postgresql://postgres:$superpass@127.0.0.1:$primary_port/postgres"
log "loading $((events + big_events)) events over $accounts accounts ($big: $big_events)"
bench_load_events "$writer" "$tool" "$accounts" "$events" "$big" "$big_events"

# ---- standby -----------------------------------------------------------------------------
# Made after the load (a fresh copy, as an operator adds one), as the
# unprivileged user that runs the primary. hot_standby_feedback keeps the API's
# statements from recovery-conflict cancels (docs/scaling-out.md).
mkdir -p "$work/standby/run"
[ "$(id -u)" = 0 ] && chmod a+x "$work/standby" && chown -R nobody "$work/standby"
log "pg_basebackup -R"
PGPASSWORD=$superpass as_pg "$bench_pg_bin/pg_basebackup" -h 127.0.0.1 -p "$primary_port" -U postgres \
  -D "$work/standby/pg/data" -R -X stream -c fast --no-sync >&2
pg_port=$(free_port)
bench_pg_launch "$work/standby" "${pg_settings[@]}" -c hot_standby_feedback=on
standby_port=$pg_port
standby="postgresql://postgres:$superpass@127.0.0.1:$standby_port/wallet"
[ "$(psql -tAq "$standby" -c 'SELECT pg_is_in_recovery()')" = t ] || { echo "the standby is not in recovery" >&2; exit 1; }

# ---- the writer ----------------------------------------------------------------------------
# As the indexer writes: a block's events through wallet_operation_events
# (the insert trigger keeps the reward aggregates), then the checkpoint.
cat > "$work/writer.sql" <<'SQL'
\set block 40000000 + :client_id * 100000000 + random(0, 99999999)
BEGIN;
INSERT INTO wallet_operation_events (block_num, trx_in_block, op_in_trx, virtual_op, account, role, block_seq,
  op_type, trx_id, "timestamp", amount, symbol, counterparty, assets, payload)
SELECT :block, i, 0, 0, 'writer' || (i % 50), 'sender', i, 'transfer', md5(:block::text || i) || '00000000', now(),
  1.000, 'HIVE', 'peer', '[]'::jsonb, '{}'::jsonb FROM generate_series(0, 19) AS i ON CONFLICT DO NOTHING;
UPDATE indexer_checkpoint SET block_time = now();
COMMIT;
SQL
pgbench -n -c 2 -j 1 -R "$writer_tps" -T 3600 -f "$work/writer.sql" "$writer" > "$work/writer.log" 2>&1 &
writer_pid=$!
writer_start=$(psql -tAq "$writer" -c "SELECT count(*) FROM wallet_operation_events WHERE account LIKE 'writer%'")
writer_started=$(date +%s.%N)

# lag_sampler FILE INTERVAL: the standby's replay lag, every INTERVAL seconds,
# as "seconds bytes": seconds since the last replayed commit while received
# WAL waits for replay (0 when all is replayed), and bytes behind the
# primary's current WAL position.
lag_sampler() {
  while true; do
    primary_lsn=$(psql -tAq "$superuser" -c "SELECT pg_current_wal_lsn()")
    psql -tAq -F ' ' "$standby" -c "SELECT CASE WHEN pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() THEN 0
        ELSE extract(epoch FROM now() - pg_last_xact_replay_timestamp()) END,
        greatest(0, pg_wal_lsn_diff('$primary_lsn', pg_last_wal_replay_lsn()))"
    sleep "$2"
  done > "$1" 2>/dev/null
}
lag_sampler "$work/lag.txt" 0.5 &
sampler_pid=$!

# ---- nginx: the primary alone, and primary + standby -----------------------------------------
export WALLET_API_RATE_RPS=0 WALLET_API_MAX_INFLIGHT=0 WALLET_API_DB_MAX_CONNS=$((2 * $(nproc)))
export WALLET_API_CURSOR_SECRET=bench-cursor-secret-0123456789
reader_auth="wallet_api_reader:$WALLET_API_READER_PASSWORD"
primary_api_port=$(free_port)
API_DATABASE_URL="postgresql://$reader_auth@127.0.0.1:$primary_port/wallet" \
  bench_api_nginx "$work/nginx-primary" "$primary_api_port" "$module" "$root"
nginx_pids+=("$bench_nginx_pid")
replicas_api_port=$(free_port)
API_DATABASE_URL="postgresql://$reader_auth@127.0.0.1:$primary_port,127.0.0.1:$standby_port/wallet" \
  bench_api_nginx "$work/nginx-replicas" "$replicas_api_port" "$module" "$root"
nginx_pids+=("$bench_nginx_pid")

body="{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"wallet_history.get_wallet_history\",\"params\":{\"account\":\"$big\"}}"
for port in "$primary_api_port" "$replicas_api_port"; do
  check=$(curl -s -H 'Content-Type: application/json' --data "$body" "http://127.0.0.1:$port/")
  case "$check" in *'"result"'*) ;; *) echo "the API on port $port failed: ${check:0:300}" >&2; exit 1;; esac
done
printf 'wrk.method = "POST"\nwrk.headers["Content-Type"] = "application/json"\nwrk.body = [[%s]]\n' "$body" > "$work/page.lua"

wrk_round() {  # port -> "req/s p99_ms"
  local out
  out=$(wrk -t1 -c32 -d"${seconds}s" --latency -s "$work/page.lua" "http://127.0.0.1:$1/")
  if grep -qE 'Non-2xx|Socket errors' <<<"$out"; then echo "errors: $(grep -E 'Non-2xx|Socket errors' <<<"$out")" >&2; fi
  echo "$(awk '/^Requests\/sec:/ { print $2 }' <<<"$out") $(to_ms "$(awk '$1 == "99%" { print $2 }' <<<"$out")")"
}
standby_commits() { psql -tAq "$standby" -c "SELECT xact_commit FROM pg_stat_database WHERE datname = 'wallet'"; }

# Warm-up: both pools stand, both databases' caches hold the page.
wrk -t1 -c32 -d2s -s "$work/page.lua" "http://127.0.0.1:$primary_api_port/" >/dev/null
wrk -t1 -c32 -d2s -s "$work/page.lua" "http://127.0.0.1:$replicas_api_port/" >/dev/null

primaries=() replicas=() ratios=() primary_p99s=() replica_p99s=()
standby_before=$(standby_commits)
replica_requests=0
for i in $(seq "$rounds"); do
  read -r rps p99 < <(wrk_round "$primary_api_port")
  primaries+=("$rps") primary_p99s+=("$p99")
  read -r rrps rp99 < <(wrk_round "$replicas_api_port")
  replicas+=("$rrps") replica_p99s+=("$rp99")
  ratios+=("$(ratio_of "$rrps" "$rps")")
  replica_requests=$(awk -v a="$replica_requests" -v b="$rrps" -v s="$seconds" 'BEGIN { printf "%d", a + b * s }')
  log "round $i: primary $rps req/s (p99 $p99 ms), primary+standby $rrps req/s (p99 $rp99 ms)"
done
sleep 1.5  # the standby's statistics are flushed within a second
standby_share=$(ratio_of "$(( $(standby_commits) - standby_before ))" "$replica_requests")

writer_rows=$(( $(psql -tAq "$writer" -c "SELECT count(*) FROM wallet_operation_events WHERE account LIKE 'writer%'") - writer_start ))
writer_rate=$(awk -v n="$writer_rows" -v t0="$writer_started" -v t1="$(date +%s.%N)" 'BEGIN { printf "%.0f", n / (t1 - t0) }')
kill "$sampler_pid" 2>/dev/null; wait "$sampler_pid" 2>/dev/null || true; sampler_pid=""
lag_s=$(awk '{ print $1 }' "$work/lag.txt" | tr '\n' ' ')
lag_b=$(awk '{ print $2 }' "$work/lag.txt" | tr '\n' ' ')
lag_s_median=$(median <<<"$lag_s") lag_s_max=$(largest <<<"$lag_s")
lag_b_median=$(median <<<"$lag_b") lag_b_max=$(largest <<<"$lag_b")
log "replay lag samples (s): $lag_s"
log "replay lag samples (bytes): $lag_b"

# ---- the reorder's merge: one transaction, then bounded groups ----------------------------------
merge_rows=${BENCH_MERGE_ROWS:-100000}
store_last=$(psql -tAq "$writer" -c "SELECT block_num FROM indexer_checkpoint")
merge_events=$(psql -tAq "$writer" -c "SELECT count(*) FROM wallet_events WHERE block_num <= $store_last")
# run_merge LABEL MERGE-ROWS STANDBY-WAIT-MS -> "seconds lag_bytes_max lag_s_max
# lag_bytes_median transactions wal_mb_per_transaction" (the WAL the primary
# wrote meanwhile, the writer's share included, over the merge's transactions)
run_merge() {
  psql -q "$writer" -c "UPDATE wallet_reorder SET ordered_through = $store_last, merged_through = 0,
      merge_last_block = NULL, merge_account_through = NULL; DELETE FROM wallet_reorder_merge_groups" >&2
  psql -q "$superuser" -c "CHECKPOINT" >&2
  lag_sampler "$work/merge-$1.txt" 0.2 &
  sampler_pid=$!
  local t0 t1 lsn0
  lsn0=$(psql -tAq "$superuser" -c "SELECT pg_current_wal_lsn()")
  t0=$(date +%s.%N)
  INDEXER_DATABASE_URL=$writer "$build/reorder/wallet-reorder" --no-vacuum --merge-blocks="$store_last" \
    --merge-rows="$2" --standby-wait-ms="$3" > "$work/merge-$1.log" 2>&1 ||
    { cat "$work/merge-$1.log" >&2; exit 1; }
  t1=$(date +%s.%N)
  local wal transactions
  wal=$(psql -tAq "$superuser" -c "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '$lsn0')")
  transactions=$(grep -c 'merge: blocks' "$work/merge-$1.log")
  sleep 0.5
  kill "$sampler_pid" 2>/dev/null; wait "$sampler_pid" 2>/dev/null || true; sampler_pid=""
  local s b
  s=$(awk '{ print $1 }' "$work/merge-$1.txt" | tr '\n' ' ') b=$(awk '{ print $2 }' "$work/merge-$1.txt" | tr '\n' ' ')
  log "merge ($1): $transactions transactions, $wal bytes of WAL; lag samples (bytes): $b; (s): $s"
  echo "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') $(largest <<<"$b") $(largest <<<"$s") $(median <<<"$b")" \
    "$transactions $(awk -v w="$wal" -v n="$transactions" 'BEGIN { printf "%.1f", w / n / 1048576 }')"
}
log "merging $merge_events events (blocks 1..$store_last) in one transaction"
read -r one_s one_b one_lag one_b_median one_tx one_wal < <(run_merge one_tx 0 0)
log "merging them again in groups of $merge_rows events, waiting for the standby"
read -r bounded_s bounded_b bounded_lag bounded_b_median bounded_tx bounded_wal < <(run_merge bounded "$merge_rows" 60000)

echo "RESULT replicas replicas_ratio=$(median <<<"${ratios[*]}") primary_rps=$(median <<<"${primaries[*]}")" \
  "replicas_rps=$(median <<<"${replicas[*]}") primary_p99_ms=$(median <<<"${primary_p99s[*]}")" \
  "replicas_p99_ms=$(median <<<"${replica_p99s[*]}") standby_share=${standby_share}" \
  "replay_lag_s_median=${lag_s_median} replay_lag_s_max=${lag_s_max} replay_lag_bytes_median=${lag_b_median}" \
  "replay_lag_bytes_max=${lag_b_max} writer_events_per_s=${writer_rate} rounds=${rounds} round_seconds=${seconds}" \
  "rows=$((events + big_events)) merge_events=${merge_events} merge_one_tx_s=${one_s}" \
  "merge_one_tx_wal_mb_per_tx=${one_wal} merge_bounded_transactions=${bounded_tx}" \
  "merge_bounded_wal_mb_per_tx=${bounded_wal} merge_one_tx_lag_bytes_max=${one_b} merge_one_tx_lag_bytes_median=${one_b_median} merge_one_tx_lag_s_max=${one_lag}" \
  "merge_bounded_s=${bounded_s} merge_bounded_lag_bytes_max=${bounded_b} merge_bounded_lag_bytes_median=${bounded_b_median}" \
  "merge_bounded_lag_s_max=${bounded_lag} merge_rows=${merge_rows}"
