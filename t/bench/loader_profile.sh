#!/usr/bin/env bash
# Where the loader's instructions go (run as `t/bench/run loader_profile`;
# issue 31): wallet-backfill --bulk, one worker, loads BENCH_BLOCKS blocks
# (default 3000: 77,705 events) of the synthetic chain into a fresh
# store under callgrind (the bulk build runs in PostgreSQL: the loader only
# waits for it). Prints the top functions by their own instructions; ends
# with `RESULT loader_profile events=.. instructions_per_event=..
# without_connect_per_event=.. fetch_per_event=.. scan_per_event=..
# decode_per_event=.. write_per_event=.. rows_per_event=.. copy_per_event=..
# pass_per_event=..`:
# the loader's instructions per event in all, without its database
# connections' setup (SCRAM: a fixed cost, large at this size), and the
# inclusive instructions per event of each part: fetch (HTTP and the batch
# answer's scan), scan, decode (the decoder, balance changes included),
# write (store::insert_events: rows, COPY, balance rows), rows (rendering
# the rows as COPY text), copy (sending it), pass (the balance pass
# after the build: store::advance_balance_snapshots, over the loaded blocks'
# whole periods of BENCH_PERIOD blocks; its instructions per event loaded).
#
# Environment: WALLET_BUILD_DIR (set by t/bench/run), BENCH_BLOCKS (3000),
# BENCH_PERIOD (1000: the pass's period, CHAIN_BALANCE_SNAPSHOT_BLOCKS), BENCH_KEEP (a directory: the callgrind output is kept there), BENCH_BACKFILL
# (another wallet-backfill binary to profile, e.g. main's, for a before/after).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${WALLET_BUILD_DIR:-$root/build}
blocks=${BENCH_BLOCKS:-3000}
period=${BENCH_PERIOD:-1000}
backfill=${BENCH_BACKFILL:-$build/backfill/wallet-backfill}
sim=$build/t/sim/hive-node-sim
setup=$build/common/wallet-db-setup
source "$here/lib.bash"
for f in "$backfill" "$sim" "$setup" /usr/bin/valgrind /usr/bin/callgrind_annotate; do
  [ -x "$f" ] || { echo "missing $f" >&2; exit 1; }
done

work=$(mktemp -d /tmp/wallet-bench-loader-profile.XXXXXX)
sim_pid=""
cleanup() {
  [ -n "$sim_pid" ] && kill "$sim_pid" 2>/dev/null && wait "$sim_pid" 2>/dev/null
  bench_pg_stop "$work"
  rm -rf "$work"
}
trap cleanup EXIT
log() { echo "[loader_profile bench] $*" >&2; }

superpass=bench-superuser-$RANDOM$RANDOM
bench_pg_start "$work" "$superpass" -c max_connections=20 -c shared_buffers=256MB
export DB_USER=postgres DB_PASSWORD=$superpass DB_BIND_HOST=127.0.0.1 DB_BIND_PORT=$pg_port DB_NAME=wallet
export WALLET_WRITER_PASSWORD=bench-writer-password-1 WALLET_API_READER_PASSWORD=bench-reader-password-1
"$setup" >&2
db="postgresql://postgres:$superpass@127.0.0.1:$pg_port/wallet"

port=$(free_port)
"$sim" --synthetic --seed 3 --length $((blocks + 1)) --block-interval-ms 0 --port "$port" >"$work/sim.log" 2>&1 &
sim_pid=$!
for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done
log "loading $blocks blocks under callgrind (one worker)"
BACKFILL_RPC_URLS=http://127.0.0.1:$port/ BACKFILL_START_BLOCK=1 BACKFILL_END_BLOCK=$blocks BACKFILL_WORKERS=1 \
  BACKFILL_BATCH_SIZE=100 BACKFILL_SHARD_SIZE=10000 CHAIN_BALANCE_SNAPSHOT_BLOCKS=$period DB_PASSWORD='' \
  valgrind --tool=callgrind --callgrind-out-file="$work/callgrind.out" \
  "$backfill" --bulk --progress=none 2>"$work/backfill.log" || { tail -20 "$work/backfill.log" >&2; exit 1; }
events=$(psql -qAt "$db" -c "SELECT count(*) FROM wallet_events")
[ -n "${BENCH_KEEP:-}" ] && cp "$work/callgrind.out" "$BENCH_KEEP/"
total=$(callgrind_annotate "$work/callgrind.out" 2>/dev/null | awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1 }')
inclusive=$(callgrind_annotate --inclusive=yes --threshold=100 "$work/callgrind.out" 2>/dev/null)
# The inclusive count of the first function whose name matches.
part() { awk -v re="$1" '$1 ~ /^[0-9,]+$/ && $0 ~ re { gsub(",", "", $1); print $1; exit }' <<<"$inclusive"; }
per_event() { python3 -c "print(round(${1:-0} / $events))"; }
# Each part by the function that stands for it.
declare -A count
for spec in connect=pg::connect fetch=NodeClient::get_ops_in_blocks scan=scan_entry_list \
            decode=decode_block_entries write=store::insert_events rows=render_rows copy=copy_rows \
            pass=store::advance_balance_snapshots; do
  count[${spec%%=*}]=$(part "${spec#*=}")
done
log "top functions by their own instructions:"
callgrind_annotate --threshold=90 "$work/callgrind.out" 2>/dev/null | sed -n '/file:function/,$p' | sed -n '1,40p' >&2
parts=""
for name in fetch scan decode write rows copy pass; do parts+=" ${name}_per_event=$(per_event "${count[$name]}")"; done
echo "RESULT loader_profile events=$events instructions_per_event=$(per_event "$total")" \
  "without_connect_per_event=$(per_event "$((total - ${count[connect]:-0}))")$parts blocks=$blocks"
