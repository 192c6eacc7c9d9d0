#!/usr/bin/env bash
# Push over WebSocket (issue 29; run as `t/bench/run push`, at most 10 minutes).
#
# The stack as t/integration/push_websocket_test.cpp starts it: real nginx
# with ONE worker serving the wallet_history API and the router's WebSocket
# endpoint (/ws, the shipped per-client limits: jsonrpc_router_max_client_connections
# 64 per address, push 16 subscriptions of 100 accounts per connection; the
# shipped 30 s pings), PostgreSQL 15, wallet-indexer on hive-node-sim's
# synthetic chain (seed 7). The indexer first stores blocks 1..1000 (the
# chain held still), the BENCH_ACCOUNTS (2,000) accounts with the most
# events there are the subscribed ones, and push_bench_client opens
# BENCH_CLIENTS (10,000) WebSocket connections, 50 per source address
# (127.0.0.1, 127.0.0.2, ...: the router caps connections per address at
# 64), each with one subscription to BENCH_PER_CLIENT (4) of those accounts
# (so each account has clients * per_client / accounts subscribers). Then the
# chain produces a block every BENCH_BLOCK_INTERVAL_MS (300) for
# BENCH_SECONDS (60): ten times mainnet's wallet event rate. Mainnet: the
# synthetic chain at mainnet density has ~21.6 wallet events a block
# (t/bench/scale.sh, docs/store-layout.md: ~19 million a month), a block
# every 3 s, so ~7.2 events/s; one block per 300 ms is ~72 events/s.
#
# Measured:
#   - every event delivered exactly once to every subscriber of its account:
#     each client's notifications against the store after the run (its
#     accounts' spec-type events above the block the subscriptions started
#     after): lost, repeated, unexpected;
#   - the delay from the writer's commit to the client's receipt, p50/p99:
#     the commit time of a block is the writer's clock at the NOTIFY naming
#     it, its transaction's last statement (the payload's "committed_us",
#     migration 0028), read by push_bench_client's own LISTEN connection
#     (without it: when that NOTIFY arrives there, as at nginx's listener);
#     receipt is when the client's epoll loop read the frame (its own lag
#     counts as delay);
#   - notifications per second (first to last received);
#   - the nginx worker's CPU (its time on a CPU, /proc/PID/schedstat) per
#     notification over the run (from the last subscription to the client's
#     report: the pings of 10,000 idle connections included), beside the
#     same worker's CPU per answer of a plain WebSocket echo of a frame of
#     the notifications' mean size in the same nginx afterwards:
#     router-ws-load (32 connections) sending a call the router answers
#     from its memory cache (route `^cached\.` cached 300 s, Redis behind
#     it), whose answer router-test-backend padded to the notifications'
#     mean size, the cheapest WebSocket answer of this nginx; median of
#     BENCH_ROUNDS rounds each way:
#       - like for like (echo_burst_cpu_us, the ratio's): the run's frames
#         a second, in a burst every block interval as the notifications
#         of a block come, one a connection (200 connections), while the
#         clients' 10,000 connections stay open, idle (their pings counted
#         as in the run: the connections opened together, so their pings
#         come together every 30 s; one round of BENCH_PACED_SECONDS (30),
#         a whole ping interval, as the run holds one per 30 s);
#       - the same rate evenly paced over 32 connections, the same way
#         (echo_paced_cpu_us: a wake-up of the worker for nearly every answer);
#       - saturated (echo_cpu_us): 32 connections with 4 messages in flight
#         each, BENCH_ECHO_SECONDS (5) a round, BENCH_ROUNDS (3) rounds, the
#         clients gone.
# Goals (issue 29): delay_p99_ms <= 100, lost=0, repeated=0, cpu_ratio <= 2.
# BENCH_PERF=FILE records the worker's profile over the run (perf record -g).
#
# Ends with `RESULT push subscribers=.. delay_p50_ms=.. delay_p99_ms=..
# notifications_per_s=.. lost=.. repeated=.. cpu_us_per_notification=..
# echo_cpu_us=.. cpu_ratio=.. ...`.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${WALLET_BUILD_DIR:-$root/build}
clients=${BENCH_CLIENTS:-10000}
per_client=${BENCH_PER_CLIENT:-4}
accounts_n=${BENCH_ACCOUNTS:-2000}
seconds=${BENCH_SECONDS:-60}
interval_ms=${BENCH_BLOCK_INTERVAL_MS:-300}
rounds=${BENCH_ROUNDS:-3}
echo_seconds=${BENCH_ECHO_SECONDS:-5}
paced_seconds=${BENCH_PACED_SECONDS:-30}
per_address=50
addresses=$(( (clients + per_address - 1) / per_address ))
module=$build/ngx_module/ngx_http_wallet_module.so
sim=$build/t/sim/hive-node-sim
indexer=$build/indexer/wallet-indexer
setup=$build/common/wallet-db-setup
client=$build/t/bench/push_bench_client
backend=$build/t/backends/router-test-backend
ws_load=$build/t/backends/router-ws-load
source "$here/lib.bash"
for tool in "$module" "$sim" "$indexer" "$setup" "$client" "$backend" "$ws_load" "$bench_pg_bin/postgres" /usr/bin/redis-server; do
  [ -e "$tool" ] || { echo "push.sh: missing $tool (build first)" >&2; exit 1; }
