#!/usr/bin/env bash
# Benchmark of the backfill loader (run as `t/bench/run backfill`).
#
# A private PostgreSQL and a pool of simulated nodes serving the same
# synthetic chain at mainnet density (BENCH_BLOCKS blocks, default 200,000).
# In one run, with the same settings for all three:
#   1. the node limit: the pool's serving rate for the backfill's own batches
#      (condenser get_ops_in_block, BENCH_BATCH blocks each) over BENCH_WORKERS
#      kept-alive connections, answers discarded (sim_bench_client);
#   2. wallet-backfill loading the whole range into the empty database;
#   3. the database limit: COPY of the rows the backfill stored (accounts,
#      events and blocks: migration 0004), from files, into the same (empty,
#      indexed) tables of a second database.
# Ends with `RESULT backfill blocks_per_s=.. rows_per_s=.. sim_blocks_per_s=..
# copy_rows_per_s=.. ratio=..` where ratio is the backfill's block rate over
# the smaller limit (the COPY limit converted to blocks with the chain's rows
# per block), then further figures: the CPU seconds of the loader and of
# PostgreSQL in each phase (the machine's two cores are shared by the
# simulator, the loader and the database) and the load average at the end.
#
# Then 4. the backfill of BENCH_PROXY_BLOCKS (default 20,000) with the shipped
# batch and shard settings over a pool of BENCH_SIMS simulators behind each
# proxy personality (t/sim/README.md: none, drone, jussi, caddy) and over a
# mixed pool (drone, jussi and a node 3,000 blocks behind whose history lags
# 1,000 more), each into a fresh database: `<personality>_blocks_per_s=`.
#
# Environment: WALLET_BUILD_DIR (set by t/bench/run), BENCH_BLOCKS, BENCH_WORKERS
# (default 6), BENCH_SIMS (default 1), BENCH_BATCH (100), BENCH_SHARD (10000),
# BENCH_WRITE_METHOD (the loader's default when unset).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${WALLET_BUILD_DIR:-$root/build}
blocks=${BENCH_BLOCKS:-200000}
workers=${BENCH_WORKERS:-6}
sims=${BENCH_SIMS:-1}
batch=${BENCH_BATCH:-100}
shard=${BENCH_SHARD:-10000}
method=${BENCH_WRITE_METHOD:-}
proxy_blocks=${BENCH_PROXY_BLOCKS:-20000}
backfill=$build/backfill/wallet-backfill
fetch=$build/t/bench/sim_bench_client
sim=$build/t/sim/hive-node-sim
setup=$build/common/wallet-db-setup
source "$here/lib.bash"
for f in "$backfill" "$fetch" "$sim" "$setup" "$bench_pg_bin/postgres"; do [ -x "$f" ] || { echo "missing $f" >&2; exit 1; }; done

work=$(mktemp -d /tmp/wallet-bench-backfill.XXXXXX)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  bench_pg_stop "$work"
  rm -rf "$work"
}
trap cleanup EXIT

log() { echo "[backfill bench] $*" >&2; }
now() { date +%s.%N; }
pg_cpu() { bench_pg_cpu "$work"; }
rate() { python3 -c "print(round($1 / ($3 - $2)))"; }

# ---- PostgreSQL: one tuning for the loader and the COPY baseline alike ----------
superpass=bench-superuser-$RANDOM$RANDOM
mkdir -p "$work/data"  # the server writes and reads the COPY baseline's file here
[ "$(id -u)" = 0 ] && chown nobody "$work/data"
bench_pg_start "$work" "$superpass" -c max_connections=100 -c shared_buffers=2GB -c max_wal_size=8GB \
  -c checkpoint_timeout=30min

export DB_USER=postgres DB_PASSWORD=$superpass DB_BIND_HOST=127.0.0.1 DB_BIND_PORT=$pg_port
export WALLET_WRITER_PASSWORD=bench-writer-password-1 WALLET_API_READER_PASSWORD=bench-reader-password-1
DB_NAME=wallet "$setup" >&2
DB_NAME=copytarget "$setup" >&2
super="postgresql://postgres:$superpass@127.0.0.1:$pg_port"

