# Shared by the benchmark scripts (sourced, not run).

# A free TCP port on the loopback interface.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# Runs a command as the unprivileged `nobody` when run as root (PostgreSQL
# refuses to run as root), as it is otherwise.
as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u nobody -- "$@"; else "$@"; fi; }

# Waits until something listens on 127.0.0.1:PORT (10 s), else ends the bench.
wait_port() { for _ in $(seq 200); do (echo > /dev/tcp/127.0.0.1/"$1") 2>/dev/null && return 0; sleep 0.05; done; echo "port $1 did not open" >&2; exit 1; }

# The EXIT trap of a bench that keeps its processes in `pids` and its
# PostgreSQL and files in `work`: stops them all, then removes `work`.
bench_cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  bench_pg_stop "$work"
  wait 2>/dev/null || true
  rm -rf "$work"
}

bench_pg_bin=/usr/lib/postgresql/15/bin

# bench_pg_start DIR PASSWORD [-c name=value ...]: a private, unsynced
# PostgreSQL 15 cluster in DIR/pg (socket in DIR/run) on 127.0.0.1, superuser
# `postgres` with PASSWORD; returns once it accepts connections. Sets pg_port.
bench_pg_start() {
  local dir=$1 password=$2
  shift 2
  pg_port=$(free_port)
  mkdir -p "$dir/pg" "$dir/run"
  echo "$password" > "$dir/pg/pwfile"
  if [ "$(id -u)" = 0 ]; then
    chmod a+x "$dir"  # nobody must reach its files through it
    chown -R nobody "$dir/pg" "$dir/run"
  fi
  as_pg "$bench_pg_bin/initdb" -D "$dir/pg/data" -U postgres --pwfile="$dir/pg/pwfile" --auth-local=trust \
    --auth-host=scram-sha-256 -E UTF8 --locale=C --no-sync --no-instructions >"$dir/initdb.log" 2>&1
  bench_pg_launch "$dir" "$@"
}

# bench_pg_launch DIR [-c name=value ...]: starts the cluster of DIR (made by
# bench_pg_start) on pg_port with the given settings; returns once it accepts
# connections. With bench_pg_cgroup set (a cgroup v1 directory), the server
# starts inside that cgroup, so that it and every backend it forks are
# charged to it from their first page on.
bench_pg_launch() {
  local dir=$1
  shift
  (
    if [ -n "${bench_pg_cgroup:-}" ]; then echo "$BASHPID" > "$bench_pg_cgroup/cgroup.procs"; fi
    as_pg "$bench_pg_bin/postgres" -D "$dir/pg/data" -p "$pg_port" -k "$dir/run" -c listen_addresses=127.0.0.1 \
      -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c log_min_messages=warning "$@"
  ) >>"$dir/postgres.log" 2>&1 &
  bench_pg_wrapper=$!
  for _ in $(seq 300); do
    pg_isready -q -h 127.0.0.1 -p "$pg_port" && return 0
    sleep 0.1
  done
  echo "PostgreSQL did not start:" >&2
  cat "$dir/postgres.log" >&2
  return 1
}

# bench_pg_cpu DIR: CPU seconds used so far by the cluster of DIR: the
# postmaster, its exited children (backends of closed connections, reaped)
# and its living ones.
bench_pg_cpu() {
  local pm ticks c
  pm=$(head -1 "$1/pg/data/postmaster.pid")
  ticks=$(awk '{print $14 + $15 + $16 + $17}' "/proc/$pm/stat")
  for c in $(ps --ppid "$pm" -o pid=); do
    ticks=$((ticks + $(awk '{print $14 + $15}' "/proc/$c/stat" 2>/dev/null || echo 0)))
  done
  python3 -c "print($ticks / $(getconf CLK_TCK))"
}

# bench_proc_cpu PID: CPU seconds a living process (all its threads) used so far.
bench_proc_cpu() { python3 -c "print($(awk '{print $14 + $15}' "/proc/$1/stat") / $(getconf CLK_TCK))"; }

