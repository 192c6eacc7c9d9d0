#!/usr/bin/env bash
# Benchmark of the wallet_history API (run as `t/bench/run api`).
#
# A private PostgreSQL gets 5,000,000 synthetic events (COPY from
# api_bench_tool) over 100,000 accounts, one of them with 1,000,000 events.
# For each method, wrk drives nginx (one worker, 32 connections; the API pool
# sized for this machine, see pool_size) and, next to it in the same run, pgbench
# runs the same prepared SQL with 32 connections, with the parameters a warm
# worker sends (the account's remembered id and the store's generation). Each load generator runs at
# its fastest thread count on two cores: wrk one, pgbench two. The machine is
# shared and noisy (a fixed CPU loop took 80 to 300 ms from one second to the
# next), so the two alternate in short rounds and each figure is the median
# of the rounds (a ratio is the median of the per-round ratios). Both sides
# are measured warm: the API's pool stands, and pgbench keeps its connections
# from round to round (see pgbench_window).
# Ends with `RESULT api page_ratio=<smallest API/pgbench ratio of the paged
# methods> totals_ratio=<the same of lifetime totals> totals_p99_ms=<p99 of
# lifetime totals of the big account> worker_floor_ratio=<the largest
# <scenario>_worker_floor_ratio>` and further figures, among them
# <scenario>_worker_us: the nginx worker's CPU time per request over the
# scenario's wrk rounds (its schedstat run time), <scenario>_worker_floor_ratio:
# worker_us / floor_worker_us (issue #31's goal: at most 2), and
# big_first_page_default_pool_ratio: a second nginx with the pool at its
# shipped default (10) against the same rounds' pgbench.
# The HTTP floor: in every round the same nginx and client also exchange the
# scenario's answer as a fixed response (`return 200` from memory):
# <scenario>_floor_rps, _floor_worker_us, and <scenario>_floor_ratio, the
# ratio the API would reach if its requests cost that exchange plus
# PostgreSQL's statement and nothing else on the same cores,
# floor/(floor + pgbench) per round: how far the goal can be reached where
# client, nginx and PostgreSQL share the CPU.
#
# With BENCH_CALLGRIND_REQUESTS=N, no wrk or pgbench rounds: a third nginx
# (one process, master_process off) runs under valgrind's callgrind, and each
# scenario sends it exactly N requests over 32 keep-alive connections with
# its instrumentation on (after N/4 uninstrumented warm-up requests). Ends
# with `RESULT api_callgrind <scenario>_worker_ir=<instructions per request>
# <scenario>_floor_ir=<the same of the HTTP floor> ...`; the profiles stay in BENCH_CALLGRIND_DIR (default ./callgrind-api) for
# callgrind_annotate. Instruction counts are stable on a shared machine where
# times are not. A small data set is enough for it (the pages are as big):
# BENCH_ACCOUNTS=1000 BENCH_EVENTS=100000 BENCH_BIG_EVENTS=100000.
#
# Environment: WALLET_BUILD_DIR (set by t/bench/run), BENCH_ROUNDS (default 24)
# of BENCH_SECONDS (default 1) each, BENCH_ACCOUNTS / BENCH_EVENTS /
# BENCH_BIG_EVENTS to scale the data set, BENCH_API_POOL (the API's
# WALLET_API_DB_MAX_CONNS; default twice the cores), BENCH_WORKERS (the API
# nginx's worker_processes, default 1), BENCH_PG_SOCKET (1: the API and
# pgbench over PostgreSQL's Unix socket instead of loopback TCP).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${WALLET_BUILD_DIR:-$root/build}
seconds=${BENCH_SECONDS:-1}
rounds=${BENCH_ROUNDS:-24}
accounts=${BENCH_ACCOUNTS:-100000}
events=${BENCH_EVENTS:-4000000}      # normal accounts; the big one adds its own
big_events=${BENCH_BIG_EVENTS:-1000000}
workers=${BENCH_WORKERS:-1}
callgrind_requests=${BENCH_CALLGRIND_REQUESTS:-}
callgrind_dir=${BENCH_CALLGRIND_DIR:-$PWD/callgrind-api}
big=bigwhale
normal=a000123
tool=$build/t/bench/api_bench_tool
module=$build/ngx_module/ngx_http_wallet_module.so
source "$here/lib.bash"
for f in "$tool" "$module" "$bench_pg_bin/postgres"; do [ -e "$f" ] || { echo "missing $f" >&2; exit 1; }; done
command -v wrk >/dev/null || { echo "wrk is missing (scripts/install-deps)" >&2; exit 1; }
if [ -n "$callgrind_requests" ]; then
  command -v valgrind >/dev/null || { echo "valgrind is missing" >&2; exit 1; }
