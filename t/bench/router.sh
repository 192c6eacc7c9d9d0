#!/usr/bin/env bash
# Benchmark of the JSON-RPC router (t/bench/run router). One nginx worker,
# wrk against four servers of the same nginx, measured one after another:
#   static  `return 200` with the very body a cache hit answers
#   hit     the router answering from its cache (memory layer + Redis)
#   hit_redis  the same with the memory layer off (every hit asks Redis)
#   proxy   plain proxy_pass with upstream keepalive to the stand-in backend
#   miss    the router forwarding every call to the same backend
#   lib_static / lib  `return 200` with a block header, and the router
#           answering that final (irreversible) block header from its cache
#           (a route with expire_if_reversible, the node simulator's LIB)
# then WebSocket clients (router-ws-load) on the router's endpoint, and
# bursts of 50 identical concurrent misses against a backend that answers
# after 2 s (upstream requests per burst: coalesced misses).
# Ends with: RESULT router cpu_hit_ratio=<static CPU/hit CPU>
#   cpu_miss_ratio=<proxy CPU/miss CPU> hit_ratio=<hit/static rate>
#   miss_ratio=<miss/proxy rate> ws_rps=<n> lib_hit_ratio=<lib/lib_static>
#   coalesced_upstream_per_miss=<n> ...
# The goal figures (issue #33) are the first two, the nginx worker's CPU
# time per request (user + system) of the baseline over the router's:
# cpu_hit_ratio >= 0.9 (a cache hit against `return 200` of the same body)
# and cpu_miss_ratio >= 1.0 (a miss against plain proxy_pass). Each is the
# median over the rounds of that round's ratio; worker_us_* are the medians
# of the CPU per request. The rates (hit_ratio, miss_ratio, *_rps) are
# context only: on a shared machine they follow whatever else runs, the CPU
# a request costs the worker much less. Candidate and baseline run one
# right after the other in each round.
#
# With BENCH_CALLGRIND_REQUESTS=N, no wrk rounds, WebSocket or bursts: the
# same nginx runs as one process (master_process off) under valgrind's
# callgrind, and each scenario (static, hit, hit_redis_only, proxy_pass, miss,
# lib_static, lib_hit) sends it exactly N requests over 32 keep-alive
# connections (api_bench_tool load) with its instrumentation on, after N/4
# uninstrumented warm-up requests. Ends with `RESULT router_callgrind
# <scenario>_worker_ir=<instructions per request> ...`; the profiles stay in
# BENCH_CALLGRIND_DIR (default ./callgrind-router) for callgrind_annotate.
# Instruction counts are stable on a shared machine where times are not.
# With BENCH_SYSCALLS=1 as well, nginx runs without valgrind and strace
# counts the system calls of each scenario's N requests instead: RESULT
# router_syscalls <scenario>_syscalls=<per request> (the counts by call on
# stderr).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${WALLET_BUILD_DIR:-$root/build}
seconds=${BENCH_SECONDS:-3}
rounds=${BENCH_ROUNDS:-3}
connections=${BENCH_CONNECTIONS:-32}
module=$build/ngx_module/ngx_http_wallet_module.so
backend_bin=$build/t/backends/router-test-backend
ws_load=$build/t/backends/router-ws-load
sim_bin=$build/t/sim/hive-node-sim
load_tool=$build/t/bench/api_bench_tool
callgrind_requests=${BENCH_CALLGRIND_REQUESTS:-}
callgrind_dir=${BENCH_CALLGRIND_DIR:-$PWD/callgrind-router}
count_syscalls=${BENCH_SYSCALLS:-}
if [ -n "$callgrind_requests" ]; then
  if [ -n "$count_syscalls" ]; then
    command -v strace >/dev/null || { echo "strace is missing" >&2; exit 1; }
  else
    command -v valgrind >/dev/null || { echo "valgrind is missing" >&2; exit 1; }
  fi
  [ -x "$load_tool" ] || { echo "missing $load_tool (build first)" >&2; exit 1; }
