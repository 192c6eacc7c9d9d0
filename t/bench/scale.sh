#!/usr/bin/env bash
# The store at scale (run as `t/bench/run scale`; issue 15).
#
# The synthetic chain at mainnet density (BENCH_BLOCKS blocks, ~21.6 events
# each) is loaded by wallet-backfill in block order into a fresh store, by
# default with --bulk: the path an operator takes for a fresh mainnet store
# (indexes built sorted at the end, the history rewritten in account order);
# BENCH_LOAD_ARGS="--progress=log" measures the normal, row-by-row load.
# wallet-indexer then tails after it (one block), as in production: the
# store has a checkpoint, and pages read their indexed block as they do there.
# Then, in the same run:
#   (a) bytes per event by part: each table's heap, its TOAST, each index,
#       after VACUUM ANALYZE, over the event count; and the average stored
#       size of each column of wallet_events and of wallet_blocks.ops;
#   (b) the loader's rows/s (all of its run: index builds of a bulk mode
#       included) against COPY of the same rows from files into unindexed
#       copies of the tables (the database's limit) -> load_ratio; and the
#       CPU of each side per event (from /proc): the simulator (it stands
#       for nodes on other hosts: its share of this machine is a test
#       artefact, shown), the loader, PostgreSQL in all (pg_load), while
#       loading (pg_loading) and while building (pg_build), and PostgreSQL
#       for the COPY baseline; the build's seconds, and each build step's
#       with PostgreSQL's CPU seconds (all its processes, autovacuum too;
#       steps that run at once are counted together); the loader's CPU by
#       phase (loading; the balance snapshot pass after the build, with
#       PostgreSQL's) and against the COPY baseline's: loader_cpu_ratio (all
#       of it), loader_loading_cpu_ratio (loading alone; issue 31: at most 1);
#   (b2) with BENCH_BUILD_COMPARE set: the build's account-order rewrite
#       (keyset index, CLUSTER) against a sorted copy (INSERT .. ORDER BY,
#       CREATE TABLE AS with a parallel sort) on a block-order copy of the
#       events: seconds, CPU seconds, WAL bytes (docs/store-layout.md);
#   (c) PostgreSQL buffers (shared hit + read of the top plan node) of the
#       API's own page statement (PREPAREd from the API's text, EXPLAIN
#       ANALYZE of EXECUTE): first page and a deep page (rows before the
#       chain's middle block), of BENCH_SAMPLE random accounts and of the
#       BENCH_SAMPLE accounts with the most events -> buffers_per_page (the
#       largest of the four means); after a normal load (no --bulk) the
#       same pages again once wallet-reorder put the loaded (irreversible)
#       blocks in account order (reordered_*, block_order_buffers_per_page,
#       reorder_seconds);
#   (d) the API's pages/s measured with pgbench (the API's prepared page
#       statement, half first pages and half deep pages of uniformly random
#       accounts, BENCH_CLIENTS connections; nginx is left out: on two shared
#       cores it would measure itself more than the store), once with the
#       store in the page cache and once with PostgreSQL in a cgroup v1
#       memory controller limited to a sixteenth of the store, caches dropped
#       first; both with the same small shared_buffers (a quarter of that
#       limit) -> cold_page_ratio; then, in the limited server, the blocks
#       read and hit per page by relation (cold_reads_per_page: read from
#       outside shared_buffers). Needs root (cgroup, drop_caches); without
#       it this part is skipped (cold_page_ratio=na);
#   (e) the projection to 3 billion events: bytes and load time scale
#       linearly from this run (index builds grow slightly faster than
#       linearly, so the hours are a lower bound); projected_cpu_load_hours_3e9
#       from the measured CPU parts instead: the loader's and PostgreSQL's CPU
#       per event over this machine's cores (the nodes on other hosts).
# Ends with `RESULT scale events=.. bytes_per_event=.. load_ratio=..
# buffers_per_page=.. cold_page_ratio=.. projected_tb_3e9=..
# projected_load_hours_3e9=..` and the baselines' absolute figures, the
# parts' bytes per event and the CPU per event of each side
# (loader_cpu_us_per_event=.. copy_cpu_us_per_event=.. loader_cpu_ratio=..).
#
# Environment: WALLET_BUILD_DIR (set by t/bench/run), BENCH_BLOCKS (default
# 470000: 10.1 million events; the whole run took 8 minutes on the two-core
# machine with a load average of 5, 17 minutes with one of 20, when 100000
# blocks (2.1 million events) took 5), BENCH_LOAD_ARGS (the loader's flags; default "--bulk --progress=log
# --progress-interval-ms=30000"),
# BENCH_WORKERS (6), BENCH_SAMPLE (1000), BENCH_CLIENTS (8), BENCH_SECONDS
# (20, each pages/s run), BENCH_LOAD_ONLY (set: stop after (a) and (b), for
# work on the loader), BENCH_BUILD_COMPARE (set: (b2)), BENCH_HOLD_SECONDS (keeps the store up after the RESULT line,
# for investigation).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${WALLET_BUILD_DIR:-$root/build}
blocks=${BENCH_BLOCKS:-470000}
load_args=${BENCH_LOAD_ARGS:---bulk --progress=log --progress-interval-ms=30000}
workers=${BENCH_WORKERS:-6}
sample=${BENCH_SAMPLE:-1000}
clients=${BENCH_CLIENTS:-8}
seconds=${BENCH_SECONDS:-20}
backfill=$build/backfill/wallet-backfill
sim=$build/t/sim/hive-node-sim
setup=$build/common/wallet-db-setup
tool=$build/t/bench/api_bench_tool
reorder=$build/reorder/wallet-reorder
indexer=$build/indexer/wallet-indexer
source "$here/lib.bash"
for f in "$backfill" "$sim" "$setup" "$tool" "$reorder" "$indexer" "$bench_pg_bin/postgres"; do [ -x "$f" ] || { echo "missing $f" >&2; exit 1; }; done