fi

work=$(mktemp -d /tmp/wallet-bench-api.XXXXXX)
nginx_pids=()
pgbench_pid=""
cleanup() {
  local pid
  [ -n "$pgbench_pid" ] && kill -CONT "$pgbench_pid" 2>/dev/null && kill "$pgbench_pid" 2>/dev/null || true
  for pid in "${nginx_pids[@]}"; do kill -QUIT "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true; done
  bench_pg_stop "$work"
  rm -rf "$work"
}
trap cleanup EXIT

log() { echo "[api bench] $*" >&2; }

# ---- PostgreSQL ----------------------------------------------------------------
superpass=bench-superuser-$RANDOM$RANDOM
bench_pg_start "$work" "$superpass" -c max_connections=200 -c shared_buffers=2GB -c work_mem=64MB \
  -c maintenance_work_mem=1GB -c max_wal_size=8GB -c checkpoint_timeout=30min

export DB_USER=postgres DB_PASSWORD=$superpass DB_NAME=wallet DB_BIND_HOST=127.0.0.1 DB_BIND_PORT=$pg_port
export WALLET_WRITER_PASSWORD=bench-writer-password-1 WALLET_API_READER_PASSWORD=bench-reader-password-1
"$build/common/wallet-db-setup" >&2
writer="postgresql://wallet_writer:$WALLET_WRITER_PASSWORD@127.0.0.1:$pg_port/wallet"
reader="postgresql://wallet_api_reader:$WALLET_API_READER_PASSWORD@127.0.0.1:$pg_port/wallet"
# BENCH_PG_SOCKET=1: the API and pgbench both reach PostgreSQL by its Unix
# socket (a database on the API's host), not by loopback TCP.
if [ "${BENCH_PG_SOCKET:-0}" = 1 ]; then
  reader="postgresql://wallet_api_reader:$WALLET_API_READER_PASSWORD@/wallet?host=$work/run&port=$pg_port"
fi

# ---- data (bench_load_events) -------------------------------------------------------
load_start=$(date +%s)
log "loading $((events + big_events)) events over $accounts accounts ($big: $big_events)"
bench_load_events "$writer" "$tool" "$accounts" "$events" "$big" "$big_events"
load_seconds=$(( $(date +%s) - load_start ))
total_rows=$(psql -tAq "$writer" -c "SELECT count(*) FROM wallet_events")
agg_rows=$(psql -tAq "$writer" -c "SELECT count(*) FROM wallet_reward_daily WHERE account_id = (SELECT id FROM wallet_accounts WHERE name = '$big')")
log "loaded $total_rows rows in ${load_seconds}s ($agg_rows daily aggregate rows for $big)"

export WALLET_API_RATE_RPS=0 WALLET_API_MAX_INFLIGHT=0
export WALLET_API_CURSOR_SECRET=bench-cursor-secret-0123456789