fi
for f in "$module" "$backend_bin" "$ws_load" "$sim_bin"; do [ -x "$f" ] || [ -f "$f" ] || { echo "missing $f (build first)" >&2; exit 1; }; done
command -v wrk >/dev/null || { echo "wrk is not installed (scripts/install-deps)" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/router-bench.XXXXXX")
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

source "$here/lib.bash"

redis_port=$(free_port); backend_port=$(free_port); sim_port=$(free_port)
/usr/bin/redis-server --port "$redis_port" --bind 127.0.0.1 --save "" --appendonly no --dir "$work" > "$work/redis.log" 2>&1 &
pids+=($!)
"$backend_bin" --name bench --port "$backend_port" --slow-ms 2000 > "$work/backend.log" 2>&1 &
pids+=($!)
"$sim_bin" --fixtures "$root/t/fixtures/hive" --block-interval-ms 0 --port "$sim_port" > "$work/sim.log" 2>&1 &
pids+=($!)
wait_port "$redis_port"; wait_port "$backend_port"; wait_port "$sim_port"

cat > "$work/routes.json" <<JSON
{"targets": {"bench": "http://127.0.0.1:$backend_port"}, "timeouts": 10,
 "routes": {"^cached\\\\.": {"target": "bench", "cache": 300}, "^bench\\\\.": {"target": "bench"}},
 "default-cache": 0}
JSON

cat > "$work/routes_lib.json" <<JSON
{"targets": {"node": "http://127.0.0.1:$sim_port"}, "timeouts": 10,
 "chain-nodes": {"node": {"poll_interval": 0.5}},
 "routes": {"^block_api\\\\.get_block_header$": {"target": "node", "cache": 3, "expire_if_reversible": true}}}
JSON

lib_static_port=$(free_port); lib_port=$(free_port)
static_port=$(free_port); hit_port=$(free_port); hit_redis_port=$(free_port); proxy_port=$(free_port); miss_port=$(free_port)
hit_body='{"jsonrpc":"2.0","method":"cached.get_dynamic_global_properties","params":[],"id":1}'
miss_body='{"jsonrpc":"2.0","method":"bench.get_dynamic_global_properties","params":[],"id":1}'
lib_body='{"jsonrpc":"2.0","method":"block_api.get_block_header","params":{"block_num":4000000},"id":1}'
mkdir -p "$work/logs" "$work/tmp"
user_line=""; [ "$(id -u)" = 0 ] && user_line="user root root;"

write_conf() {  # $1, $2 = bodies of the static locations (hit, final block header); $3 = master_process
cat > "$work/nginx.conf" <<CONF
daemon off; master_process ${3:-on}; worker_processes 1; $user_line
error_log $work/logs/error.log warn; pid $work/logs/nginx.pid;
load_module $module;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path $work/tmp/body; proxy_temp_path $work/tmp/proxy;
  fastcgi_temp_path $work/tmp/fastcgi; uwsgi_temp_path $work/tmp/uwsgi; scgi_temp_path $work/tmp/scgi;
  keepalive_requests 1000000;
  upstream bench_backend { server 127.0.0.1:$backend_port; keepalive 32; }
  server { listen 127.0.0.1:$static_port; location / { default_type application/json; return 200 '$1'; } }
  server { listen 127.0.0.1:$hit_port; location / { jsonrpc_router $work/routes.json; jsonrpc_router_redis 127.0.0.1:$redis_port; } }
  server { listen 127.0.0.1:$hit_redis_port; location / { jsonrpc_router $work/routes.json; jsonrpc_router_redis 127.0.0.1:$redis_port; jsonrpc_router_memory_cache 0; } }
  server { listen 127.0.0.1:$proxy_port; location / { proxy_pass http://bench_backend; proxy_http_version 1.1; proxy_set_header Connection ""; } }
  server { listen 127.0.0.1:$miss_port; location / { jsonrpc_router $work/routes.json; jsonrpc_router_redis 127.0.0.1:$redis_port; } }
  server { listen 127.0.0.1:$lib_static_port; location / { default_type application/json; return 200 '$2'; } }
  server { listen 127.0.0.1:$lib_port; location / { jsonrpc_router $work/routes_lib.json; jsonrpc_router_redis 127.0.0.1:$redis_port; } }
}
CONF
}

# The static baselines return exactly what the hits return.
write_conf '{}' '{}'
/usr/sbin/nginx -p "$work" -c "$work/nginx.conf" &
nginx_pid=$!; pids+=($nginx_pid)
wait_port "$hit_port"
curl -s -o /dev/null -d "$hit_body" "http://127.0.0.1:$hit_port/"
cached=$(curl -s -d "$hit_body" "http://127.0.0.1:$hit_port/")
case "$cached" in *'"result"'*) ;; *) echo "router did not answer: $cached" >&2; exit 1 ;; esac
# The block header is final once the router knows the node's LIB: cached without expiry.
for _ in $(seq 100); do
  curl -s "http://127.0.0.1:$lib_port/" | grep -q '"last_irreversible_block_num":[1-9]' && break; sleep 0.1
