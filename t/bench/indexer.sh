#!/usr/bin/env bash
# Catch-up speed of wallet-indexer: 100,000 synthetic blocks of mainnet
# density (the simulator's default mix, one pathological payout block
# included) from a fresh database to the last irreversible block, next to
# the simulator's own serving rate for the same blocks, measured in this run.
# A second, shorter pass measures the other write method (multi-row INSERT
# ... ON CONFLICT DO NOTHING) against the default (COPY, merge on conflict).
# Then one pass of BENCH_PROXY_BLOCKS (default 20,000) behind each proxy
# personality of the simulator (t/sim/README.md): none (bare hived, a new
# connection per request), drone, jussi, caddy, with the shipped defaults.
#
#   t/bench/run indexer            (BENCH_BLOCKS=N to change the length)
#
# Ends with one line:
#   RESULT indexer blocks_per_s=<indexer> rows_per_s=<indexer> sim_blocks_per_s=<simulator alone> key=value ...
set -euo pipefail

build=${WALLET_BUILD_DIR:?set by t/bench/run}
blocks=${BENCH_BLOCKS:-100000}
compare_blocks=${BENCH_COMPARE_BLOCKS:-20000}
proxy_blocks=${BENCH_PROXY_BLOCKS:-20000}
sim=$build/t/sim/hive-node-sim
indexer=$build/indexer/wallet-indexer
client=$build/t/bench/sim_bench_client
setup=$build/common/wallet-db-setup
source "$(dirname "$0")/lib.bash"
for tool in "$sim" "$indexer" "$client" "$setup" "$bench_pg_bin/postgres"; do
  [ -x "$tool" ] || { echo "indexer.sh: missing $tool" >&2; exit 1; }
done

work=$(mktemp -d /tmp/wallet-bench-indexer-XXXXXX)
pids=()
trap bench_cleanup EXIT

# CPU seconds (user + system) a process has used so far.
cpu_seconds() { awk -v hz="$(getconf CLK_TCK)" '{printf "%.2f", ($14 + $15) / hz}' "/proc/$1/stat" 2>/dev/null || echo 0; }
elapsed() { python3 -c "print(f'{$2 - $1:.3f}')"; }
now() { date +%s.%N; }
ratio() { python3 -c "print(int($1 / $2) if $2 > 0 else 0)"; }

# ---- PostgreSQL 15: a private cluster, settings as in the test harness ----
pg_password=bench-superuser-password-1
bench_pg_start "$work" "$pg_password" -c shared_buffers=256MB
pg_env=(DB_USER=postgres DB_PASSWORD=$pg_password DB_BIND_HOST=127.0.0.1 DB_BIND_PORT=$pg_port
        WALLET_WRITER_PASSWORD=bench-writer-password-1 WALLET_API_READER_PASSWORD=bench-reader-password-1)
sql() { PGPASSWORD=$pg_password psql -qAt -h 127.0.0.1 -p "$pg_port" -U postgres -c "$2" "$1"; }

# ---- the simulator: a fixed chain, head at blocks + 3 ----------------------
sim_port=$(free_port)
"$sim" --synthetic --seed 1 --length $((blocks + 3)) --block-interval-ms 0 --port "$sim_port" >"$work/sim.log" 2>&1 &
sim_pid=$!
pids+=($sim_pid)
for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/"$sim_port") 2>/dev/null && break; sleep 0.1; done
url=http://127.0.0.1:$sim_port

# The simulator alone: the same blocks, batches of 100, one connection (as
# the indexer's main connection) and two (as the indexer with read-ahead).
sim_alone=$("$client" "$url" condenser 1 "$blocks" 100 1)
sim_alone_2=$("$client" "$url" condenser 1 "$blocks" 100 2)
sim_blocks_per_s=$(sed -n 's/.* blocks_per_s=\([0-9]*\).*/\1/p' <<<"$sim_alone")
sim_blocks_per_s_2=$(sed -n 's/.* blocks_per_s=\([0-9]*\).*/\1/p' <<<"$sim_alone_2")
echo "simulator alone: $sim_alone" >&2