# ---- scenarios ---------------------------------------------------------------------
# The deep page resumes half-way through the big account (row 500,000 of 1,000,000).
read -r d_epoch d_block d_seq d_role < <(psql -tAq -F ' ' "$reader" -c \
  "SELECT extract(epoch FROM ts)::bigint, block_num, block_seq, wallet_role_name(role) FROM wallet_events
   WHERE account_id = (SELECT id FROM wallet_accounts WHERE name = '$big')
   ORDER BY block_num DESC, block_seq DESC, role DESC OFFSET $((big_events / 2 - 1)) LIMIT 1")
d_cursor=$("$tool" cursor "$WALLET_API_CURSOR_SECRET" "$big" "$d_epoch" "$d_block" "$d_seq" "$d_role")
rpc() {  # method params-json
  echo "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"wallet_history.$1\",\"params\":$2}"
}
declare -A body
body[normal_page]=$(rpc get_wallet_history "{\"account\":\"$normal\"}")
body[big_first_page]=$(rpc get_wallet_history "{\"account\":\"$big\"}")
body[big_deep_page]=$(rpc get_wallet_history "{\"account\":\"$big\",\"cursor\":\"$d_cursor\"}")
body[curation_page]=$(rpc get_curation_rewards "{\"account\":\"$big\"}")
body[totals]=$(rpc get_reward_totals "{\"account\":\"$big\"}")
scenarios=(normal_page big_first_page big_deep_page curation_page totals)

# ---- nginx -------------------------------------------------------------------------
# The API's pool is sized like a PostgreSQL pool on its host: about twice the
# cores. Statements beyond what the cores run at once only queue inside
# PostgreSQL, and their extra backends cost context switches and idle time
# (on two cores, a pool of 4 served up to a quarter more pages than one of 10,
# the shipped default, which a second nginx measures on the big first page).
pool_size=${BENCH_API_POOL:-$((2 * $(nproc)))}
default_pool_size=10  # the shipped default of WALLET_API_DB_MAX_CONNS (spec 000)

# The HTTP floor: beside the API, the same nginx serves each scenario's answer
# as a fixed response of the same bytes (`return 200` from memory, location
# /<scenario> of a second server), to the same client. What the API's worker
# spends beyond it is the API's own work. A configuration token holds at most
# 4 KB, so the answer is set in chunks that `return` joins.
floor_server() {  # port; the answers in $work/floor/<scenario>.json
  local port=$1 name
  echo "server { listen 127.0.0.1:$port; default_type application/json;"
  for name in "${scenarios[@]}"; do
    python3 - "$work/floor/$name.json" "$name" <<'PY'
import sys
text = open(sys.argv[1], encoding="utf-8").read()
if "$" in text:
    sys.exit("the fixed answer holds '$', which nginx would read as a variable")
chunks = [text[i:i + 3000] for i in range(0, len(text), 3000)]
escape = lambda s: s.replace("\\", "\\\\").replace("'", "\\'")
print("  location = /%s {" % sys.argv[2])
for i, chunk in enumerate(chunks):
    print("    set $floor_%d '%s';" % (i, escape(chunk)))
print("    return 200 %s;" % "".join("$floor_%d" % i for i in range(len(chunks))))
print("  }")
PY
  done
  echo "}"
}

started_port=""
started_floor_port=""
start_nginx() {  # name pool-size [workers [command-prefix...]]; sets started_port (and started_floor_port)
  local name=$1 pool=$2 include=""
  shift 2
  started_port=$(free_port)
  if [ -d "$work/floor" ]; then
    started_floor_port=$(free_port)
    while [ "$started_floor_port" = "$started_port" ]; do started_floor_port=$(free_port); done
    include=$work/floor-$name.conf
    floor_server "$started_floor_port" > "$include"
  fi
  BENCH_NGINX_HTTP_INCLUDE=$include WALLET_API_DB_MAX_CONNS=$pool \
    bench_api_nginx "$work/nginx-$name" "$started_port" "$module" "$root" "$@"
  nginx_pids+=("$bench_nginx_pid")
}
# The nginx with the shipped default pool starts first: its answers become
# the fixed responses of the others' floor servers.
start_nginx default-pool "$default_pool_size"
default_pool_port=$started_port
mkdir -p "$work/floor.tmp"
for name in "${scenarios[@]}"; do
  curl -s -H 'Content-Type: application/json' --data "${body[$name]}" -o "$work/floor.tmp/$name.json" \
    -w '%{http_code}' "http://127.0.0.1:$default_pool_port/" | grep -qx 200 ||
    { echo "scenario $name failed: $(head -c 300 "$work/floor.tmp/$name.json")" >&2; exit 1; }
  grep -q '"result"' "$work/floor.tmp/$name.json" ||
    { echo "scenario $name failed: $(head -c 300 "$work/floor.tmp/$name.json")" >&2; exit 1; }
done
mv "$work/floor.tmp" "$work/floor"
start_nginx api "$pool_size" "$workers"
api_port=$started_port
api_floor_port=$started_floor_port
api_master=${nginx_pids[-1]}
log "API pool: $pool_size connections, $workers worker(s) (second nginx: $default_pool_size); floor on port $api_floor_port"
if [ -n "$callgrind_requests" ]; then
  mkdir -p "$callgrind_dir"
  rm -f "$callgrind_dir"/callgrind.out.*
  start_nginx callgrind "$pool_size" 1 valgrind --tool=callgrind --instr-atstart=no \
    --callgrind-out-file="$callgrind_dir/callgrind.out.%p" --log-file="$work/valgrind.log"
  callgrind_port=$started_port
  callgrind_floor_port=$started_floor_port
  callgrind_pid=${nginx_pids[-1]}
  log "callgrind: nginx pid $callgrind_pid on port $callgrind_port, $callgrind_requests requests per scenario"
fi

# The nginx worker processes' CPU time so far, in nanoseconds (their
# schedstat run time: exact, where utime and stime count 10 ms ticks).
workers_cpu_ns() {
  local pid total=0 ns
  for pid in $(ps -o pid= --ppid "$api_master"); do
    read -r ns _ < "/proc/$pid/schedstat"
    total=$((total + ns))
  done
  echo "$total"
}

if [ -n "${BENCH_HOLD_SECONDS:-}" ]; then  # for investigation: the stack stays up
  log "holding: reader=$reader api=http://127.0.0.1:$api_port/ default_pool_api=http://127.0.0.1:$default_pool_port/ floor=http://127.0.0.1:$api_floor_port/<scenario>"
  sleep "$BENCH_HOLD_SECONDS"
fi

wrk_round() {  # lua-file [url] -> "req/s p99_ms requests"
  local out
  out=$(wrk -t1 -c32 -d"${seconds}s" --latency -s "$1" "${2:-http://127.0.0.1:$api_port/}")
  if grep -q 'Non-2xx' <<<"$out"; then echo "non-2xx answers: $(grep Non-2xx <<<"$out")" >&2; fi
  echo "$(awk '/^Requests\/sec:/ { print $2 }' <<<"$out") $(to_ms "$(awk '$1 == "99%" { print $2 }' <<<"$out")")" \
    "$(awk '/ requests in / { print $1 }' <<<"$out")"
}
# pgbench in step with wrk, warm: one pgbench per scenario runs all along
# with a per-transaction log, paused (SIGSTOP) while wrk runs and resumed for
# a window as long as a wrk round after each. A window's rate counts the
# transactions that ended in it after its first 0.2 s (answers that arrived
# while paused come in at once on resuming). Its connections stay open, like
# the API's pool: a fresh pgbench's first second (32 backends connecting and
# preparing) ran a third slower. The log costs pgbench about a microsecond of
# its ~400 per transaction.
pgbench_start() {  # name sql-file vars...; a warm-up round, then paused
  local name=$1 file=$2
  shift 2
  pgbench -n -M prepared -c 32 -j 2 -T 3600 -l --log-prefix="$work/$name.tx" -f "$file" "$@" "$reader" \
    > "$work/$name.pgbench" 2>&1 &
  pgbench_pid=$!
  pgbench_windows=""
  sleep "$seconds"
  pgbench_pause
}
pgbench_pause() {
  kill -0 "$pgbench_pid" 2>/dev/null || { echo "pgbench failed: $(cat "$work"/*.pgbench)" >&2; exit 1; }
  kill -STOP "$pgbench_pid"
  sleep 0.05  # its statements in flight finish before wrk starts
}
pgbench_window() {
  local from to
  kill -CONT "$pgbench_pid"
  from=$(date +%s.%N)
  sleep "$seconds"
  to=$(date +%s.%N)
  pgbench_pause
  pgbench_windows+=" $from $to"
}
pgbench_finish() {  # name; sets pgbench_rates: the windows' tps, in order
  kill -CONT "$pgbench_pid"
  sleep 0.5  # the last window's lines leave pgbench's log buffers
  kill "$pgbench_pid"  # its unflushed log tail lies after every window
  wait "$pgbench_pid" 2>/dev/null || true
  pgbench_pid=""
  pgbench_rates=$(cat "$work/$1.tx".* | awk -v windows="$pgbench_windows" -v skip=0.2 '
    BEGIN { n = split(windows, w, " ") / 2; for (i = 1; i <= n; i++) { from[i] = w[2 * i - 1] + skip; to[i] = w[2 * i] } }
    { t = $5 + $6 / 1e6; for (i = 1; i <= n; i++) if (t >= from[i] && t < to[i]) { count[i]++; break } }
    END { for (i = 1; i <= n; i++) { if (!count[i]) exit 1; printf "%.1f ", count[i] / (to[i] - from[i]) } }') ||
    { echo "pgbench ran no transaction in a window: $(cat "$work/$1.pgbench")" >&2; exit 1; }
  rm -f "$work/$1.tx".*
}

# Instructions of the callgrind nginx per request: exactly N requests with
# the instrumentation on, after N/4 without it (warm-up).
callgrind_count() {  # profile-name port rpc-body path; prints instructions per request
  local name=$1 port=$2 body=$3 path=$4 profile ir
  "$tool" load "$port" "$body" $((callgrind_requests / 4)) 32 "$path" >/dev/null
  callgrind_control -i on "$callgrind_pid" >/dev/null 2>&1
  "$tool" load "$port" "$body" "$callgrind_requests" 32 "$path" >/dev/null
  callgrind_control -i off "$callgrind_pid" >/dev/null 2>&1
  callgrind_control -d "$name" "$callgrind_pid" >/dev/null 2>&1
  profile=$(ls -t "$callgrind_dir"/callgrind.out.*.[0-9]* | head -1)
  mv "$profile" "$callgrind_dir/$name.callgrind"
  ir=$(awk '/^totals:/ { print $2; exit }' "$callgrind_dir/$name.callgrind")
  echo $((ir / callgrind_requests))
}
# The API's and the floor's instructions per request of one scenario.
callgrind_scenario() {  # name
  local name=$1 ir floor_ir
  ir=$(callgrind_count "$name" "$callgrind_port" "${body[$name]}" /)
  floor_ir=$(callgrind_count "$name.floor" "$callgrind_floor_port" "${body[$name]}" "/$name")
  log "$name: $ir instructions per request, the HTTP floor $floor_ir (callgrind_annotate $callgrind_dir/$name.callgrind)"
  results+=" ${name}_worker_ir=$ir ${name}_floor_ir=$floor_ir"
}

results=""
min_ratio=""
worker_floor_ratio=""  # the largest worker_us / floor_worker_us of the scenarios
totals_p99=""
totals_ratio=""
run_scenario() {  # name paged(0/1) statement pgbench-vars...
  local name=$1 paged=$2 statement=$3
  shift 3
  local check
  check=$(curl -s -H 'Content-Type: application/json' --data "${body[$name]}" "http://127.0.0.1:$api_port/")
  cmp -s <(printf '%s' "$check") "$work/floor/$name.json" ||
    { echo "scenario $name: the API's answer is not the floor's: ${check:0:300}" >&2; exit 1; }
  if [ -n "$callgrind_requests" ]; then
    callgrind_scenario "$name"
    return 0
  fi
  printf 'wrk.method = "POST"\nwrk.headers["Content-Type"] = "application/json"\nwrk.body = [[%s]]\n' "${body[$name]}" > "$work/$name.lua"
  "$tool" sql "$statement" > "$work/$name.sql"
  local dvars=()
  for v in "$@"; do dvars+=(-D "$v"); done
  local floor_url="http://127.0.0.1:$api_floor_port/$name"
  # Informative, on the big first page only: the shipped default pool, every other round.
  local with_default_pool=0
  if [ "$name" = big_first_page ]; then with_default_pool=1; fi
  wrk -t1 -c32 -d2s -s "$work/$name.lua" "http://127.0.0.1:$api_port/" >/dev/null  # warm-up
  wrk -t1 -c32 -d1s -s "$work/$name.lua" "$floor_url" >/dev/null
  if [ "$with_default_pool" = 1 ]; then wrk -t1 -c32 -d2s -s "$work/$name.lua" "http://127.0.0.1:$default_pool_port/" >/dev/null; fi
  local i p99 pg count requests=0 cpu_before cpu_ns=0 floor_requests=0 floor_cpu_ns=0
  local -a apis=() p99s=() pools=() pgs=() ratios=() pool_ratios=() floors=() floor_ratios=()
  pgbench_start "$name" "$work/$name.sql" "${dvars[@]}"
  for i in $(seq "$rounds"); do
    cpu_before=$(workers_cpu_ns)
    read -r "apis[i]" p99 count < <(wrk_round "$work/$name.lua")
    cpu_ns=$((cpu_ns + $(workers_cpu_ns) - cpu_before))
    requests=$((requests + count))
    p99s+=("$p99")
    cpu_before=$(workers_cpu_ns)
    read -r "floors[i]" _ count < <(wrk_round "$work/$name.lua" "$floor_url")
    floor_cpu_ns=$((floor_cpu_ns + $(workers_cpu_ns) - cpu_before))
    floor_requests=$((floor_requests + count))
    if [ "$with_default_pool" = 1 ] && [ $((i % 2)) = 1 ]; then
      read -r "pools[i]" _ < <(wrk_round "$work/$name.lua" "http://127.0.0.1:$default_pool_port/")
    fi
    pgbench_window
  done
  pgbench_finish "$name"
  read -r -a pgs <<<"$pgbench_rates"
  for i in $(seq "$rounds"); do  # wrk rounds i and the pgbench window after them
    pg=${pgs[i - 1]}
    ratios+=("$(ratio_of "${apis[i]}" "$pg")")
    # The floor ratio: the API's rate were a request to cost the floor's
    # exchange plus PostgreSQL's statement and nothing else, on the same
    # cores, 1/(1/floor + 1/pgbench), against pgbench: floor/(floor + pgbench).
    # Pessimistic by pgbench's own client CPU, which its rate already carries.
    floor_ratios+=("$(awk -v f="${floors[i]}" -v p="$pg" 'BEGIN { printf "%.3f", f / (f + p) }')")
    if [ -n "${pools[i]:-}" ]; then pool_ratios+=("$(ratio_of "${pools[i]}" "$pg")"); fi
  done
  local api_rps pg_tps ratio floor_rps floor_ratio
  api_rps=$(median <<<"${apis[*]}") pg_tps=$(median <<<"${pgs[*]}") ratio=$(median <<<"${ratios[*]}") p99=$(median <<<"${p99s[*]}")
  floor_rps=$(median <<<"${floors[*]}") floor_ratio=$(median <<<"${floor_ratios[*]}")
  local worker_us floor_us
  worker_us=$(awk -v ns="$cpu_ns" -v n="$requests" 'BEGIN { printf "%.1f", ns / 1000 / n }')
  floor_us=$(awk -v ns="$floor_cpu_ns" -v n="$floor_requests" 'BEGIN { printf "%.1f", ns / 1000 / n }')
  log "$name: api ${api_rps} req/s (p99 ${p99} ms), pgbench ${pg_tps} tps, ratio $ratio, worker ${worker_us} µs CPU per request (rounds: api ${apis[*]}; p99 ${p99s[*]}; pgbench ${pgs[*]}; ratio ${ratios[*]})"
  log "$name: HTTP floor ${floor_rps} req/s, worker ${floor_us} µs CPU per request, floor ratio $floor_ratio (rounds: ${floors[*]})"
  results+=" ${name}_api_rps=${api_rps} ${name}_pg_tps=${pg_tps}"
  if [ "$name" != totals ]; then results+=" ${name}_ratio=${ratio}"; fi  # totals_ratio leads the line
  results+=" ${name}_p99_ms=${p99} ${name}_worker_us=${worker_us}"
  results+=" ${name}_floor_rps=${floor_rps} ${name}_floor_worker_us=${floor_us} ${name}_floor_ratio=${floor_ratio}"
  local cpu_ratio
  cpu_ratio=$(awk -v w="$worker_us" -v f="$floor_us" 'BEGIN { printf "%.2f", (f > 0 ? w / f : 0) }')
  results+=" ${name}_worker_floor_ratio=${cpu_ratio}"
  if [ -z "$worker_floor_ratio" ] || awk -v a="$cpu_ratio" -v b="$worker_floor_ratio" 'BEGIN { exit !(a > b) }'; then
    worker_floor_ratio=$cpu_ratio
  fi
  if [ "$with_default_pool" = 1 ]; then
    log "$name: API with the default pool ($default_pool_size) ${pools[*]} req/s; ratio ${pool_ratios[*]}"
    results+=" ${name}_default_pool_api_rps=$(median <<<"${pools[*]}") ${name}_default_pool_ratio=$(median <<<"${pool_ratios[*]}")"
  fi
  if [ "$paged" = 1 ]; then
    if [ -z "$min_ratio" ] || awk -v a="$ratio" -v b="$min_ratio" 'BEGIN { exit !(a < b) }'; then min_ratio=$ratio; fi
  fi
  if [ "$name" = totals ]; then
    totals_p99=$p99
    totals_ratio=$ratio
    results+=" totals_p99_max_ms=$(largest <<<"${p99s[*]}")"
  fi
  return 0
}

# Parameters of wh_page: account, window (from, to), keyset position (block,
# seq, role), the page's row limit, and the account's id with the store's
# generation, as a warm worker remembers them (it has paged these accounts
# since the warm-up); wh_page_type adds the op type code.
# p6 (role) is irrelevant without a cursor: the largest block decides; pgbench
# refuses empty variables, so it gets a placeholder.
generation=$(psql -tAq "$reader" -c "SELECT generation FROM wallet_store_state")
account_id() { psql -tAq "$reader" -c "SELECT id FROM wallet_accounts WHERE name = '$1'"; }
normal_id=(p8="$(account_id "$normal")" p9="$generation")
big_id=(p8="$(account_id "$big")" p9="$generation")
no_cursor=(p2=-infinity p3=infinity p4=2147483647 p5=0 p6=none p7=51)
run_scenario normal_page 1 wh_page p1=$normal "${no_cursor[@]}" "${normal_id[@]}"
run_scenario big_first_page 1 wh_page p1=$big "${no_cursor[@]}" "${big_id[@]}"
run_scenario big_deep_page 1 wh_page p1=$big p2=-infinity p3=infinity p4=$d_block p5=$d_seq "p6=$d_role" p7=51 "${big_id[@]}"
run_scenario curation_page 1 wh_page_type p1=$big "${no_cursor[@]}" "${big_id[@]}" p10=52
run_scenario totals 0 wh_totals_days p1=$big p2=infinity p3=infinity p4="${big_id[0]#p8=}" p5="$generation"

if [ -n "$callgrind_requests" ]; then
  echo "RESULT api_callgrind${results} requests_per_scenario=${callgrind_requests} api_pool=${pool_size} rows=${total_rows}"
  exit 0
fi
echo "RESULT api page_ratio=${min_ratio} totals_ratio=${totals_ratio} totals_p99_ms=${totals_p99} worker_floor_ratio=${worker_floor_ratio}${results} api_pool=${pool_size} api_workers=${workers} rows=${total_rows} load_seconds=${load_seconds} big_account_aggregate_rows=${agg_rows}"