done
curl -s -o /dev/null -d "$lib_body" "http://127.0.0.1:$lib_port/"
lib_cached=$(curl -s -D "$work/lib_headers" -d "$lib_body" "http://127.0.0.1:$lib_port/")
grep -qi '^x-jsonrpc-cache: HIT' "$work/lib_headers" || { echo "final block header not cached: $lib_cached" >&2; exit 1; }
kill -QUIT $nginx_pid; wait $nginx_pid 2>/dev/null || true

if [ -n "$callgrind_requests" ]; then
  mkdir -p "$callgrind_dir"
  rm -f "$callgrind_dir"/callgrind.out.*
  write_conf "$cached" "$lib_cached" off
  prefix=(valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$callgrind_dir/callgrind.out.%p"
          --log-file="$work/valgrind.log")
  [ -n "$count_syscalls" ] && prefix=()
  "${prefix[@]}" /usr/sbin/nginx -p "$work" -c "$work/nginx.conf" &
  nginx_pid=$!; pids+=($nginx_pid)
  for port in "$static_port" "$hit_port" "$lib_port"; do wait_port "$port"; done
  # The LIB poller of the valgrind process must have run before the LIB scenario.
  for _ in $(seq 100); do
    curl -s -D "$work/lib_headers" -o /dev/null -d "$lib_body" "http://127.0.0.1:$lib_port/"
    grep -qi '^x-jsonrpc-cache: HIT' "$work/lib_headers" && break; sleep 0.2
  done
  results=""
  callgrind_scenario() {  # name port body
    local name=$1 port=$2 body=$3 profile ir tracer calls
    "$load_tool" load "$port" "$body" $((callgrind_requests / 4)) 32 >/dev/null
    if [ -n "$count_syscalls" ]; then
      strace -c -q -p "$nginx_pid" -o "$work/$name.strace" &
      tracer=$!
      sleep 1  # attached
      "$load_tool" load "$port" "$body" "$callgrind_requests" 32 >/dev/null
      kill -INT "$tracer"; wait "$tracer" 2>/dev/null || true
      # Columns: % time, seconds, usecs/call, calls, [errors], name.
      calls=$(awk 'NR > 2 && $NF != "total" && $1 !~ /^-/ { c += $4 } END { print c + 0 }' "$work/$name.strace")
      echo "$name: $(awk -v c="$calls" -v n="$callgrind_requests" 'BEGIN { printf "%.2f", c / n }') system calls per request:" \
        "$(awk -v n="$callgrind_requests" 'NR > 2 && $NF != "total" && $1 !~ /^-/ { printf "%s=%.2f ", $NF, $4 / n }' "$work/$name.strace")" >&2
      results+=" ${name}_syscalls=$(awk -v c="$calls" -v n="$callgrind_requests" 'BEGIN { printf "%.2f", c / n }')"
      return 0
    fi
    callgrind_control -i on "$nginx_pid" >/dev/null 2>&1
    "$load_tool" load "$port" "$body" "$callgrind_requests" 32 >/dev/null
    callgrind_control -i off "$nginx_pid" >/dev/null 2>&1
    callgrind_control -d "$name" "$nginx_pid" >/dev/null 2>&1
    profile=$(ls -t "$callgrind_dir"/callgrind.out.*.[0-9]* | head -1)
    mv "$profile" "$callgrind_dir/$name.callgrind"
    ir=$(awk '/^totals:/ { print $2; exit }' "$callgrind_dir/$name.callgrind")
    echo "$name: $((ir / callgrind_requests)) instructions per request (callgrind_annotate $callgrind_dir/$name.callgrind)" >&2
    results+=" ${name}_worker_ir=$((ir / callgrind_requests))"
  }
  callgrind_scenario static "$static_port" "$hit_body"
  callgrind_scenario hit "$hit_port" "$hit_body"
  callgrind_scenario hit_redis_only "$hit_redis_port" "$hit_body"
  callgrind_scenario proxy_pass "$proxy_port" "$miss_body"
  callgrind_scenario miss "$miss_port" "$miss_body"
  callgrind_scenario lib_static "$lib_static_port" "$lib_body"
  callgrind_scenario lib_hit "$lib_port" "$lib_body"
  echo "RESULT router_$([ -n "$count_syscalls" ] && echo syscalls || echo callgrind)${results} requests_per_scenario=$callgrind_requests"
  exit 0