done
[ "$addresses" -le 254 ] || { echo "push.sh: at most $((254 * per_address)) clients" >&2; exit 2; }

work=$(mktemp -d "${TMPDIR:-/tmp}/wallet-bench-push-XXXXXX")
pids=()
trap bench_cleanup EXIT

# ---- PostgreSQL 15 and the store -------------------------------------------
pg_password=bench-superuser-password-1
bench_pg_start "$work" "$pg_password" -c shared_buffers=256MB
export DB_USER=postgres DB_PASSWORD=$pg_password DB_NAME=wallet DB_BIND_HOST=127.0.0.1 DB_BIND_PORT=$pg_port
export WALLET_WRITER_PASSWORD=bench-writer-password-1 WALLET_API_READER_PASSWORD=bench-reader-password-1
export WALLET_API_CURSOR_SECRET=bench-cursor-secret-0123456789
"$setup" >"$work/setup.log" 2>&1
db_url="postgresql://postgres:$pg_password@127.0.0.1:$pg_port/wallet"
sql() { psql -qAt "$db_url" -c "$1"; }

# ---- the chain, held still at block 1000, and the indexer --------------------
sim_port=$(free_port)
"$sim" --synthetic --seed 7 --length 1000 --block-interval-ms 0 --port "$sim_port" >"$work/sim.log" 2>&1 &
pids+=($!)
wait_port "$sim_port"
sim_control() { curl -sf -d "$1" "http://127.0.0.1:$sim_port/sim/control" >/dev/null; }
env CHAIN_RPC_URL="http://127.0.0.1:$sim_port" INDEXER_START_BLOCK=1 INDEXER_HEALTH_ADDR= INDEXER_POLL_INTERVAL_MS=100 \
  "$indexer" >"$work/indexer.log" 2>&1 &
indexer_pid=$!
pids+=($indexer_pid)
checkpoint() { sql "SELECT coalesce((SELECT block_num FROM indexer_checkpoint), 0)" 2>/dev/null || echo 0; }
# Until the checkpoint, at least $1, stays where it is for a second (the
# chain is still; the indexer stays a few blocks behind the head).
settle() {
  local last=-1 now
  for _ in $(seq 180); do
    now=$(checkpoint)
    [ "$now" = "$last" ] && [ "$now" -ge "$1" ] && return 0
    last=$now
    kill -0 "$indexer_pid" 2>/dev/null || { echo "push.sh: wallet-indexer exited:" >&2; cat "$work/indexer.log" >&2; exit 1; }
    sleep 1
  done
  echo "push.sh: the indexer did not reach block $1" >&2; exit 1
}
settle 990
# Where a subscription without a cursor starts (wh_push_head, api_sql.cpp).
after_block=$(sql "SELECT greatest((SELECT block_num FROM indexer_checkpoint), (SELECT max(block_num) FROM wallet_blocks), 0)")
sql "SELECT a.name FROM wallet_events e JOIN wallet_accounts a ON a.id = e.account_id WHERE NOT e.wide
     GROUP BY a.name ORDER BY count(*) DESC, a.name LIMIT $accounts_n" > "$work/accounts.txt"