# ---- the node pool ----------------------------------------------------------------
urls=""
for i in $(seq "$sims"); do
  port=$(free_port)
  "$sim" --synthetic --seed 3 --length $((blocks + 1)) --block-interval-ms 0 --port "$port" >"$work/sim-$i.log" 2>&1 &
  pids+=($!)
  urls="${urls:+$urls,}http://127.0.0.1:$port/"
  for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done
done
log "$blocks blocks, $workers workers, batches of $batch, shards of $shard, pool of $sims simulators"

# ---- 1. node limit: fetch and discard ----------------------------------------------
# One client per simulator, each on its share of the range, all at once.
share=$(( (blocks + sims - 1) / sims ))
connections=$(( (workers + sims - 1) / sims ))
i=0
fetchers=()
for url in ${urls//,/ }; do
  first=$(( i * share + 1 )); count=$(( share < blocks - i * share ? share : blocks - i * share ))
  "$fetch" "$url" condenser "$first" "$count" "$batch" "$connections" >"$work/fetch-$i.out" &
  fetchers+=($!)
  i=$((i + 1))
done
for pid in "${fetchers[@]}"; do wait "$pid" || { echo "fetch failed" >&2; cat "$work"/fetch-*.out >&2; exit 1; }; done
cat "$work"/fetch-*.out | sed 's/^/[backfill bench] fetch and discard: /' >&2
sim_blocks_per_s=$(cat "$work"/fetch-*.out | sed -n 's/.*blocks_per_s=\([0-9.]*\).*/\1/p' | python3 -c "import sys; print(round(sum(float(x) for x in sys.stdin)))")

# ---- 2. the backfill --------------------------------------------------------------
export BACKFILL_RPC_URLS=$urls BACKFILL_START_BLOCK=1 BACKFILL_END_BLOCK=$blocks BACKFILL_SHARD_SIZE=$shard
export BACKFILL_BATCH_SIZE=$batch BACKFILL_WORKERS=$workers DB_NAME=wallet
args=(--progress=log --progress-interval-ms=15000)
[ -n "$method" ] && args+=("--write-method=$method")
pg_before=$(pg_cpu)
start=$(now)
DB_PASSWORD= /usr/bin/time -f "%U %S" -o "$work/backfill.time" "$backfill" "${args[@]}" 2>"$work/backfill.log" ||
  { cat "$work/backfill.log" >&2; exit 1; }
end=$(now)
sleep 1
pg_backfill_cpu=$(python3 -c "print(round($(pg_cpu) - $pg_before, 1))")
backfill_cpu=$(awk '{print $1 + $2}' "$work/backfill.time")
grep -E "summary|progress" "$work/backfill.log" | sed 's/^/[backfill bench]   /' >&2
rows=$(psql -qAt "$super/wallet" -c "SELECT count(*) FROM wallet_events")
blocks_per_s=$(rate "$blocks" "$start" "$end")
rows_per_s=$(rate "$rows" "$start" "$end")
backfill_seconds=$(python3 -c "print(round($end - $start, 1))")
log "backfill: $rows rows in $backfill_seconds s"

# ---- 3. database limit: COPY of the same rows from files ---------------------------
# Each table's rows in the order the loader writes them (block order).
tables=(wallet_accounts wallet_blocks wallet_events)
declare -A order=([wallet_accounts]=id [wallet_blocks]=block_num [wallet_events]="block_num, block_seq, account_id, role")
# Stored columns only: a generated one (wallet_events.wide) cannot be copied in.
declare -A columns
for table in "${tables[@]}"; do
  columns[$table]=$(psql -qAt -v ON_ERROR_STOP=1 "$super/wallet" -c "SELECT string_agg(quote_ident(attname), ', ' ORDER BY attnum)
    FROM pg_attribute WHERE attrelid = '$table'::regclass AND attnum > 0 AND NOT attisdropped AND attgenerated = ''")
  psql -qAt -v ON_ERROR_STOP=1 "$super/wallet" \
    -c "COPY (SELECT ${columns[$table]} FROM $table ORDER BY ${order[$table]}) TO '$work/data/$table.copy'"
done
psql -qAt -v ON_ERROR_STOP=1 "$super/copytarget" -c "CHECKPOINT" >/dev/null
pg_before=$(pg_cpu)
start=$(now)
for table in "${tables[@]}"; do
  psql -qAt -v ON_ERROR_STOP=1 "$super/copytarget" -c "COPY $table (${columns[$table]}) FROM '$work/data/$table.copy'" >/dev/null
done
end=$(now)
sleep 1  # the COPY's backend has exited; its time counts once the postmaster reaped it
pg_copy_cpu=$(python3 -c "print(round($(pg_cpu) - $pg_before, 1))")
copied=$(psql -qAt "$super/copytarget" -c "SELECT count(*) FROM wallet_events")
copy_rows_per_s=$(rate "$copied" "$start" "$end")
copy_seconds=$(python3 -c "print(round($end - $start, 1))")
log "COPY from files: $copied event rows (and their accounts and blocks) in $copy_seconds s"

# ---- 4. behind each proxy personality ----------------------------------------------
start_sim() {  # port, then extra simulator arguments; appends the URL to $pool
  local port=$1
  shift
  "$sim" --synthetic --seed 3 --length $((blocks + 1)) --block-interval-ms 0 --port "$port" "$@" >"$work/sim-$port.log" 2>&1 &
  pids+=($!)
  pool_pids+=($!)
  pool="${pool:+$pool,}http://127.0.0.1:$port/"
  for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done
}
proxy_rates=""
for proxy in none drone jussi caddy mixed; do
  pool=""
  pool_pids=()
  if [ "$proxy" = mixed ]; then
    start_sim "$(free_port)" --proxy drone
    start_sim "$(free_port)" --proxy jussi
    start_sim "$(free_port)" --head-offset -3000 --history-lag 1000
  else
    for i in $(seq "$sims"); do start_sim "$(free_port)" --proxy "$proxy"; done
  fi
  DB_NAME=proxy_$proxy "$setup" >/dev/null 2>&1
  start=$(now)
  env -u BACKFILL_BATCH_SIZE -u BACKFILL_SHARD_SIZE DB_PASSWORD= DB_NAME=proxy_$proxy BACKFILL_RPC_URLS="$pool" \
    BACKFILL_END_BLOCK="$proxy_blocks" "$backfill" --progress=log --progress-interval-ms=15000 \
    2>"$work/backfill-$proxy.log" || { cat "$work/backfill-$proxy.log" >&2; exit 1; }
  end=$(now)
  log "behind $proxy: $proxy_blocks blocks in $(python3 -c "print(round($end - $start, 1))") s"
  proxy_rates+=" ${proxy}_blocks_per_s=$(rate "$proxy_blocks" "$start" "$end")"
  for pid in "${pool_pids[@]}"; do kill "$pid" 2>/dev/null || true; done
done

read -r ratio limit rows_per_block <<<"$(python3 -c "
rows_per_block = $rows / $blocks
copy_blocks = $copy_rows_per_s / rows_per_block
limit = min($sim_blocks_per_s, copy_blocks)
print(round($blocks_per_s / limit, 2), 'node' if $sim_blocks_per_s <= copy_blocks else 'database', round(rows_per_block, 1))")"
echo "RESULT backfill blocks_per_s=$blocks_per_s rows_per_s=$rows_per_s sim_blocks_per_s=$sim_blocks_per_s copy_rows_per_s=$copy_rows_per_s ratio=$ratio \
limit=$limit rows_per_block=$rows_per_block blocks=$blocks rows=$rows backfill_seconds=$backfill_seconds copy_seconds=$copy_seconds backfill_cpu_s=$backfill_cpu backfill_pg_cpu_s=$pg_backfill_cpu copy_pg_cpu_s=$pg_copy_cpu load_average=\"$(cut -d' ' -f1-3 /proc/loadavg)\" workers=$workers batch=$batch shard=$shard sims=$sims write_method=${method:-default} proxy_blocks=$proxy_blocks$proxy_rates"