# bench_pg_stop DIR: fast shutdown of the cluster bench_pg_start made there.
# The server itself gets the signal: as root the started process is the
# runuser wrapper, which does not pass it on.
bench_pg_stop() {
  local dir=$1 server=""
  [ -f "$dir/pg/data/postmaster.pid" ] && server=$(head -1 "$dir/pg/data/postmaster.pid")
  [ -n "$server" ] && kill -INT "$server" 2>/dev/null
  [ -n "${bench_pg_wrapper:-}" ] && wait "$bench_pg_wrapper" 2>/dev/null
  # Gone before its directory is removed.
  for _ in $(seq 100); do
    [ -n "$server" ] && kill -0 "$server" 2>/dev/null || break
    sleep 0.1
  done
  return 0
}

# bench_load_events WRITER_URL TOOL ACCOUNTS EVENTS BIG BIG_EVENTS: loads the
# synthetic store of api_bench_tool (EVENTS over ACCOUNTS accounts, BIG with
# BIG_EVENTS of its own) into a freshly provisioned database. Indexes are built
# after the load (much faster than maintaining them per row), from the
# definitions the migrations gave them; the reward
# aggregates are maintained by the insert trigger, as in production. Accounts
# and events are COPYed as the writer stores them (migrations 0004, 0007); the block
# rows (times, and each operation once) follow set-based.
bench_load_events() {
  local writer=$1 tool=$2 accounts=$3 events=$4 big=$5 big_events=$6
  # The indexes the migrations made, kept to be built again as they were
  # (as the bulk load does, migration 0005): the migrations are their one place.
  psql -q -v ON_ERROR_STOP=1 "$writer" >&2 <<'SQL'
CREATE TABLE bench_dropped_indexes AS
SELECT indexrelid::regclass::text AS name, pg_get_indexdef(indexrelid) AS definition
  FROM pg_index WHERE indrelid = 'wallet_events'::regclass;
SELECT format('DROP INDEX %s', name) FROM bench_dropped_indexes \gexec
SQL
  "$tool" accounts "$accounts" "$big" | psql -q -v ON_ERROR_STOP=1 "$writer" -c "\copy wallet_accounts (id, name) FROM STDIN" >&2
  "$tool" copy "$accounts" "$events" "$big" "$big_events" |
    psql -q -v ON_ERROR_STOP=1 "$writer" -c "\copy wallet_events (ts, account_id, block_num, block_seq, virtual_op, op_in_trx, op_type, role, amount, symbol, vesting_amount, vesting_symbol, trx_id, counterparty, memo, author, permlink, assets, wide) FROM STDIN" >&2
  psql -q -v ON_ERROR_STOP=1 "$writer" >&2 <<'SQL'
SET maintenance_work_mem = '1GB';
SET max_parallel_maintenance_workers = 2;
SELECT setval(pg_get_serial_sequence('wallet_accounts', 'id'), (SELECT max(id) FROM wallet_accounts)) AS last_account_id \gset
INSERT INTO wallet_blocks (block_num, ts, ops)
SELECT block_num, min(ts), json_object_agg(block_seq, '[0, {}]'::json)
  FROM (SELECT DISTINCT block_num, block_seq, ts FROM wallet_events) o GROUP BY block_num;
SELECT definition FROM bench_dropped_indexes \gexec
DROP TABLE bench_dropped_indexes;
INSERT INTO indexer_checkpoint (block_num, block_id, block_time) VALUES (31536000, 'bench', '2023-01-01T00:00:00Z');
VACUUM ANALYZE wallet_accounts, wallet_events, wallet_blocks, wallet_reward_daily, wallet_reward_liquid_daily;
SQL
}