echo "store: blocks 1..$after_block, $(sql 'SELECT count(*) FROM wallet_events') events; $(wc -l < "$work/accounts.txt") accounts subscribed" >&2

# ---- nginx: one worker, the API, the router's WebSocket, and the echo server --
redis_port=$(free_port); backend_port=$(free_port); port=$(free_port); echo_port=$(free_port)
/usr/bin/redis-server --port "$redis_port" --bind 127.0.0.1 --save "" --appendonly no --dir "$work" >"$work/redis.log" 2>&1 &
pids+=($!)
wait_port "$redis_port"
cat > "$work/routes.json" <<JSON
{"targets": {"bench": "http://127.0.0.1:$backend_port"}, "timeouts": 10,
 "routes": {"^cached\\\\.": {"target": "bench", "cache": 300}}, "default-cache": 0}
JSON
mkdir -p "$work/logs" "$work/tmp"
{
  nofile=$((2 * clients + 1000)); [ "$nofile" -le "$(ulimit -Hn)" ] || nofile=$(ulimit -Hn)
  echo "daemon off; master_process on; worker_processes 1; worker_rlimit_nofile $nofile;"
  [ "$(id -u)" = 0 ] && echo "user root root;"
  echo "error_log $work/logs/error.log warn; pid $work/logs/nginx.pid;"
  echo "load_module $module;"
  grep '^env ' "$root/conf/nginx/wallet-history-env.conf"
  echo "events { worker_connections $((clients + 1000)); }"
  cat <<CONF
http {
  access_log off;
  client_body_temp_path $work/tmp/body; proxy_temp_path $work/tmp/proxy;
  fastcgi_temp_path $work/tmp/fastcgi; uwsgi_temp_path $work/tmp/uwsgi; scgi_temp_path $work/tmp/scgi;
  server {
    listen 127.0.0.1:$port;
    client_max_body_size 1m;
    location = /metrics { jsonrpc_router_metrics; }
    location / { wallet_history_api; }
    location = /ws {
      jsonrpc_router $work/routes.json;
      jsonrpc_router_redis 127.0.0.1:$redis_port;
      jsonrpc_router_ws_idle_timeout 120s;
      jsonrpc_router_ws_ping_interval 30s;
    }
  }
  server {
    listen 127.0.0.1:$echo_port;
    location / { jsonrpc_router $work/routes.json; jsonrpc_router_redis 127.0.0.1:$redis_port; }
  }
}
CONF
} > "$work/nginx.conf"
/usr/sbin/nginx -p "$work" -c "$work/nginx.conf" >"$work/nginx.out" 2>&1 &
nginx_pid=$!
pids+=($nginx_pid)
wait_port "$port"
worker_pid=$(pgrep -P "$nginx_pid" | head -1)
worker_ticks() { awk '{print $14 + $15}' "/proc/$worker_pid/stat"; }
# Microseconds the worker ran, from the scheduler (nanoseconds: short echo
# rounds are measured as precisely as the run).
worker_cpu_us() { awk '{printf "%d", $1 / 1000}' "/proc/$worker_pid/schedstat"; }

# ---- the subscribers ---------------------------------------------------------
"$client" "$port" "$clients" "$addresses" "$work/accounts.txt" "$per_client" "$db_url" "$work/ready" "$after_block" \
  >"$work/client.out" 2>"$work/client.log" &
client_pid=$!
pids+=($client_pid)
for _ in $(seq 3000); do
  [ -f "$work/ready" ] && break
  kill -0 "$client_pid" 2>/dev/null || { echo "push.sh: push_bench_client failed:" >&2; cat "$work/client.log" >&2; exit 1; }
  sleep 0.1
