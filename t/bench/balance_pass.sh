#!/usr/bin/env bash
# The balance pass alone (run as `t/bench/run balance_pass`; issue 31): the
# CPU the pass costs the loader and PostgreSQL per event, without the load's
# and the bulk build's CPU around it. wallet-backfill --bulk loads
# BENCH_BLOCKS blocks of the synthetic chain (the pass held off by a period
# longer than the chain), then runs again (without --bulk) over the same
# complete range with the pass's period BENCH_PERIOD: every shard is done, so
# that second run does the pass only. The
# server runs without autovacuum (the bulk load's tables would be vacuumed and
# analyzed beside the pass). Ends with `RESULT balance_pass events=..
# passed_events=.. loader_cpu_us_per_event=.. pg_cpu_us_per_event=..
# seconds=.. pending_bytes_per_event=..`, per event of the passed periods (wallet_events' rows up to the
# pass's checkpoint); and the bytes of the pass's input the writers keep until
# the pass (wallet_balance_pending, migration 0031: table and index, and its
# data alone) per event.
#
# Environment: WALLET_BUILD_DIR (set by t/bench/run), BENCH_BLOCKS (30000),
# BENCH_PERIOD (10000), BENCH_BACKFILL (another wallet-backfill binary, e.g.
# main's, for a before/after; with its own BENCH_SETUP, wallet-db-setup).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${WALLET_BUILD_DIR:-$root/build}
blocks=${BENCH_BLOCKS:-30000}
period=${BENCH_PERIOD:-10000}
backfill=${BENCH_BACKFILL:-$build/backfill/wallet-backfill}
setup=${BENCH_SETUP:-$build/common/wallet-db-setup}
sim=$build/t/sim/hive-node-sim
source "$here/lib.bash"
for f in "$backfill" "$sim" "$setup"; do [ -x "$f" ] || { echo "missing $f" >&2; exit 1; }; done

work=$(mktemp -d /tmp/wallet-bench-balance-pass.XXXXXX)
sim_pid=""
cleanup() {
  [ -n "$sim_pid" ] && kill "$sim_pid" 2>/dev/null && wait "$sim_pid" 2>/dev/null
  bench_pg_stop "$work"
  rm -rf "$work"
}
trap cleanup EXIT
log() { echo "[balance_pass bench] $*" >&2; }
calc() { python3 -c "print($1)"; }

superpass=bench-superuser-$RANDOM$RANDOM
bench_pg_start "$work" "$superpass" -c max_connections=40 -c shared_buffers=1GB -c max_wal_size=8GB -c autovacuum=off
export DB_USER=postgres DB_PASSWORD=$superpass DB_BIND_HOST=127.0.0.1 DB_BIND_PORT=$pg_port DB_NAME=wallet
export WALLET_WRITER_PASSWORD=bench-writer-password-1 WALLET_API_READER_PASSWORD=bench-reader-password-1
"$setup" >&2
db="postgresql://postgres:$superpass@127.0.0.1:$pg_port/wallet"
q() { psql -qAt -v ON_ERROR_STOP=1 "$db" "$@"; }

port=$(free_port)
"$sim" --synthetic --seed 3 --length $((blocks + 1)) --block-interval-ms 0 --port "$port" >"$work/sim.log" 2>&1 &
sim_pid=$!
wait_port "$port"
run_backfill() {  # PERIOD ARGS...
  BACKFILL_RPC_URLS=http://127.0.0.1:$port/ BACKFILL_START_BLOCK=1 BACKFILL_END_BLOCK=$blocks BACKFILL_WORKERS=4 \
    BACKFILL_BATCH_SIZE=100 BACKFILL_SHARD_SIZE=10000 CHAIN_BALANCE_SNAPSHOT_BLOCKS=$1 DB_PASSWORD='' \
    /usr/bin/time -f "%U %S" -o "$work/backfill.time" "$backfill" "${@:2}" --progress=none 2>>"$work/backfill.log" ||
    { tail -20 "$work/backfill.log" >&2; exit 1; }
}
log "loading $blocks blocks (--bulk, the pass held off)"
run_backfill $((blocks + 1)) --bulk
events=$(q -c "SELECT count(*) FROM wallet_events")
# The pass's input the writers kept (migration 0031; none before it): bytes per event, transient.
pending="0 0"
if [ "$(q -c "SELECT to_regclass('wallet_balance_pending') IS NOT NULL")" = t ]; then
  pending=$(q -c "SELECT pg_total_relation_size('wallet_balance_pending') || ' ' || coalesce(sum(length(events)), 0)
                    FROM wallet_balance_pending")
fi
# Written out before the measurement (the checkpointer's CPU is PostgreSQL's too).
q -c "VACUUM ANALYZE" >/dev/null
q -c "CHECKPOINT" >/dev/null
log "the pass alone (period $period)"
pg_before=$(bench_pg_cpu "$work")
start=$(date +%s.%N)
run_backfill "$period"  # every shard done: the pass only
seconds=$(calc "round($(date +%s.%N) - $start, 1)")
pg_cpu=$(calc "round($(bench_pg_cpu "$work") - $pg_before, 2)")
loader_cpu=$(awk '{print $1 + $2}' "$work/backfill.time")
grep "balance snapshots through" "$work/backfill.log" | sed 's/^/[balance_pass bench]   /' >&2
through=$(q -c "SELECT through_block FROM wallet_balance_snapshot_state")
passed=$(q -c "SELECT count(*) FROM wallet_events WHERE block_num <= $through")
load_average=$(cut -d' ' -f1-3 /proc/loadavg)
echo "RESULT balance_pass events=$events passed_events=$passed" \
  "loader_cpu_us_per_event=$(calc "round($loader_cpu * 1e6 / $passed, 2)")" \
  "pg_cpu_us_per_event=$(calc "round($pg_cpu * 1e6 / $passed, 2)") seconds=$seconds loader_cpu_s=$loader_cpu pg_cpu_s=$pg_cpu" \
  "pending_bytes_per_event=$(calc "round(${pending% *} / $events, 2)")" \
  "pending_data_bytes_per_event=$(calc "round(${pending#* } / $events, 2)") through=$through load_average=\"$load_average\""