# bench_api_nginx DIR PORT MODULE ROOT [WORKERS [COMMAND-PREFIX...]]: writes
# DIR/conf/nginx.conf, WORKERS (1) worker processes serving the API
# (conf/nginx's include) on 127.0.0.1:PORT, and starts nginx in the background
# with the environment it inherits; under a command prefix (valgrind ...) the
# master process alone serves. With BENCH_NGINX_HTTP_INCLUDE naming a file,
# http{} includes it too (api.sh's fixed-response server). Returns once
# /health answers. Sets bench_nginx_pid.
bench_api_nginx() {
  local dir=$1 port=$2 module=$3 root=$4 processes=${5:-1} master=on
  shift $(( $# < 5 ? $# : 5 ))
  [ $# -gt 0 ] && master=off
  mkdir -p "$dir/logs" "$dir/tmp" "$dir/conf"
  {
    echo "daemon off; master_process $master; worker_processes $processes;"
    echo "error_log $dir/logs/error.log warn; pid $dir/logs/nginx.pid;"
    [ "$(id -u)" = 0 ] && echo "user root root;"
    echo "load_module $module;"
    grep '^env ' "$root/conf/nginx/wallet-history-env.conf"
    echo "events { worker_connections 4096; }"
    echo "http { access_log off; client_body_temp_path $dir/tmp;"
    API_BIND_HOST=127.0.0.1 API_BIND_PORT=$port "$root/scripts/render-api-conf"
    if [ -n "${BENCH_NGINX_HTTP_INCLUDE:-}" ]; then echo "include $BENCH_NGINX_HTTP_INCLUDE;"; fi
    echo "}"
  } > "$dir/conf/nginx.conf"
  "$@" /usr/sbin/nginx -p "$dir" -c "$dir/conf/nginx.conf" >&2 &
  bench_nginx_pid=$!
  for _ in $(seq 600); do curl -sf "http://127.0.0.1:$port/health" >/dev/null && break; sleep 0.1; done
}

# Figures of wrk rounds (api.sh, replicas.sh).
to_ms() {  # wrk latency: 812.00us, 1.23ms, 2.01s
  awk -v v="$1" 'BEGIN { n = v + 0; if (v ~ /us$/) n /= 1000; else if (v ~ /ms$/) n += 0; else if (v ~ /s$/) n *= 1000; printf "%.2f", n }'
}

# The middle value; with an even count, the mean of the two middle ones.
median() {
  tr ' ' '\n' | grep . | sort -g |
    awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
largest() { tr ' ' '\n' | grep . | sort -g | tail -1; }
ratio_of() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }

# ---- The synthetic chain with its ledger, loaded (reconcile.sh; balances.sh's own load is ------
# the same steps, not moved here yet) and reconciled with the node (both).
# Each expects: bench_pg_start done, wallet-db-setup run (DB_* exported for the
# daemons), q() a psql on the store, `build` the build tree, `work` the work dir.

# balances_chain_start SEED ACCOUNTS BLOCKS: stores the synthetic chain's
# genesis balances (change runs without events at block 0, as the balances
# tests store them) and starts the simulator with its ledger at head
# BLOCKS + 1, blocks only on command. Sets node_port and node_pid.
balances_chain_start() {
  local seed=$1 accounts=$2 blocks=$3
  "$build/t/bench/balances_bench_tool" genesis "$seed" "$accounts" | q >/dev/null
  node_port=$(free_port)
  "$build/t/sim/hive-node-sim" --synthetic --ledger --seed "$seed" --accounts "$accounts" --length $((blocks + 1)) \
    --block-interval-ms 0 --port "$node_port" >"$work/sim.log" 2>&1 &
  node_pid=$!
  wait_port "$node_port"
}

# node_control JSON: the simulator's control endpoint (its answer: the node's state).
node_control() { curl -sf -X POST --data "$1" "http://127.0.0.1:$node_port/sim/control"; }
# node_state MEMBER: one member of the node's state (head, last_irreversible_block_num, head_block_id).
node_state() { curl -sf "http://127.0.0.1:$node_port/sim/status" | grep -o "\"$1\":[^,}]*" | head -1 | cut -d: -f2 | tr -d '"'; }

# balances_backfill FIRST LAST WORKERS SHARD_BLOCKS: wallet-backfill over the
# range from the simulator (row by row: the path that runs the balance pass;
# its log appended to work/backfill.log).
balances_backfill() {
  BACKFILL_RPC_URLS=http://127.0.0.1:$node_port/ BACKFILL_START_BLOCK=$1 BACKFILL_END_BLOCK=$2 BACKFILL_WORKERS=$3 \
    BACKFILL_BATCH_SIZE=100 BACKFILL_SHARD_SIZE=$4 DB_PASSWORD='' "$build/backfill/wallet-backfill" --progress=none \
    2>>"$work/backfill.log" || { tail -50 "$work/backfill.log" >&2; exit 1; }
}

# balances_indexer_start START: wallet-indexer tailing the simulator to its
# head (reversible blocks included) from START, in the background. Sets indexer_pid.
balances_indexer_start() {
  CHAIN_RPC_URL=http://127.0.0.1:$node_port/ INDEXER_START_BLOCK=$1 INDEXER_TARGET_IRREVERSIBLE=false \
    INDEXER_TRAIL_BLOCKS=0 INDEXER_POLL_INTERVAL_MS=100 INDEXER_MAX_BATCH_BLOCKS=${INDEXER_MAX_BATCH_BLOCKS:-100} \
    INDEXER_HEALTH_ADDR= DB_PASSWORD='' "$build/indexer/wallet-indexer" >>"$work/indexer.log" 2>&1 &
  indexer_pid=$!
}

# balances_indexed BLOCK [ID]: waits (120 s) until the store's indexed block is
# BLOCK or above (with ID: its checkpoint is BLOCK with that id), the indexer alive.
balances_indexed() {
  local wanted=$1 id=${2:-}
  for _ in $(seq 1200); do
    if [ -n "$id" ]; then
      [ "$(q -c "SELECT block_num || ' ' || block_id FROM indexer_checkpoint")" = "$wanted $id" ] && return 0
    else
      [ "$(q -c "SELECT coalesce(indexed_block, 0) FROM wallet_store_state")" -ge "$wanted" ] && return 0
    fi
    kill -0 "$indexer_pid" 2>/dev/null || break
    sleep 0.1
  done
  echo "the indexer did not reach block $wanted $id:" >&2
  tail -50 "$work/indexer.log" >&2
  exit 1
}

# balances_reconcile API_PORT NODE_PORT NAMES_FILE [CONNECTIONS]: compares
# every component of get_balances (through the API on API_PORT) of every
# account named in the file with database_api.find_accounts of the simulator
# on NODE_PORT at its head, over CONNECTIONS (1) connections to the API;
# prints the number of differing components (an account the API or the node
# does not answer counts every component).
balances_reconcile() {
  python3 - "$1" "$2" "$3" "${4:-1}" <<'PY'
import http.client, json, sys
from concurrent.futures import ThreadPoolExecutor
api_port, node_port, names, connections = int(sys.argv[1]), int(sys.argv[2]), open(sys.argv[3]).read().split(), int(sys.argv[4])
members = {"hive_balance": "balance", "hbd_balance": "hbd_balance", "hive_savings": "savings_balance",
           "hbd_savings": "savings_hbd_balance", "vesting_shares": "vesting_shares",
           "delegated_vests": "delegated_vesting_shares", "received_vests": "received_vesting_shares",
           "hive_rewards": "reward_hive_balance", "hbd_rewards": "reward_hbd_balance",
           "vests_rewards": "reward_vesting_balance", "savings_withdraw_requests": "savings_withdraw_requests",
           "vesting_withdraw_rate": "vesting_withdraw_rate", "to_withdraw": "to_withdraw", "withdrawn": "withdrawn"}
def post(conn, method, params):
    conn.request("POST", "/", json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}),
                 {"Content-Type": "application/json"})
    return json.loads(conn.getresponse().read())
def units(value):  # "1.234", 12, or a NAI asset
    if isinstance(value, dict):
        return int(value["amount"])
    return int(str(value).replace(".", ""))
def compare(part):  # one connection to the API per part
    api = http.client.HTTPConnection("127.0.0.1", api_port)
    differences = 0
    for first in range(0, len(part), 1000):
        batch = part[first:first + 1000]
        node = http.client.HTTPConnection("127.0.0.1", node_port)
        accounts = {a["name"]: a for a in post(node, "database_api.find_accounts", {"accounts": batch})["result"]["accounts"]}
        for name in batch:
            answer = post(api, "wallet_history.get_balances", {"account": name})
            if "result" not in answer or name not in accounts:
                differences += len(members)
                continue
            balances = answer["result"]["balances"]
            differences += sum(units(balances[c]) != units(accounts[name][m]) for c, m in members.items())
    return differences
with ThreadPoolExecutor(connections) as pool:
    print(sum(pool.map(compare, [names[i::connections] for i in range(connections)])))
PY
}