done
[ -f "$work/ready" ] || { echo "push.sh: the clients did not all subscribe:" >&2; tail "$work/client.log" >&2; exit 1; }
echo "$clients clients subscribed over $addresses addresses" >&2
# A subscription is answered at once, then reads where it starts (the
# highest block stored) and joins the live ones: the chain stays still until
# that is done for all, i.e. until the worker is idle (asleep, and at most
# 30 ms of CPU a second, its pings) for three seconds in a row and no
# statement of the API runs.
worker_state() { awk '{print $3}' "/proc/$worker_pid/stat"; }
quiet=0
for _ in $(seq 300); do
  before=$(worker_ticks)
  sleep 1
  active=$(sql "SELECT count(*) FROM pg_stat_activity WHERE usename = 'wallet_api_reader' AND state = 'active'")
  if [ $(( $(worker_ticks) - before )) -le 3 ] && [ "$(worker_state)" = S ] && [ "$active" = 0 ]; then
    quiet=$((quiet + 1)); [ "$quiet" -ge 3 ] && break
  else
    quiet=0
  fi
done

# ---- the run: a block every interval_ms for `seconds` --------------------------
cpu0=$(worker_cpu_us)
# BENCH_PERF=FILE: the worker's profile over the run (perf record -g), for perf report -i FILE.
if [ -n "${BENCH_PERF:-}" ]; then
  perf record -F 499 -g -p "$worker_pid" -o "$BENCH_PERF" >"$work/perf.log" 2>&1 &
  perf_pid=$!
fi
head0=$(curl -sf "http://127.0.0.1:$sim_port/sim/status" | sed -n 's/.*"head":\([0-9]*\).*/\1/p')
sim_control "{\"block_interval_ms\": $interval_ms}"
sleep "$seconds"
sim_control '{"block_interval_ms": 0}'
head1=$(curl -sf "http://127.0.0.1:$sim_port/sim/status" | sed -n 's/.*"head":\([0-9]*\).*/\1/p')
settle $((head1 - 10))
kill -USR1 "$client_pid"
# Its report, then it holds its connections open, idle, for the echo.
until [ -f "$work/ready.done" ]; do
  kill -0 "$client_pid" 2>/dev/null || { echo "push.sh: push_bench_client failed:" >&2; cat "$work/client.log" >&2; exit 1; }
  sleep 0.1
done
cpu1=$(worker_cpu_us)
if [ -n "${BENCH_PERF:-}" ]; then kill -INT "$perf_pid"; wait "$perf_pid" || true; fi
result=$(cat "$work/client.out")
echo "clients: $result" >&2
grep -v "clients subscribed\|connections open" "$work/client.log" | head -12 >&2 || true
echo "store: checkpoint $(checkpoint), highest block $(sql 'SELECT max(block_num) FROM wallet_events')" >&2
field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p;s/^$1=\([^ ]*\).*/\1/p" <<<"$result" | head -1; }
notifications=$(field notifications)
events=$(sql "SELECT count(*) FROM wallet_events WHERE block_num > $after_block")
blocks=$((head1 - head0))
push_us=$(awk -v t="$((cpu1 - cpu0))" -v n="$notifications" 'BEGIN { printf "%.1f", (n > 0 ? t / n : 0) }')
metrics=$(curl -sf "http://127.0.0.1:$port/metrics")
metric() { awk -v m="$1" '$1 == m { print $2 }' <<<"$metrics"; }
worker_delay_ms=$(awk -v s="$(metric wallet_history_push_delay_seconds_sum)" -v c="$(metric wallet_history_push_delay_seconds_count)" \
  'BEGIN { printf "%.1f", (c > 0 ? 1000 * s / c : 0) }')
echo "worker: $(((cpu1 - cpu0) / 1000)) ms of CPU for $notifications notifications: $push_us us each;" \
  "metrics: notifications_total=$(metric wallet_history_push_notifications_total)" \
  "delay mean from NOTIFY at the worker to the send ${worker_delay_ms} ms," \
  "slow consumers dropped $(metric 'wallet_history_push_dropped_connections_total{reason="slow_consumer"}')" >&2