fi

write_conf "$cached" "$lib_cached"
/usr/sbin/nginx -p "$work" -c "$work/nginx.conf" &
nginx_pid=$!; pids+=($nginx_pid)
wait_port "$static_port"
curl -s -o /dev/null -d "$hit_body" "http://127.0.0.1:$hit_port/"

post_script() {  # $1 = file, $2 = body
  cat > "$1" <<LUA
wrk.method = "POST"
wrk.body = '$2'
wrk.headers["Content-Type"] = "application/json"
LUA
}
post_script "$work/hit.lua" "$hit_body"
post_script "$work/miss.lua" "$miss_body"
post_script "$work/lib.lua" "$lib_body"

worker_pid=$(pgrep -P "$nginx_pid" | head -1)
tick_us=$((1000000 / $(getconf CLK_TCK)))
worker_ticks() { awk '{print $14 + $15}' "/proc/$worker_pid/stat"; }
declare -A cpu_us  # nginx worker CPU microseconds per request, by port (last round)
measure() {  # $1 = port, $2 = lua script; prints requests/s
  local out before after requests
  before=$(worker_ticks)
  out=$(wrk -t1 -c"$connections" -d"${seconds}s" -s "$2" "http://127.0.0.1:$1/")
  after=$(worker_ticks)
  if echo "$out" | grep -q "Non-2xx"; then echo "non-2xx answers on port $1" >&2; exit 1; fi
  requests=$(echo "$out" | awk '/requests in/ {print $1}')
  cpu_us[$1]=$(awk -v t="$((after - before))" -v u="$tick_us" -v n="$requests" 'BEGIN { printf "%.1f", (n > 0 ? t * u / n : 0) }')
  echo "$out" | awk '/Requests\/sec/ {printf "%d", $2}'
}
median() { printf '%s\n' "$@" | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }'; }

# Warm-up, then rounds in which each candidate runs right after its
# baseline; the median of the per-round ratios resists the noise of a
# shared machine.
for port in "$static_port" "$hit_port" "$hit_redis_port"; do measure "$port" "$work/hit.lua" > /dev/null; done
for port in "$proxy_port" "$miss_port"; do measure "$port" "$work/miss.lua" > /dev/null; done
for port in "$lib_static_port" "$lib_port"; do measure "$port" "$work/lib.lua" > /dev/null; done
hit_ratios=(); miss_ratios=(); lib_ratios=(); statics=(); hits=(); hit_redis=(); proxies=(); misses=(); lib_statics=(); libs=()
declare -A cpu_rounds  # worker us/request of each round, by port
cpu_hit_ratios=(); cpu_miss_ratios=()
for round in $(seq "$rounds"); do
  measure "$static_port" "$work/hit.lua" > "$work/rps"; s=$(cat "$work/rps")
  measure "$hit_port" "$work/hit.lua" > "$work/rps"; h=$(cat "$work/rps")
  measure "$hit_redis_port" "$work/hit.lua" > "$work/rps"; hr=$(cat "$work/rps")
  measure "$proxy_port" "$work/miss.lua" > "$work/rps"; p=$(cat "$work/rps")
  measure "$miss_port" "$work/miss.lua" > "$work/rps"; m=$(cat "$work/rps")
  measure "$lib_static_port" "$work/lib.lua" > "$work/rps"; ls_=$(cat "$work/rps")
  measure "$lib_port" "$work/lib.lua" > "$work/rps"; l=$(cat "$work/rps")
  echo "round $round: static=$s hit=$h hit_redis_only=$hr proxy_pass=$p miss=$m lib_static=$ls_ lib_hit=$l req/s;" \
       "worker us/request: static=${cpu_us[$static_port]} hit=${cpu_us[$hit_port]} hit_redis_only=${cpu_us[$hit_redis_port]}" \
       "proxy_pass=${cpu_us[$proxy_port]} miss=${cpu_us[$miss_port]}" >&2
  statics+=("$s"); hits+=("$h"); hit_redis+=("$hr"); proxies+=("$p"); misses+=("$m")
  hit_ratios+=("$(ratio "$h" "$s")"); miss_ratios+=("$(ratio "$m" "$p")")
  lib_statics+=("$ls_"); libs+=("$l"); lib_ratios+=("$(ratio "$l" "$ls_")")
  for port in "$static_port" "$hit_port" "$hit_redis_port" "$proxy_port" "$miss_port"; do
    cpu_rounds[$port]+=" ${cpu_us[$port]}"
  done
  cpu_hit_ratios+=("$(ratio "${cpu_us[$static_port]}" "${cpu_us[$hit_port]}")")
  cpu_miss_ratios+=("$(ratio "${cpu_us[$proxy_port]}" "${cpu_us[$miss_port]}")")
