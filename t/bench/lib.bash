# Shared by the benchmark scripts (sourced, not run).

# A free TCP port on the loopback interface.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# Runs a command as the unprivileged `nobody` when run as root (PostgreSQL
# refuses to run as root), as it is otherwise.
as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u nobody -- "$@"; else "$@"; fi; }

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