# ---- the echo: the same nginx worker answering a cached call of the notifications' size --
mean_bytes=$(field mean_bytes)
empty_answer='{"jsonrpc":"2.0","result":{"backend":"bench","padding":""},"id":1}'
padding=$(( mean_bytes > ${#empty_answer} ? mean_bytes - ${#empty_answer} : 1 ))
"$backend" --name bench --port "$backend_port" --big-bytes "$padding" >"$work/backend.log" 2>&1 &
pids+=($!)
wait_port "$backend_port"
echo_body='{"jsonrpc":"2.0","method":"cached.big","params":[],"id":1}'
curl -sf -o /dev/null -d "$echo_body" "http://127.0.0.1:$echo_port/"
answer=$(curl -sf -D "$work/echo_headers" -d "$echo_body" "http://127.0.0.1:$echo_port/")
grep -qi '^x-jsonrpc-cache: HIT' "$work/echo_headers" || { echo "push.sh: the echo's call is not cached: $answer" >&2; exit 1; }
# echo_rounds NAME ROUNDS SECONDS ARGS...: rounds of router-ws-load; prints
# the median of the worker's microseconds of CPU per answer.
echo_rounds() {
  local name=$1 round_count=$2 round_seconds=$3 round before after out messages rounds_us=()
  shift 3
  for round in $(seq "$round_count"); do
    before=$(worker_cpu_us)
    out=$("$ws_load" --port "$echo_port" --connections 32 --seconds "$round_seconds" --message "$echo_body" "$@")
    after=$(worker_cpu_us)
    case "$out" in *"errors=0"*) ;; *) echo "push.sh: echo errors: $out" >&2; exit 1 ;; esac
    messages=$(sed -n 's/.*messages=\([0-9]*\).*/\1/p' <<<"$out")
    rounds_us+=("$(awk -v t="$((after - before))" -v n="$messages" 'BEGIN { printf "%.1f", (n > 0 ? t / n : 0) }')")
    echo "echo $name round $round: $out, ${rounds_us[-1]} us/answer (answer ${#answer} bytes)" >&2
  done
  median <<<"${rounds_us[*]}"
}
# Like for like: the run's frame rate, beside the clients' idle connections.
rate=$(field notifications_per_s)
# (From addresses of their own: the clients' take the router's per-address cap.)
echo_burst_us=$(echo_rounds "at $rate/s in bursts every ${interval_ms} ms beside $clients idle connections" 1 "$paced_seconds" \
  --rate "$rate" --burst-ms "$interval_ms" --connections 200 --source 127.0.1.1 --sources 4) || exit 1
echo_paced_us=$(echo_rounds "evenly paced at $rate/s beside $clients idle connections" 1 "$paced_seconds" --rate "$rate" \
  --source 127.0.1.1) || exit 1
kill -TERM "$client_pid"
wait "$client_pid" || { echo "push.sh: push_bench_client failed:" >&2; cat "$work/client.log" >&2; exit 1; }
# Saturated, alone.
echo_us=$(echo_rounds saturated "$rounds" "$echo_seconds" --depth 4) || exit 1
grep -E '\[(alert|emerg|crit)\]' "$work/logs/error.log" >&2 && { echo "push.sh: nginx logged fatal errors" >&2; exit 1; }

echo "RESULT push subscribers=$clients delay_p50_ms=$(field delay_p50_ms) delay_p99_ms=$(field delay_p99_ms)" \
  "notifications_per_s=$(field notifications_per_s) lost=$(field lost) repeated=$(field repeated)" \
  "cpu_us_per_notification=$push_us echo_burst_cpu_us=$echo_burst_us cpu_ratio=$(ratio_of "$push_us" "$echo_burst_us")" \
  "cpu_ratio_vs=echo_bursts_per_block_beside_idle echo_paced_cpu_us=$echo_paced_us echo_cpu_us=$echo_us" \
  "cpu_ratio_paced=$(ratio_of "$push_us" "$echo_paced_us") cpu_ratio_saturated=$(ratio_of "$push_us" "$echo_us")" \
  "unexpected=$(field unexpected) closed=$(field closed) notifications=$notifications expected=$(field expected)" \
  "delay_max_ms=$(field delay_max_ms) no_commit_time=$(field no_commit_time) worker_delay_mean_ms=$worker_delay_ms" \
  "events=$events blocks=$blocks events_per_s=$(awk -v e="$events" -v s="$seconds" 'BEGIN { printf "%.1f", e / s }')" \
  "block_interval_ms=$interval_ms seconds=$seconds accounts=$accounts_n per_client=$per_client addresses=$addresses" \
  "mean_bytes=$mean_bytes echo_answer_bytes=${#answer} load_avg=$(cut -d' ' -f1 /proc/loadavg) cores=$(nproc)"
