#!/usr/bin/env bash
# Blocks per second the node simulator serves as batched get_ops_in_block
# (100 blocks per request, condenser and NAI forms) over its synthetic chain
# at mainnet density. The simulator runs on core 0, the client on core 1.
#
#   t/bench/run simulator [BLOCKS_PER_FORM]
set -euo pipefail
build=${WALLET_BUILD_DIR:?run through t/bench/run}
blocks=${1:-100000}
first=20000000
sim="$build/t/sim/hive-node-sim"
client="$build/t/bench/sim_bench_client"
cores=$(nproc)
sim_core=0
client_core=$(( cores > 1 ? 1 : 0 ))

log=$(mktemp)
taskset -c "$sim_core" "$sim" --synthetic --seed 42 --length 30000000 --block-interval-ms 0 --port 0 >"$log" 2>&1 &
sim_pid=$!
trap 'kill "$sim_pid" 2>/dev/null || true; wait "$sim_pid" 2>/dev/null || true; rm -f "$log"' EXIT
for _ in $(seq 200); do
  grep -q "listening on" "$log" && break
  sleep 0.05
done
port=$(sed -n 's/^listening on http:\/\/127.0.0.1:\([0-9]*\).*/\1/p' "$log")
[ -n "$port" ] || { cat "$log" >&2; exit 1; }
url="http://127.0.0.1:$port/"

cpu_ticks() { awk '{print $14 + $15}' "/proc/$sim_pid/stat"; }
ticks_per_second=$(getconf CLK_TCK)

# Warm-up (page faults of the first buffers), not counted.
taskset -c "$client_core" "$client" "$url" nai 1000 2000 100 3 >/dev/null

declare -A figure
total_blocks=0; total_ops=0; total_bytes=0; total_seconds=0; total_ticks=0
for form in condenser nai; do
  before=$(cpu_ticks)
  line=$(taskset -c "$client_core" "$client" "$url" "$form" "$first" "$blocks" 100 3)
  after=$(cpu_ticks)
  echo "$line" >&2
  for pair in $line; do figure["$form.${pair%%=*}"]=${pair#*=}; done
  total_blocks=$(( total_blocks + figure[$form.blocks] ))
  total_ops=$(( total_ops + figure[$form.ops] ))
  total_bytes=$(( total_bytes + figure[$form.bytes] ))
  total_seconds=$(awk -v a="$total_seconds" -v b="${figure[$form.seconds]}" 'BEGIN { print a + b }')
  total_ticks=$(( total_ticks + after - before ))
  first=$(( first + blocks ))
done

awk -v blocks="$total_blocks" -v ops="$total_ops" -v bytes="$total_bytes" -v seconds="$total_seconds" \
    -v ticks="$total_ticks" -v hz="$ticks_per_second" \
    -v condenser="${figure[condenser.blocks_per_s]}" -v nai="${figure[nai.blocks_per_s]}" 'BEGIN {
  cpu = ticks / hz
  printf "RESULT simulator blocks_per_s=%.0f condenser_blocks_per_s=%s nai_blocks_per_s=%s ops_per_s=%.0f mb_per_s=%.1f ops_per_block=%.1f sim_cpu_seconds=%.2f blocks_per_sim_cpu_s=%.0f\n",
    blocks / seconds, condenser, nai, ops / seconds, bytes / seconds / 1e6, ops / blocks, cpu, (cpu > 0 ? blocks / cpu : 0)
}'