# ---- one indexing pass: fresh database, until the checkpoint reaches $2 ----
# ($4, $5: another simulator's URL and pid.)
# Prints: seconds rows indexer_cpu backend_cpu sim_cpu [seconds_at_compare_point]
index_pass() {
  local database=$1 until=$2 method=$3 url=${4:-$url} sim_pid=${5:-$sim_pid}
  env "${pg_env[@]}" DB_NAME="$database" "$setup" >"$work/setup-$database.log" 2>&1
  local sim_cpu0 start
  sim_cpu0=$(cpu_seconds "$sim_pid")
  start=$(now)
  env "${pg_env[@]}" DB_NAME="$database" CHAIN_RPC_URL="$url" INDEXER_START_BLOCK=1 INDEXER_HEALTH_ADDR= \
    INDEXER_POLL_INTERVAL_MS=100 INDEXER_MAX_BATCH_BLOCKS=100 "$indexer" --write-method="$method" \
    >"$work/indexer-$database.log" 2>&1 &
  local pid=$! backend="" indexer_cpu=0 backend_cpu=0 at_compare=""
  while :; do
    local checkpoint
    checkpoint=$(sql "$database" "SELECT coalesce((SELECT block_num FROM indexer_checkpoint), 0)" 2>/dev/null || echo 0)
    [ -z "$backend" ] && backend=$(sql "$database" "SELECT pid FROM pg_stat_activity WHERE usename = 'wallet_writer' LIMIT 1" 2>/dev/null || true)
    indexer_cpu=$(cpu_seconds "$pid")
    [ -n "$backend" ] && backend_cpu=$(cpu_seconds "$backend")
    [ -z "$at_compare" ] && [ "$checkpoint" -ge "$compare_blocks" ] && at_compare=$(elapsed "$start" "$(now)")
    [ "$checkpoint" -ge "$until" ] && break
    kill -0 "$pid" 2>/dev/null || { echo "indexer.sh: wallet-indexer exited:" >&2; cat "$work/indexer-$database.log" >&2; exit 1; }
    sleep 0.2
  done
  local seconds
  seconds=$(elapsed "$start" "$(now)")
  kill -TERM "$pid"
  wait "$pid" || true
  echo "$seconds $(sql "$database" 'SELECT count(*) FROM wallet_events') $indexer_cpu $backend_cpu" \
       "$(python3 -c "print(f'{$(cpu_seconds "$sim_pid") - $sim_cpu0:.2f}')") ${at_compare:-$seconds}"
}

read -r seconds rows indexer_cpu backend_cpu sim_cpu copy_compare_seconds < <(index_pass copy_run "$blocks" copy)
blocks_per_s=$(ratio "$blocks" "$seconds")
rows_per_s=$(ratio "$rows" "$seconds")
echo "indexer (COPY): $blocks blocks, $rows rows in $seconds s" >&2

read -r insert_seconds insert_rows _ _ _ _ < <(index_pass insert_run "$compare_blocks" insert)
echo "indexer (INSERT): $compare_blocks blocks, $insert_rows rows in $insert_seconds s" >&2

# ---- behind each proxy personality, the same chain --------------------------
proxy_rates=""
for proxy in none drone jussi caddy; do
  port=$(free_port)
  "$sim" --synthetic --seed 1 --length $((blocks + 3)) --block-interval-ms 0 --proxy "$proxy" --port "$port" \
    >"$work/sim-$proxy.log" 2>&1 &
  proxy_sim=$!
  pids+=($proxy_sim)
  for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/"$port") 2>/dev/null && break; sleep 0.1; done
  read -r proxy_seconds _ _ _ _ _ < <(index_pass "proxy_$proxy" "$proxy_blocks" copy "http://127.0.0.1:$port" "$proxy_sim")
  echo "indexer behind $proxy: $proxy_blocks blocks in $proxy_seconds s" >&2
  proxy_rates+=" ${proxy}_first${proxy_blocks}_blocks_per_s=$(ratio "$proxy_blocks" "$proxy_seconds")"
  kill "$proxy_sim"
done

echo "RESULT indexer blocks_per_s=$blocks_per_s rows_per_s=$rows_per_s sim_blocks_per_s=$sim_blocks_per_s" \
  "sim_blocks_per_s_2conn=$sim_blocks_per_s_2 blocks=$blocks rows=$rows seconds=$seconds" \
  "rows_per_block=$(python3 -c "print(f'{$rows / $blocks:.1f}')")" \
  "indexer_cpu_s=$indexer_cpu pg_backend_cpu_s=$backend_cpu sim_cpu_s=$sim_cpu" \
  "copy_first${compare_blocks}_blocks_per_s=$(ratio "$compare_blocks" "$copy_compare_seconds")" \
  "insert_first${compare_blocks}_blocks_per_s=$(ratio "$compare_blocks" "$insert_seconds")" \
  "batch_blocks=100$proxy_rates cores=$(nproc) load_avg=$(cut -d' ' -f1 /proc/loadavg) pg_fsync=off"