done
# The CPU figures reported: medians over the rounds, like the rates.
for port in "$static_port" "$hit_port" "$hit_redis_port" "$proxy_port" "$miss_port"; do
  # shellcheck disable=SC2086  # the list of numbers splits on purpose
  cpu_us[$port]=$(median ${cpu_rounds[$port]})
done
lib_static_rps=$(median "${lib_statics[@]}"); lib_rps=$(median "${libs[@]}")
static_rps=$(median "${statics[@]}"); hit_rps=$(median "${hits[@]}"); hit_redis_rps=$(median "${hit_redis[@]}")
proxy_rps=$(median "${proxies[@]}"); miss_rps=$(median "${misses[@]}")

echo "== WebSocket, cache hits" >&2
before=$(worker_ticks)
ws_out=$("$ws_load" --port "$hit_port" --connections "$connections" --depth 4 --seconds "$seconds" --message "$hit_body")
after=$(worker_ticks)
ws_messages=$(echo "$ws_out" | sed -n 's/.*messages=\([0-9]*\).*/\1/p')
ws_us=$(awk -v t="$((after - before))" -v u="$tick_us" -v n="$ws_messages" 'BEGIN { printf "%.1f", (n > 0 ? t * u / n : 0) }')
echo "$ws_out" >&2
ws_rps=$(echo "$ws_out" | sed -n 's/.*rps=\([0-9]*\).*/\1/p')
echo "== WebSocket, misses" >&2
ws_miss_out=$("$ws_load" --port "$miss_port" --connections "$connections" --depth 4 --seconds "$seconds" --message "$miss_body")
echo "$ws_miss_out" >&2
ws_miss_rps=$(echo "$ws_miss_out" | sed -n 's/.*rps=\([0-9]*\).*/\1/p')
case "$ws_out$ws_miss_out" in *"errors=0"*"errors=0"*) ;; *) echo "WebSocket errors" >&2; exit 1 ;; esac

echo "== Bursts of identical concurrent misses (backend answers after 2 s)" >&2
bursts=${BENCH_BURSTS:-3}; burst_size=50
backend_requests() { curl -s "http://127.0.0.1:$backend_port/stats" | sed -n 's/.*"requests":\([0-9]*\).*/\1/p'; }
before=$(backend_requests)
for burst in $(seq "$bursts"); do
  body='{"jsonrpc":"2.0","method":"cached.slow_burst","params":['"$burst"',"'"$$"'"],"id":1}'
  seq "$burst_size" | xargs -P "$burst_size" -I{} curl -s -o /dev/null -d "$body" "http://127.0.0.1:$hit_port/"
done
after=$(backend_requests)
coalesced_per_miss=$(ratio "$((after - before))" "$bursts")
echo "$bursts bursts of $burst_size: $((after - before)) upstream requests" >&2

echo "RESULT router cpu_hit_ratio=$(median "${cpu_hit_ratios[@]}") cpu_miss_ratio=$(median "${cpu_miss_ratios[@]}")" \
     "hit_ratio=$(median "${hit_ratios[@]}") miss_ratio=$(median "${miss_ratios[@]}") ws_rps=$ws_rps" \
     "lib_hit_ratio=$(median "${lib_ratios[@]}") coalesced_upstream_per_miss=$coalesced_per_miss" \
     "lib_static_rps=$lib_static_rps lib_hit_rps=$lib_rps bursts=$bursts burst_size=$burst_size" \
     "static_rps=$static_rps hit_rps=$hit_rps hit_redis_only_rps=$hit_redis_rps proxy_pass_rps=$proxy_rps miss_rps=$miss_rps" \
     "hit_redis_only_ratio=$(ratio "$hit_redis_rps" "$static_rps") ws_miss_rps=$ws_miss_rps rounds=$rounds connections=$connections seconds=$seconds" \
     "worker_us_static=${cpu_us[$static_port]} worker_us_hit=${cpu_us[$hit_port]} worker_us_hit_redis_only=${cpu_us[$hit_redis_port]}" \
     "worker_us_proxy_pass=${cpu_us[$proxy_port]} worker_us_miss=${cpu_us[$miss_port]} worker_us_ws_hit=$ws_us"