work=$(mktemp -d /tmp/wallet-bench-scale.XXXXXX)
sim_pid=""
bench_pg_cgroup=""
cleanup() {
  [ -n "$sim_pid" ] && kill "$sim_pid" 2>/dev/null && wait "$sim_pid" 2>/dev/null
  bench_pg_stop "$work"
  [ -n "$bench_pg_cgroup" ] && rmdir "$bench_pg_cgroup" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

log() { echo "[scale bench] $*" >&2; }
now() { date +%s.%N; }
calc() { python3 -c "print($1)"; }

# ---- PostgreSQL: loader and COPY baseline share one tuning ---------------------------
superpass=bench-superuser-$RANDOM$RANDOM
mkdir -p "$work/data"  # COPY files, written and read by the server
[ "$(id -u)" = 0 ] && chown nobody "$work/data"
load_settings=(-c max_connections=100 -c shared_buffers=2GB -c max_wal_size=8GB -c checkpoint_timeout=30min
               -c maintenance_work_mem=1GB)
bench_pg_start "$work" "$superpass" "${load_settings[@]}"
export DB_USER=postgres DB_PASSWORD=$superpass DB_BIND_HOST=127.0.0.1 DB_BIND_PORT=$pg_port DB_NAME=wallet
export WALLET_WRITER_PASSWORD=bench-writer-password-1 WALLET_API_READER_PASSWORD=bench-reader-password-1
"$setup" >&2
db="postgresql://postgres:$superpass@127.0.0.1:$pg_port/wallet"
q() { psql -qAt -v ON_ERROR_STOP=1 "$db" "$@"; }

# ---- the load ------------------------------------------------------------------------
port=$(free_port)
"$sim" --synthetic --seed 3 --length $((blocks + 1)) --block-interval-ms 0 --port "$port" >"$work/sim.log" 2>&1 &
sim_pid=$!
for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done
log "loading $blocks blocks: wallet-backfill $load_args ($workers workers)"
read -r -a load_argv <<<"$load_args"
sim_cpu_before=$(bench_proc_cpu "$sim_pid")
pg_cpu_before=$(bench_pg_cpu "$work")
start=$(now)
BACKFILL_RPC_URLS=http://127.0.0.1:$port/ BACKFILL_START_BLOCK=1 BACKFILL_END_BLOCK=$blocks BACKFILL_WORKERS=$workers \
  BACKFILL_BATCH_SIZE=100 BACKFILL_SHARD_SIZE=10000 DB_PASSWORD='' /usr/bin/time -f "%U %S" -o "$work/backfill.time" \
  "$backfill" "${load_argv[@]}" 2>"$work/backfill.log" &
loader_wrapper=$!
# The loader's CPU seconds so far (it is the child of /usr/bin/time); nothing
# once it has exited (a short load can end before the watcher below sees its
# last line: the phase is then not split).
loader_cpu_now() {
  local pid
  pid=$(ps --ppid "$loader_wrapper" -o pid= | awk 'NR == 1 { print $1 }')
  [ -z "$pid" ] || bench_proc_cpu "$pid" 2>/dev/null || true
}
# PostgreSQL's and the loader's CPU when the build begins split their shares
# into loading and building; when the build is done, into building and the
# balance snapshot pass (which runs after it, in the loader).
# Then at each build step's commit: PostgreSQL's CPU per step (steps that run
# at once commit together: the first of them takes their CPU).
( while ! grep -q "build: blocks" "$work/backfill.log" 2>/dev/null; do sleep 0.2; [ -e "$work/loaded" ] && exit; done
  bench_pg_cpu "$work" >"$work/pg_cpu_at_build"
  loader_cpu_now >"$work/loader_cpu_at_build"
  seen=0
  while [ ! -e "$work/loaded" ]; do
    done_steps=$(grep -c "build step .*: done" "$work/backfill.log" || true)
    if [ "$done_steps" -gt "$seen" ]; then echo "$done_steps $(bench_pg_cpu "$work")" >>"$work/pg_cpu_at_steps"; seen=$done_steps; fi
    if [ ! -e "$work/loader_cpu_at_build_done" ] && grep -q "build: done" "$work/backfill.log"; then
      loader_cpu_now >"$work/loader_cpu_at_build_done"
      bench_pg_cpu "$work" >"$work/pg_cpu_at_build_done"
    fi
    sleep 0.1
  done ) &
watcher=$!
wait "$loader_wrapper" || { cat "$work/backfill.log" >&2; exit 1; }
end=$(now)
load_average=$(cut -d' ' -f1-3 /proc/loadavg)
# CPU seconds of each side of the load: the simulator stands for nodes on
# other hosts, so its share of this machine is a test artefact (shown, not
# hidden); the loader; PostgreSQL (COPY and the build).
sim_cpu=$(calc "round($(bench_proc_cpu "$sim_pid") - $sim_cpu_before, 1)")
kill "$sim_pid"; wait "$sim_pid" 2>/dev/null || true; sim_pid=""
sleep 1  # the loader's backends exit and are reaped
pg_load_cpu=$(calc "round($(bench_pg_cpu "$work") - $pg_cpu_before, 1)")
loader_cpu=$(awk '{print $1 + $2}' "$work/backfill.time")
touch "$work/loaded"; wait "$watcher"
pg_build_cpu=0
[ -s "$work/pg_cpu_at_build" ] && pg_build_cpu=$(calc "round($pg_cpu_before + $pg_load_cpu - $(cat "$work/pg_cpu_at_build"), 1)")
# The loader's CPU by phase: loading (fetch, decode, COPY), the build (it
# waits), the balance snapshot pass after it (loader and PostgreSQL).
loader_loading_cpu=$loader_cpu loader_snapshot_cpu=0 pg_snapshot_cpu=0
[ -s "$work/loader_cpu_at_build" ] && loader_loading_cpu=$(cat "$work/loader_cpu_at_build")
if [ -s "$work/loader_cpu_at_build_done" ]; then
  loader_snapshot_cpu=$(calc "round($loader_cpu - $(cat "$work/loader_cpu_at_build_done"), 2)")
  pg_snapshot_cpu=$(calc "round($pg_cpu_before + $pg_load_cpu - $(cat "$work/pg_cpu_at_build_done"), 1)")
fi
grep -E "summary" "$work/backfill.log" | sed 's/^/[scale bench]   /' >&2
# Each build step's line with PostgreSQL's CPU seconds since the commit before.
if [ -s "$work/pg_cpu_at_build" ]; then
  grep -E "build step .*: done" "$work/backfill.log" | sed 's/^.*\(build step\)/\1/' |
    awk -v start="$(cat "$work/pg_cpu_at_build")" -v steps="$work/pg_cpu_at_steps" \
        -v last="$(grep -c "build step .*: done" "$work/backfill.log")" -v end="$(calc "$pg_cpu_before + $pg_load_cpu")" '
      # The last step from the total of the build (its sessions closed by then).
      BEGIN { while ((getline line < steps) > 0) { split(line, f, " "); cpu[f[1]] = f[2] }
              cpu[last] = end }
      { n++; c = (n in cpu) ? cpu[n] : ""; if (c != "") { printf "[scale bench]   %s; PostgreSQL CPU %.1f s\n", $0, c - start; start = c }
        else printf "[scale bench]   %s; PostgreSQL CPU with the step after\n", $0 }' >&2
fi
load_seconds=$(calc "round($end - $start, 1)")
events=$(q -c "SELECT count(*) FROM wallet_events")
load_rows_per_s=$(calc "round($events / $load_seconds)")
cpu_per_event="sim_cpu_us_per_event=$(calc "round($sim_cpu * 1e6 / $events, 2)") loader_cpu_us_per_event=$(calc "round($loader_cpu * 1e6 / $events, 2)") pg_load_cpu_us_per_event=$(calc "round($pg_load_cpu * 1e6 / $events, 2)") pg_build_cpu_us_per_event=$(calc "round($pg_build_cpu * 1e6 / $events, 2)") pg_loading_cpu_us_per_event=$(calc "round(($pg_load_cpu - $pg_build_cpu) * 1e6 / $events, 2)") loader_loading_cpu_us_per_event=$(calc "round($loader_loading_cpu * 1e6 / $events, 2)") loader_snapshot_cpu_us_per_event=$(calc "round($loader_snapshot_cpu * 1e6 / $events, 2)") pg_snapshot_cpu_us_per_event=$(calc "round($pg_snapshot_cpu * 1e6 / $events, 2)")"
# The loader's own CPU per event against PostgreSQL's COPY of the same rows
# (measured in (b)): loader_cpu_ratio (issue 31: at most 1).
loader_cpu_us=$(calc "round($loader_cpu * 1e6 / $events, 2)")
# The load time at 3 billion events: from this run's rows/s (wall clock), and
# from its measured CPU parts with the nodes on other hosts: the loader's and
# PostgreSQL's CPU per event over this machine's cores, all busy.
cores=$(nproc)
projected_hours=$(calc "round(3e9 / $load_rows_per_s / 3600, 1)")
projected_cpu_hours=$(calc "round(3e9 * ($loader_cpu + $pg_load_cpu) / $events / $cores / 3600, 1)")
build_seconds=$(sed -n 's/.*build: done in \([0-9.]*\) s.*/\1/p' "$work/backfill.log" | tail -1)
log "loaded $events events in $load_seconds s ($load_rows_per_s rows/s, build ${build_seconds:-none} s; load average $load_average)"
log "CPU seconds of the load: simulator $sim_cpu, loader $loader_cpu, PostgreSQL $pg_load_cpu ($cpu_per_event)"

# ---- the indexer tails after the load, as in production ------------------------------------
# Its first batch (the chain's last block, above the loaded ones) gives the
# store a checkpoint and a range: every page then gets its indexed block on
# the production path (wallet_indexed_block(), migrations 0006 and 0014),
# not the early return of a store without a checkpoint.
"$sim" --synthetic --seed 3 --length $((blocks + 1)) --block-interval-ms 0 --port "$port" >"$work/sim-tail.log" 2>&1 &
sim_pid=$!
for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done
CHAIN_RPC_URL=http://127.0.0.1:$port/ INDEXER_START_BLOCK=$((blocks + 1)) INDEXER_TARGET_IRREVERSIBLE=false \
  INDEXER_TRAIL_BLOCKS=0 INDEXER_POLL_INTERVAL_MS=100 INDEXER_HEALTH_ADDR= DB_PASSWORD='' "$indexer" >"$work/indexer.log" 2>&1 &
indexer_pid=$!
for _ in $(seq 600); do
  [ "$(q -c "SELECT count(*) FROM indexer_checkpoint")" = 1 ] && break
  kill -0 "$indexer_pid" 2>/dev/null || { cat "$work/indexer.log" >&2; exit 1; }
  sleep 0.1
done
kill -TERM "$indexer_pid"; wait "$indexer_pid" 2>/dev/null || true
[ "$(q -c "SELECT count(*) FROM indexer_checkpoint")" = 1 ] || { echo "no checkpoint from wallet-indexer:" >&2; cat "$work/indexer.log" >&2; exit 1; }
kill "$sim_pid"; wait "$sim_pid" 2>/dev/null || true; sim_pid=""
log "the indexer's checkpoint: block $(q -c "SELECT block_num FROM indexer_checkpoint"), indexed block $(q -c "SELECT wallet_indexed_block()")"
q -c "VACUUM ANALYZE" >/dev/null

# ---- (a) bytes per event by part -------------------------------------------------------
# Every table of the store with its parts: heap (with its free space and
# visibility maps), TOAST (with its index), each index.
q -F ' ' >"$work/parts" <<'SQL'
SELECT c.relname || '.heap', pg_table_size(c.oid) - coalesce(pg_total_relation_size(nullif(c.reltoastrelid, 0)), 0)
  FROM pg_class c WHERE c.relkind = 'r' AND c.relnamespace = 'public'::regnamespace
UNION ALL
SELECT c.relname || '.toast', pg_total_relation_size(c.reltoastrelid)
  FROM pg_class c WHERE c.relkind = 'r' AND c.relnamespace = 'public'::regnamespace AND c.reltoastrelid <> 0
UNION ALL
SELECT t.relname || '.' || i.relname, pg_relation_size(i.oid)
  FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid
 WHERE t.relnamespace = 'public'::regnamespace AND t.relkind = 'r'
ORDER BY 2 DESC;
SQL
store_bytes=$(awk '{ s += $2 } END { printf "%.0f\n", s }' "$work/parts")
bytes_per_event=$(calc "round($store_bytes / $events, 1)")
log "store: $store_bytes bytes, $bytes_per_event bytes per event; by part (bytes per event):"
awk -v n="$events" '$2 > 0 { printf "[scale bench]   %-55s %9.1f\n", $1, $2 / n }' "$work/parts" >&2
# Grouped: the events and blocks tables by part, the aggregates, the
# dictionary, the rest (checkpoints, shard bookkeeping).
parts=$(awk -v n="$events" '
  { split($1, p, "."); t = p[1]; k = p[2]; sub("^" t "_", "", k)
    if (t == "wallet_events") g = "events_" k; else if (t == "wallet_blocks") g = "blocks_" k
    else if (t ~ /^wallet_reward/) g = "aggregates"; else if (t ~ /^wallet_balance/) g = "balances"
    else if (t == "wallet_accounts") g = "dictionary"; else g = "other"
    s[g] += $2 }
  END { for (g in s) printf "part_%s=%.1f ", g, s[g] / n }' "$work/parts")
# Average stored size of each column (a 5% sample of the pages), and the
# block payloads per event, stored (compressed) and as text.
columns=$(q -c "SELECT string_agg(format('avg(coalesce(pg_column_size(%I), 0))::numeric(8,1)', attname), ', ' ORDER BY attnum)
                  FROM pg_attribute WHERE attrelid = 'wallet_events'::regclass AND attnum > 0 AND NOT attisdropped")
names=$(q -c "SELECT string_agg(attname, ' ' ORDER BY attnum) FROM pg_attribute
               WHERE attrelid = 'wallet_events'::regclass AND attnum > 0 AND NOT attisdropped")
sizes=$(q -F ' ' -c "SELECT $columns FROM wallet_events TABLESAMPLE SYSTEM (5) REPEATABLE (1)")
column_sizes=$(paste -d= <(tr ' ' '\n' <<<"$names" | sed 's/^/col_/') <(tr ' ' '\n' <<<"$sizes") | tr '\n' ' ')
log "wallet_events columns, average stored bytes: $column_sizes"
read -r ops_stored ops_text <<<"$(q -F ' ' -c "SELECT (sum(pg_column_size(ops)) * 20 / $events)::numeric(8,1),
                                                       (sum(octet_length(ops::text)) * 20 / $events)::numeric(8,1)
                                                  FROM wallet_blocks TABLESAMPLE SYSTEM (5) REPEATABLE (1)")"
log "wallet_blocks.ops per event: $ops_stored bytes stored (compressed), $ops_text bytes as text"

# ---- (b) the database's limit: COPY into unindexed copies --------------------------------
tables=(wallet_accounts wallet_blocks wallet_events)
declare -A order=([wallet_accounts]=id [wallet_blocks]=block_num [wallet_events]="block_num, block_seq, account_id, role")
for table in "${tables[@]}"; do
  q -c "COPY (SELECT * FROM $table ORDER BY ${order[$table]}) TO '$work/data/$table.copy'"
  # Columns, storage and compression as the store's, no index, no trigger.
  q -c "CREATE TABLE copy_$table (LIKE $table INCLUDING STORAGE INCLUDING COMPRESSION) WITH (toast_tuple_target = 128)"
done
q -c "CHECKPOINT"
pg_cpu_before=$(bench_pg_cpu "$work")
start=$(now)
for table in "${tables[@]}"; do q -c "COPY copy_$table FROM '$work/data/$table.copy'"; done
end=$(now)
sleep 1
copy_cpu_us_per_event=$(calc "round(($(bench_pg_cpu "$work") - $pg_cpu_before) * 1e6 / $events, 2)")
copy_seconds=$(calc "round($end - $start, 1)")
copy_rows_per_s=$(calc "round($events / ($end - $start))")
load_ratio=$(calc "round($load_rows_per_s / $copy_rows_per_s, 3)")
loader_cpu_ratio=$(calc "round($loader_cpu_us / $copy_cpu_us_per_event, 3)")
loader_loading_cpu_ratio=$(calc "round($loader_loading_cpu * 1e6 / $events / $copy_cpu_us_per_event, 3)")
log "COPY into unindexed tables: $events events (and their accounts and blocks) in $copy_seconds s ($copy_rows_per_s rows/s, PostgreSQL CPU $copy_cpu_us_per_event µs per event)"
log "loader CPU $loader_cpu_us µs per event: $loader_cpu_ratio of COPY's (loading alone: $loader_loading_cpu_ratio) (simulator $(calc "round($sim_cpu * 1e6 / $events, 2)") µs)"
for table in "${tables[@]}"; do q -c "DROP TABLE copy_$table"; rm -f "$work/data/$table.copy"; done

# ---- (b2) ways of the account-order rewrite (BENCH_BUILD_COMPARE set) -----------------
# The bulk build's way (the keyset index, then CLUSTER on it) against writing
# a new table sorted by the keyset's key and building the keyset once on it:
# INSERT .. SELECT .. ORDER BY (the only way into a table with the store's
# generated column and constraints; PostgreSQL 15 runs it without parallel
# workers) and CREATE TABLE AS with a parallel sort (forced: the planner
# picks a serial one; its table has `wide` as a plain column, so it is a bound,
# not a usable way). Each on a block-order copy of wallet_events with the
# build's session settings, in a transaction rolled back: seconds,
# PostgreSQL's CPU seconds (all processes, parallel workers included) and
# the session's own, WAL bytes.
if [ -n "${BENCH_BUILD_COMPARE:-}" ]; then
  columns=$(q -c "SELECT string_agg(quote_ident(attname), ', ' ORDER BY attnum) FROM pg_attribute
                  WHERE attrelid = 'wallet_events'::regclass AND attnum > 0 AND NOT attisdropped AND attgenerated = ''")
  key=$(q -c "SELECT string_agg(pg_get_indexdef(i.indexrelid, k, true), ', ' ORDER BY k) FROM pg_index i,
              generate_series(1, i.indnkeyatts) k WHERE i.indexrelid = 'wallet_events_keyset'::regclass")
  like="INCLUDING DEFAULTS INCLUDING GENERATED INCLUDING CONSTRAINTS INCLUDING STORAGE INCLUDING COMPRESSION"
  q -c "CREATE TABLE rewrite_source (LIKE wallet_events $like)"
  q -c "INSERT INTO rewrite_source ($columns) SELECT $columns FROM wallet_events ORDER BY block_num, block_seq, role"
  q -c "VACUUM ANALYZE rewrite_source" -c "CHECKPOINT"
  session_cpu="(split_part(pg_read_file('/proc/' || pg_backend_pid() || '/stat'), ' ', 14)::bigint
               + split_part(pg_read_file('/proc/' || pg_backend_pid() || '/stat'), ' ', 15)::bigint) / $(getconf CLK_TCK).0"
  declare -A rewrite=(
    [cluster]="CREATE UNIQUE INDEX rewrite_keyset ON rewrite_source ($key) WITH (fillfactor = 100);
               CLUSTER rewrite_source USING rewrite_keyset"
    [insert]="CREATE TABLE rewrite_sorted (LIKE rewrite_source $like);
              INSERT INTO rewrite_sorted ($columns) SELECT $columns FROM rewrite_source ORDER BY $key;
              CREATE UNIQUE INDEX rewrite_sorted_keyset ON rewrite_sorted ($key) WITH (fillfactor = 100)"
    [ctas_parallel]="SET LOCAL parallel_setup_cost = 0; SET LOCAL parallel_tuple_cost = 0;
                     CREATE TABLE rewrite_sorted AS SELECT * FROM rewrite_source ORDER BY $key;
                     CREATE UNIQUE INDEX rewrite_sorted_keyset ON rewrite_sorted ($key) WITH (fillfactor = 100)")
  for way in cluster insert ctas_parallel; do
    cpu_before=$(bench_pg_cpu "$work")
    started=$(now)
    session=$(q <<SQL
SET maintenance_work_mem = '1GB'; SET work_mem = '1GB'; SET max_parallel_maintenance_workers = 2;
SET max_parallel_workers_per_gather = 2;
BEGIN;
SELECT pg_current_wal_lsn() AS wal_before, $session_cpu AS session_before \gset
${rewrite[$way]};
SELECT round($session_cpu - :session_before, 1) || ' ' || round(pg_wal_lsn_diff(pg_current_wal_lsn(), :'wal_before') / 1048576);
ROLLBACK;
SQL
)
    seconds=$(calc "round($(now) - $started, 1)")
    sleep 0.5  # its parallel workers are reaped
    read -r session_cpu_s wal_mb <<<"$session"
    log "account-order rewrite, $way: $seconds s, PostgreSQL CPU $(calc "round($(bench_pg_cpu "$work") - $cpu_before, 1)") s (the session's $session_cpu_s), WAL $wal_mb MB"
  done
  q -c "DROP TABLE rewrite_source"
fi

if [ -n "${BENCH_LOAD_ONLY:-}" ]; then  # for work on the loader: (a) and (b) only
  echo "RESULT scale events=$events load_ratio=$load_ratio load_rows_per_s=$load_rows_per_s copy_rows_per_s=$copy_rows_per_s" \
    "bytes_per_event=$bytes_per_event load_seconds=$load_seconds build_seconds=${build_seconds:-na} $cpu_per_event" \
    "copy_cpu_us_per_event=$copy_cpu_us_per_event loader_cpu_ratio=$loader_cpu_ratio loader_loading_cpu_ratio=$loader_loading_cpu_ratio projected_load_hours_3e9=$projected_hours" \
    "projected_cpu_load_hours_3e9=$projected_cpu_hours sim_cpu_s=$sim_cpu loader_cpu_s=$loader_cpu pg_load_cpu_s=$pg_load_cpu load_average=\"$load_average\" blocks=$blocks load_args=\"$load_args\""
  if [ -n "${BENCH_HOLD_SECONDS:-}" ]; then log "holding: $db"; sleep "$BENCH_HOLD_SECONDS"; fi
  exit 0
fi

# ---- (c) buffers per page ----------------------------------------------------------------
middle=$((blocks / 2))
"$tool" prepare wh_page >"$work/prepare.sql"
q >/dev/null <<SQL
CREATE TABLE page_sample (kind text, name text, before_block integer, id integer);
INSERT INTO page_sample
SELECT k.kind, s.name, k.before_block, s.id
  FROM (SELECT id, name FROM wallet_accounts ORDER BY random() LIMIT $sample) s,
       (VALUES ('normal_first', 2147483647), ('normal_deep', $middle)) k (kind, before_block);
INSERT INTO page_sample
SELECT k.kind, a.name, k.before_block, a.id
  FROM (SELECT account_id, count(*) AS n FROM wallet_events GROUP BY 1 ORDER BY 2 DESC LIMIT $sample) b
  JOIN wallet_accounts a ON a.id = b.account_id,
       (VALUES ('big_first', 2147483647), ('big_deep', $middle)) k (kind, before_block);
SQL
# measure_buffers PREFIX: the mean buffers of each kind of page (log lines,
# "PREFIXkind=mean " in $buffers) and the largest mean in $buffers_per_page.
# The session's first call is left out: it loads the catalogs and compiles
# the status function, once per connection (the API's connections persist).
measure_buffers() {
  q >"$work/buffers" <<SQL
\\i $work/prepare.sql
\\o /dev/null
EXECUTE wh_page('', '-infinity', 'infinity', 2147483647, 0, '', 51, NULL, NULL);
\\o
CREATE TEMP TABLE page_buffers (kind text, buffers bigint, page_rows bigint);
DO \$\$
DECLARE
    r record;
    plan json;
BEGIN
    FOR r IN SELECT * FROM page_sample LOOP
        -- As a warm worker asks: with the account's id and the store's generation.
        EXECUTE format('EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) EXECUTE wh_page(%L, %L, %L, %s, 0, %L, 51, %s, %s)',
                       r.name, '-infinity', 'infinity', r.before_block, '', r.id,
                       (SELECT generation FROM wallet_store_state)) INTO plan;
        INSERT INTO page_buffers
        VALUES (r.kind, (plan -> 0 -> 'Plan' ->> 'Shared Hit Blocks')::bigint + (plan -> 0 -> 'Plan' ->> 'Shared Read Blocks')::bigint,
                (plan -> 0 -> 'Plan' ->> 'Actual Rows')::bigint);
    END LOOP;
END \$\$;
SELECT kind, avg(buffers)::numeric(10,1), max(buffers), avg(page_rows)::numeric(10,1) FROM page_buffers GROUP BY kind ORDER BY kind;
SQL
  buffers_per_page=0
  while IFS='|' read -r kind mean most rows; do
    log "buffers per page, $1$kind: mean $mean (largest $most), $rows rows per page"
    buffers+="$1${kind}=$mean "
    buffers_per_page=$(calc "max($buffers_per_page, $mean)")
  done <"$work/buffers"
}
buffers=""
measure_buffers buffers_

# ---- (c') a normal load (block order), then in account order by wallet-reorder --------------
# Only without --bulk (whose CLUSTER already ordered the history): the
# indexer's observation of the node says every loaded block is irreversible,
# wallet-reorder rewrites them a day of blocks per transaction, and the same
# pages are measured again; (d) then measures the reordered store.
reorder_seconds=na
if [[ " $load_args " != *" --bulk "* ]]; then
  block_order_buffers_per_page=$buffers_per_page
  q -c "INSERT INTO node_observation (head_block, head_block_time, last_irreversible, observed_at)
        VALUES ($blocks, now(), $blocks, now())"
  start=$(now)
  DB_PASSWORD='' "$reorder" >"$work/reorder.log" 2>&1 || { cat "$work/reorder.log" >&2; exit 1; }
  end=$(now)
  reorder_seconds=$(calc "round($end - $start, 1)")
  tail -1 "$work/reorder.log" | sed 's/^/[scale bench]   /' >&2
  q -c "ANALYZE wallet_events" >/dev/null
  measure_buffers reordered_
  log "wallet-reorder: $reorder_seconds s (VACUUM included); buffers per page $block_order_buffers_per_page in block order, $buffers_per_page in account order"
  buffers+="block_order_buffers_per_page=$block_order_buffers_per_page "
fi

# ---- (d) pages/s in memory and with a sixteenth of the store -----------------------------
accounts=$(q -c "SELECT max(id) FROM wallet_accounts")
# The server needs some memory of its own (shared memory, backends): small
# stores get at least 64 MB (the RESULT line gives the store's share).
limit_bytes=$((store_bytes / 16))
[ "$limit_bytes" -lt $((64 << 20)) ] && limit_bytes=$((64 << 20))
small_buffers_mb=$((limit_bytes / 4 / 1048576))
small_settings=(-c max_connections=100 -c "shared_buffers=${small_buffers_mb}MB")
for kind in first deep; do
  before=2147483647
  [ "$kind" = deep ] && before=$middle
  {
    echo "\\set id random(1, $accounts)"
    # Ids have gaps (the loader's workers race for new names): the next one.
    echo "SELECT name AS p1, id AS p8 FROM wallet_accounts WHERE id >= :id ORDER BY id LIMIT 1 \\gset"
    echo "\\set p4 $before"
    "$tool" sql wh_page
  } >"$work/$kind.sql"
done
# As a warm API worker asks: with the account's id and the store's generation.
generation=$(q -c "SELECT generation FROM wallet_store_state")
pages_per_s() {  # label -> pages/s
  pgbench -n -M prepared -c "$clients" -j 2 -T "$seconds" -f "$work/first.sql" -f "$work/deep.sql" \
    -D p2=-infinity -D p3=infinity -D p5=0 -D p6=none -D p7=51 -D p9="$generation" "$db" >"$work/pgbench-$1.out" 2>&1 ||
    { cat "$work/pgbench-$1.out" >&2; exit 1; }
  sed -n 's/^tps = \([0-9.]*\) .*/\1/p' "$work/pgbench-$1.out"
}
warm_pages_per_s=na
cold_pages_per_s=na
cold_page_ratio=na
cold_reads=na
if [ "$(id -u)" = 0 ] && [ -d /sys/fs/cgroup/memory ]; then
  bench_pg_stop "$work"
  bench_pg_launch "$work" "${small_settings[@]}"
  find "$work/pg/data" -type f -exec cat {} + >/dev/null  # the whole store into the page cache
  warm_pages_per_s=$(pages_per_s warm)
  log "in memory (shared_buffers ${small_buffers_mb}MB): $warm_pages_per_s pages/s"
  bench_pg_stop "$work"
  bench_pg_cgroup=/sys/fs/cgroup/memory/wallet-bench-scale-$$
  mkdir "$bench_pg_cgroup"
  echo "$limit_bytes" >"$bench_pg_cgroup/memory.limit_in_bytes"
  sync
  echo 3 >/proc/sys/vm/drop_caches
  bench_pg_launch "$work" "${small_settings[@]}"
  cold_pages_per_s=$(pages_per_s cold)
  log "cgroup limit $limit_bytes bytes (1/$(calc "round($store_bytes / $limit_bytes, 1)") of the store), peak $(cat "$bench_pg_cgroup/memory.max_usage_in_bytes"): $cold_pages_per_s pages/s"
  cold_page_ratio=$(calc "round($cold_pages_per_s / $warm_pages_per_s, 3)")
  # What a page reads from outside shared_buffers once the cold run is in its
  # steady state: the sample's uniformly random accounts (first and deep
  # pages) paged again in the same cgroup, block reads and hits per page by
  # relation (cumulative statistics before and after).
  q >"$work/cold-reads" <<SQL
\\i $work/prepare.sql
\\o /dev/null
EXECUTE wh_page('', '-infinity', 'infinity', 2147483647, 0, '', 51, NULL, NULL);
\\o
CREATE TEMP TABLE io_before AS
SELECT relname, heap_blks_read AS r, heap_blks_hit AS h FROM pg_statio_user_tables
UNION ALL SELECT indexrelname, idx_blks_read, idx_blks_hit FROM pg_statio_user_indexes;
DO \$\$
DECLARE
    r record;
    plan json;
BEGIN
    FOR r IN SELECT * FROM page_sample WHERE kind LIKE 'normal%' LOOP
        EXECUTE format('EXPLAIN (ANALYZE, TIMING OFF, FORMAT JSON) EXECUTE wh_page(%L, %L, %L, %s, 0, %L, 51, %s, %s)',
                       r.name, '-infinity', 'infinity', r.before_block, '', r.id,
                       (SELECT generation FROM wallet_store_state)) INTO plan;
    END LOOP;
END \$\$;
SELECT pg_stat_force_next_flush();
SELECT pg_stat_clear_snapshot();
WITH pages AS (SELECT count(*) AS n FROM page_sample WHERE kind LIKE 'normal%'),
     io_after AS (SELECT relname, heap_blks_read AS r, heap_blks_hit AS h FROM pg_statio_user_tables
                  UNION ALL SELECT indexrelname, idx_blks_read, idx_blks_hit FROM pg_statio_user_indexes)
SELECT a.relname, round((a.r - b.r)::numeric / n, 2), round((a.h - b.h)::numeric / n, 2)
  FROM io_after a JOIN io_before b USING (relname), pages
 WHERE a.r + a.h > b.r + b.h ORDER BY a.r - b.r DESC, a.h - b.h DESC;
SQL
  cold_reads=0
  while IFS='|' read -r relation reads hits; do
    [ -n "$hits" ] || continue
    log "cold page, $relation: $reads blocks read, $hits hit per page"
    cold_reads=$(calc "round($cold_reads + $reads, 2)")
  done <"$work/cold-reads"
  log "cold page: $cold_reads blocks read per page (outside shared_buffers)"
else
  log "not root or no cgroup v1 memory controller: pages/s not measured"
fi

# ---- (e) projection --------------------------------------------------------------------------
projected_tb=$(calc "round($bytes_per_event * 3e9 / 1e12, 2)")

echo "RESULT scale events=$events bytes_per_event=$bytes_per_event load_ratio=$load_ratio buffers_per_page=$buffers_per_page" \
  "cold_page_ratio=$cold_page_ratio projected_tb_3e9=$projected_tb projected_load_hours_3e9=$projected_hours" \
  "load_rows_per_s=$load_rows_per_s copy_rows_per_s=$copy_rows_per_s warm_pages_per_s=$warm_pages_per_s" \
  "cold_pages_per_s=$cold_pages_per_s cold_reads_per_page=$cold_reads ${buffers}${parts}ops_stored_per_event=$ops_stored ops_text_per_event=$ops_text" \
  "${column_sizes}blocks=$blocks store_bytes=$store_bytes load_seconds=$load_seconds copy_seconds=$copy_seconds" \
  "build_seconds=${build_seconds:-na} $cpu_per_event copy_cpu_us_per_event=$copy_cpu_us_per_event loader_cpu_ratio=$loader_cpu_ratio loader_loading_cpu_ratio=$loader_loading_cpu_ratio" \
  "projected_cpu_load_hours_3e9=$projected_cpu_hours sim_cpu_s=$sim_cpu loader_cpu_s=$loader_cpu pg_load_cpu_s=$pg_load_cpu" \
  "reorder_seconds=$reorder_seconds load_average=\"$load_average\" cgroup_limit_bytes=$limit_bytes store_over_limit=$(calc "round($store_bytes / $limit_bytes, 1)") shared_buffers_mb=$small_buffers_mb clients=$clients load_args=\"$load_args\""

if [ -n "${BENCH_HOLD_SECONDS:-}" ]; then  # for investigation: the store stays up (in its cgroup, if any)
  log "holding: $db"
  sleep "$BENCH_HOLD_SECONDS"
fi
