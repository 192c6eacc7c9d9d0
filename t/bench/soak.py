"""Soak with faults (t/bench/run soak; run by t/bench/soak.sh).

The whole stack on loopback: PostgreSQL, Redis, the node simulator (synthetic
chain advanced and forked by this script), wallet-indexer tailing it to the
head (forks reconciled), and one nginx with the module (2 workers) serving the
wallet_history API and the JSON-RPC router (the chain deployment's routing file:
node and hafah = the simulator, social = router-test-backend, wallet_indexer = the API;
Redis cache). Mixed HTTP and WebSocket clients send node reads, cached and
uncached social reads, wallet_history calls (through the router and straight to
the API), batches and bad requests, while PostgreSQL, Redis, the node and the
social upstream are each killed or restarted at random moments. Every limit is
at its shipped default (the API's per-client rate limiter and in-flight cap,
the router's per-client budgets): the clients' connections come from
SOAK_CLIENT_ADDRESSES loopback addresses (127.0.0.2 and up), and each address
keeps its requests to the API under the limiter's rate, as honest clients do.

Checked and reported:
  - every answer: a success of the expected shape, the expected JSON-RPC error
    for a bad request, or (only while a component is down, plus a grace
    period) a proper JSON-RPC error object; anything else is unexpected, and
    so is a limit's refusal at any time (rate_limited);
  - RSS of the nginx workers under load every 30 s of the faulted phase
    (worker_rss_growth_kb: last sample minus first; the warm-up ends with the
    run's largest answers on every client, so the buffers' high-water mark is
    reached before), and idle: after the warm-up, at the end, and after one
    more cycle of load (a leak grows again, a high-water mark does not);
  - open descriptors of the workers and the indexer, idle after the warm-up
    and idle at the end, after a last 30 s of load without faults. fd_growth
    counts what nothing keeps for reuse: the workers' descriptors other than
    TCP sockets, their TCP sockets not established (closed by the peer and
    never here), and the indexer's. The established connections of the
    idle keepalive and database pools (bounded by configuration, their
    number following the last load's concurrency) are counted by peer apart;
    and the indexer's RSS;
  - the indexed rows equal a clean index of the same (forked) chain by a second
    indexer, compared through the SQL view wallet_operation_events with a query
    that does not depend on the store's physical layout.

Ends with: RESULT soak requests=.. unexpected_errors=.. worker_rss_growth_kb=..
fd_growth=.. table_equal=.. ...
Environment: SOAK_SECONDS (faulted phase, default 300), SOAK_WARMUP_SECONDS (90),
SOAK_SEED, SOAK_KEEP=1, SOAK_CLIENT_ADDRESSES (80, from 10 to 250),
SOAK_FAULTS (comma list of postgres-kill, postgres-restart, redis-kill,
redis-restart, node-kill, social-kill; default each once, node-kill twice).
"""
import asyncio
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter

import websockets

import benchlib
from benchlib import fd_count, free_port, nginx_temp_paths, rss_kb

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("WALLET_BUILD_DIR", os.path.join(ROOT, "build"))
SECONDS = int(os.environ.get("SOAK_SECONDS", "300"))
WARMUP_SECONDS = int(os.environ.get("SOAK_WARMUP_SECONDS", "90"))  # the workers' RSS levels off in about that
RECOVERY_SECONDS = 30
SEED = int(os.environ.get("SOAK_SEED", str(int(time.time()))))
FAULTS = os.environ.get("SOAK_FAULTS", "postgres-kill,postgres-restart,redis-kill,redis-restart,node-kill,node-kill,"
                        "social-kill").split(",")
GRACE = 5.0            # seconds after a component is back during which its errors still count as the outage's
HTTP_CLIENTS = 6
WS_CLIENTS = 4
# The clients' connections come from this many loopback addresses
# (127.0.0.2 and up; all of 127/8 is local on Linux), each client its own
# share of them: the API's limiter and the router's per-client budgets stay at
# their shipped defaults, and each address keeps to them as an honest client
# does (see AddressBudget). The mix sends about a third of its ~900 requests/s
# to the API (wallet calls, batches, a bad wallet call): at 8/s an address,
# 40 addresses held the clients back 14 % of the time; 80 leave room.
CLIENT_ADDRESSES = int(os.environ.get("SOAK_CLIENT_ADDRESSES", "80"))
BLOCK_EVERY = 0.5      # the chain advances one block per BLOCK_EVERY seconds
CHAIN_START = 100000   # the simulator's initial head
# Block N is pathological (hundreds of payouts, a 2.8 MB get_ops_in_block
# answer) when N % every == every / 2: the run's one is 99,000, indexed, and
# sent to every client at the end of the warm-up; the next, 101,000, lies
# beyond the ~750 blocks of a run.
PATHOLOGICAL_EVERY = 2000
BIG_BLOCK = CHAIN_START - PATHOLOGICAL_EVERY // 2
INDEXER_START = BIG_BLOCK - 10
PG_BIN = "/usr/lib/postgresql/15/bin"
PASSWORDS = {"DB_PASSWORD": "soak-superuser-password-1", "WALLET_WRITER_PASSWORD": "soak-writer-password-1",
             "WALLET_API_READER_PASSWORD": "soak-reader-password-1"}
COLUMNS = ("block_num, trx_in_block, op_in_trx, virtual_op, account, role, block_seq, op_type, trx_id, \"timestamp\", "
           "amount, symbol, vesting_amount, vesting_symbol, counterparty, memo, author, permlink, assets, payload")

rng = random.Random(SEED)
work = tempfile.mkdtemp(prefix="wallet-soak-")
as_root = os.geteuid() == 0
drop = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--"] if as_root else []


def api_limiter_defaults():
    """The API limiter's shipped defaults (rate per second, burst), as
    `wallet-db-setup --api-settings` lists them."""
    listing = subprocess.run([os.path.join(BUILD, "common/wallet-db-setup"), "--api-settings"], capture_output=True,
                             text=True, check=True).stdout
    found = {m.group(1): int(m.group(2)) for m in re.finditer(r"^\s*(WALLET_API_RATE_(?:RPS|BURST))\s+(\d+)", listing, re.M)}
    if len(found) != 2 or found["WALLET_API_RATE_RPS"] <= 0:
        raise RuntimeError(f"no limiter defaults in wallet-db-setup --api-settings: {listing[:500]}")
    return found["WALLET_API_RATE_RPS"], found["WALLET_API_RATE_BURST"]


def log(*parts):
    print(f"[soak {time.strftime('%H:%M:%S')}]", *parts, file=sys.stderr, flush=True)


def wait_port(port, what, timeout=60):
    benchlib.wait_port(port, what, timeout, logs=work)


class Service:
    """A child process with its log in the work directory; restartable."""

    def __init__(self, name, argv, env=None, port=None):
        self.name, self.argv, self.env, self.port, self.proc = name, argv, env, port, None

    def start(self):
        logf = open(os.path.join(work, self.name + ".log"), "ab")
        env = dict(os.environ)
        env.update(self.env or {})
        env = {k: v for k, v in env.items() if v is not None}  # None: unset
        self.proc = subprocess.Popen(self.argv, stdout=logf, stderr=subprocess.STDOUT, env=env,
                                     start_new_session=True)
        logf.close()
        if self.port:
            wait_port(self.port, self.name)

    def kill(self, sig=signal.SIGKILL, group=True):
        if self.proc and self.proc.poll() is None:
            # The whole group for a kill: PostgreSQL's backends die with their postmaster.
            (os.killpg if group else os.kill)(self.proc.pid, sig)
            self.proc.wait()
        for _ in range(100):  # the rest of the group gone too
            try:
                os.killpg(self.proc.pid, 0)
            except (ProcessLookupError, TypeError, AttributeError):
                break
            time.sleep(0.05)

    def running(self):
        return self.proc is not None and self.proc.poll() is None


def children(pid):
    out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout
    return sorted(int(p) for p in out.split())


def psql(database, sql):
    env = dict(os.environ, PGPASSWORD=PASSWORDS["DB_PASSWORD"])
    out = subprocess.run(["psql", "-qAtX", "-h", "127.0.0.1", "-p", str(pg_port), "-U", "postgres", "-d", database,
                          "-c", sql], capture_output=True, text=True, env=env, timeout=120)
    if out.returncode != 0:
        raise RuntimeError(f"psql {database}: {out.stderr}")
    return out.stdout


def checkpoint(database):
    try:
        return int(psql(database, "SELECT coalesce((SELECT block_num FROM indexer_checkpoint), 0)").strip() or 0)
    except (RuntimeError, ValueError, subprocess.TimeoutExpired):
        return -1


# ---------------------------------------------------------------------------
# The stack.

pg_port, redis_port, sim_port, social_port = free_port(), free_port(), free_port(), free_port()
api_port, router_port, health_port = free_port(), free_port(), free_port()
db_env = dict(PASSWORDS, DB_USER="postgres", DB_BIND_HOST="127.0.0.1", DB_BIND_PORT=str(pg_port), DB_NAME="wallet")

for d in ("pg", "pg-run"):
    os.makedirs(os.path.join(work, d))
    if as_root:  # PostgreSQL refuses to run as root
        os.chmod(work, 0o755)
        shutil.chown(os.path.join(work, d), "nobody")
pg = Service("postgres", drop + [f"{PG_BIN}/postgres", "-D", os.path.join(work, "pg"), "-p", str(pg_port), "-k",
                                  os.path.join(work, "pg-run"), "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off",
                                  "-c", "synchronous_commit=off", "-c", "full_page_writes=off"], port=pg_port)
redis = Service("redis", ["redis-server", "--bind", "127.0.0.1", "--port", str(redis_port), "--save", "",
                          "--appendonly", "no", "--dir", work], port=redis_port)
sim = Service("sim", [os.path.join(BUILD, "t/sim/hive-node-sim"), "--synthetic", "--seed", "7", "--length",
                      str(CHAIN_START), "--block-interval-ms", "0", "--lib-lag", "5",
                      "--pathological-every", str(PATHOLOGICAL_EVERY),
                      "--port", str(sim_port)], port=sim_port)
social = Service("social", [os.path.join(BUILD, "t/backends/router-test-backend"), "--name", "social", "--port",
                            str(social_port)], port=social_port)


def indexer_service(name, database):
    return Service(name, [os.path.join(BUILD, "indexer/wallet-indexer")], env=dict(
        db_env, DB_NAME=database, DB_PASSWORD="", CHAIN_RPC_URL=f"http://127.0.0.1:{sim_port}",
        CHAIN_RPC_TIMEOUT_MS="3000", INDEXER_START_BLOCK=str(INDEXER_START), INDEXER_TARGET_IRREVERSIBLE="false",
        INDEXER_TRAIL_BLOCKS="0", INDEXER_POLL_INTERVAL_MS="100",
        INDEXER_HEALTH_ADDR=f"127.0.0.1:{health_port}" if name == "indexer" else ""))


def start_stack():
    pwfile = os.path.join(work, "pwfile")
    with open(pwfile, "w") as f:
        f.write(PASSWORDS["DB_PASSWORD"] + "\n")
    if as_root:
        shutil.chown(pwfile, "nobody")
    subprocess.run(drop + [f"{PG_BIN}/initdb", "-D", os.path.join(work, "pg"), "-U", "postgres", f"--pwfile={pwfile}",
                           "--auth-local=trust", "--auth-host=scram-sha-256", "-E", "UTF8", "--locale=C", "--no-sync",
                           "--no-instructions"], check=True, capture_output=True)
    pg.start()
    for database in ("wallet", "reference"):
        for _ in range(50):
            done = subprocess.run([os.path.join(BUILD, "common/wallet-db-setup")], capture_output=True, text=True,
                                  env=dict(os.environ, **dict(db_env, DB_NAME=database)))
            if done.returncode == 0:
                break
            time.sleep(0.2)
        else:
            raise RuntimeError("wallet-db-setup: " + done.stdout + done.stderr)
    redis.start()
    sim.start()
    social.start()
    with open(os.path.join(ROOT, "conf/routes.hive.json")) as f:
        routes = json.load(f)
    routes["targets"] = {"node": f"http://127.0.0.1:{sim_port}", "hafah": f"http://127.0.0.1:{sim_port}",
                         "social": f"http://127.0.0.1:{social_port}",
                         "wallet_indexer": f"http://127.0.0.1:{api_port}"}
    with open(os.path.join(work, "routes.json"), "w") as f:
        json.dump(routes, f)
    api_conf = subprocess.run([os.path.join(ROOT, "scripts/render-api-conf")], capture_output=True, text=True, check=True,
                              env=dict(os.environ, API_BIND_HOST="127.0.0.1", API_BIND_PORT=str(api_port))).stdout
    ngx = os.path.join(work, "nginx")
    os.makedirs(os.path.join(ngx, "logs"))
    os.makedirs(os.path.join(ngx, "tmp"))
    with open(os.path.join(ngx, "nginx.conf"), "w") as f:
        f.write(f"""daemon off;
master_process on;
worker_processes 2;
{"user root root;" if as_root else ""}
error_log {ngx}/logs/error.log warn;
pid {ngx}/nginx.pid;
load_module {BUILD}/ngx_module/ngx_http_wallet_module.so;
include {ROOT}/conf/nginx/wallet-history-env.conf;
events {{ worker_connections 4096; }}
http {{
    access_log off;
{nginx_temp_paths(ngx)}{api_conf}
    server {{
        listen 127.0.0.1:{router_port};
        location = / {{
            jsonrpc_router {work}/routes.json;
            jsonrpc_router_redis 127.0.0.1:{redis_port};
            # Small enough to be full after the warm-up: RSS growth beyond it is not the cache filling.
            jsonrpc_router_memory_cache 1m;
        }}
    }}
}}
""")
    nginx_env = {k: v for k, v in db_env.items() if k != "DB_PASSWORD"}
    # The limits at their shipped defaults, whatever the caller's environment.
    nginx_env.update({k: None for k in os.environ if k.startswith("WALLET_API_")})
    global nginx
    nginx = Service("nginx", ["/usr/sbin/nginx", "-p", ngx, "-c", os.path.join(ngx, "nginx.conf")], env=nginx_env,
                    port=router_port)
    nginx.start()
    wait_port(api_port, "wallet_history API")
    global indexer
    indexer = indexer_service("indexer", "wallet")
    indexer.start()


# ---------------------------------------------------------------------------
# The chain: advanced and forked by this script; the forks are remembered so
# that a restarted simulator is brought back to the very same chain.

forks = []             # (head when forked, depth), in order
head = CHAIN_START
chain_lock = asyncio.Lock()


async def sim_control(body):
    reader, writer = await asyncio.open_connection("127.0.0.1", sim_port)
    data = json.dumps(body).encode()
    writer.write(b"POST /sim/control HTTP/1.1\r\nHost: sim\r\nContent-Type: application/json\r\nConnection: close\r\n"
                 b"Content-Length: " + str(len(data)).encode() + b"\r\n\r\n" + data)
    raw = await reader.read()
    writer.close()
    status = json.loads(raw.split(b"\r\n\r\n", 1)[1])
    return status


async def drive_chain(stop):
    global head
    next_fork = time.time() + rng.uniform(10, 30)
    while not stop.is_set():
        await asyncio.sleep(BLOCK_EVERY)
        async with chain_lock:
            try:
                if time.time() >= next_fork:
                    depth = rng.randint(1, 4)
                    status = await sim_control({"advance": 1, "fork": depth})
                    forks.append((status["head"], depth))
                    next_fork = time.time() + rng.uniform(15, 40)
                else:
                    status = await sim_control({"advance": 1})
                head = status["head"]
            except (OSError, ValueError, KeyError, IndexError):
                pass  # the simulator is down: the chain waits


async def restore_chain():
    """After a restart: every JSON-RPC request fails (503) until the forks are
    replayed, so no client sees the unforked chain."""
    await sim_control({"faults": {"rate": 1, "kinds": ["http_503"]}})
    for at, depth in forks:
        await sim_control({"head": at, "fork": depth})
    await sim_control({"head": head})
    await sim_control({"faults": None})


# ---------------------------------------------------------------------------
# Faults: each component is taken down at a random moment of the faulted
# phase, for a random 2-6 s, and brought back.

outages = []           # (component, start, end)


async def outage(component, how, down, up):
    start = time.time()
    down_now[component] = start
    log(f"{component}: {how}")
    await down()
    await asyncio.sleep(rng.uniform(2, 6))
    await up()
    outages.append((component, start, time.time()))
    del down_now[component]
    log(f"{component}: back after {time.time() - start:.1f} s")


async def faults(phase_start, stop):
    def stopping(service, sig=signal.SIGKILL, group=True):
        return lambda: asyncio.to_thread(service.kill, sig, group)

    def starting(service):
        return lambda: asyncio.to_thread(service.start)

    async def sim_down():
        await chain_lock.acquire()
        await asyncio.to_thread(sim.kill)

    async def sim_up():
        await asyncio.to_thread(sim.start)
        await restore_chain()
        chain_lock.release()

    kinds = {"postgres-kill": ("postgres", "killed (SIGKILL to the postmaster and its backends)", stopping(pg), starting(pg)),
             "postgres-restart": ("postgres", "restarted (fast shutdown)", stopping(pg, signal.SIGINT, False), starting(pg)),
             "redis-kill": ("redis", "killed", stopping(redis), starting(redis)),
             "redis-restart": ("redis", "restarted", stopping(redis, signal.SIGTERM), starting(redis)),
             "node-kill": ("node", "killed", sim_down, sim_up),
             "social-kill": ("social", "killed (the router's upstream target)", stopping(social), starting(social))}
    plan = [kinds[name] for name in FAULTS]
    rng.shuffle(plan)
    # Moments spread over the phase (one per slot, random within it), the last
    # well before the end so that recovery is seen.
    slot = (SECONDS - 30) / len(plan)
    for i, (component, how, down, up) in enumerate(plan):
        moment = phase_start + i * slot + rng.uniform(0, max(slot - 8, 1))
        while time.time() < moment and not stop.is_set():
            await asyncio.sleep(0.1)
        if stop.is_set():
            return
        await outage(component, how, down, up)


# ---------------------------------------------------------------------------
# Clients.

accounts = ["steemit"]
stats = Counter()
unexpected = []        # (kind, detail)
outage_errors = Counter()  # component:request kind:code
outage_samples = {}
request_id = 0


def next_id():
    global request_id
    request_id += 1
    return request_id if request_id % 3 else f"soak-{request_id}"


def envelope(method, params, rid):
    return {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}


def proper_error(answer, rid):
    """A JSON-RPC 2.0 error object answering the request with id `rid` (None
    for a request whose id cannot be read)."""
    e = answer.get("error") if isinstance(answer, dict) else None
    return (isinstance(e, dict) and isinstance(e.get("code"), int) and isinstance(e.get("message"), str)
            and answer.get("jsonrpc") == "2.0" and "id" in answer and answer["id"] == rid and "result" not in answer)


def result_ok(kind, result):
    if kind == "node_dgp":
        return isinstance(result, dict) and isinstance(result.get("head_block_number"), int)
    if kind == "node_header":
        return isinstance(result, dict)
    if kind in ("node_ops", "node_big"):
        return isinstance(result, list)
    if kind.startswith("social"):
        return isinstance(result, dict) and result.get("backend") == "social"
    if kind.startswith("wallet"):
        return isinstance(result, dict) and isinstance(result.get("items"), list)
    return False


def single(kind):
    """A request of this kind: (JSON text, expectation)."""
    rid = next_id()
    if kind == "node_dgp":
        return envelope("condenser_api.get_dynamic_global_properties", [], rid), ("ok", kind, rid)
    if kind == "node_header":
        return envelope("block_api.get_block_header", {"block_num": head - rng.randint(0, 100)}, rid), ("ok", kind, rid)
    if kind == "node_ops":
        return envelope("condenser_api.get_ops_in_block", [head - rng.randint(5, 200), False], rid), ("ok", kind, rid)
    if kind == "node_big":     # a pathological payout block: about 2.8 MB of JSON
        return envelope("condenser_api.get_ops_in_block", [BIG_BLOCK, False], rid), ("ok", kind, rid)
    if kind == "social_hit":   # a handful of keys: cache hits after the first
        return envelope("bridge.get_ranked_posts", {"sort": "trending", "tag": f"t{rng.randint(0, 4)}"}, rid), ("ok", kind, rid)
    if kind == "social_miss":  # a new key every time
        return envelope("bridge.get_ranked_posts", {"sort": "created", "tag": f"m{rid}"}, rid), ("ok", kind, rid)
    if kind in ("wallet", "wallet_direct"):
        return envelope("wallet_history.get_wallet_history", {"account": rng.choice(accounts), "limit": 10}, rid), ("ok", kind, rid)
    raise ValueError(kind)


BAD = {  # body, expected error code, expected id
    "bad_json": ('{"jsonrpc":"2.0","id":1,"method":', -32700, None),
    "bad_envelope": ('{"jsonrpc":"1.0","id":5,"method":"condenser_api.get_block"}', -32600, 5),
    "bad_batch": ("[]", -32600, None),
    "bad_params": ('{"jsonrpc":"2.0","id":6,"method":"wallet_history.get_wallet_history","params":{"account":"Not A Name!"}}',
                   -32602, 6),
}
MIX = [("node_dgp", 3), ("node_header", 3), ("node_ops", 2), ("social_hit", 4), ("social_miss", 2), ("wallet", 4),
       ("wallet_direct", 2), ("batch", 2), ("bad_json", 1), ("bad_envelope", 1), ("bad_batch", 1), ("bad_params", 1)]
KINDS = [k for k, w in MIX for _ in range(w)]


def build_request(kind=None):
    kind = kind or rng.choice(KINDS)
    if kind in BAD:
        body, code, rid = BAD[kind]
        return kind, body, [("bad", code, rid)]
    if kind == "batch":
        parts = [single(k) for k in ("node_dgp", "wallet", "social_hit")]
        return kind, json.dumps([p[0] for p in parts]), [p[1] for p in parts]
    request, expect = single(kind)
    return kind, json.dumps(request), [expect]


def in_outage(t0, t1):
    return [c for c, s, e in outages + current_outages() if s - 0.5 <= t1 and t0 <= e + GRACE]


def current_outages():
    return [(c, s, time.time()) for c, s in down_now.items()]


down_now = {}


def judge(kind, expects, status, text, t0, t1):
    stats["requests"] += 1
    try:
        answer = json.loads(text)
    except ValueError:
        answer = None
    if answer is None:
        note_failure(kind, f"not JSON (HTTP {status}): {text[:120]!r}", t0, t1, proper=False)
        return
    answers = answer if isinstance(answer, list) and kind == "batch" else [answer]
    if kind == "batch" and (not isinstance(answer, list) or len(answer) != len(expects)):
        if proper_error(answer, None):  # refused as a whole: no element's id applies
            note_failure(kind, f"batch refused: {answer['error']}", t0, t1, proper=True, code=answer["error"]["code"])
        else:
            note_failure(kind, f"batch answer of the wrong shape: {text[:200]}", t0, t1, proper=False)
        return
    for (what, sub, expected), got in zip(expects, answers):
        if what == "bad":
            if proper_error(got, expected) and got["error"]["code"] == sub:
                stats["bad_request_refused_properly"] += 1
            else:
                stats["unexpected"] += 1
                unexpected.append((kind, f"bad request answered {json.dumps(got)[:200]}"))
            continue
        rid = expected
        if isinstance(got, dict) and "result" in got and got.get("id") == rid and result_ok(sub, got["result"]):
            stats["ok"] += 1
        elif proper_error(got, rid):
            note_failure(sub, f"JSON-RPC error {json.dumps(got['error'])[:200]}", t0, t1, proper=True, code=got["error"]["code"])
        else:
            note_failure(sub, f"improper answer (HTTP {status}): {json.dumps(got)[:200]}", t0, t1, proper=False)


def note_failure(kind, detail, t0, t1, proper, code=None):
    components = in_outage(t0, t1)
    # A limit refusing the soak's honest clients is never the outage's.
    if code == 1700 or "rate limit" in detail or "HTTP 429" in detail:
        stats["rate_limited"] += 1
        components = []
    if proper and components:
        for c in sorted(set(components)):
            outage_errors[f"{c}:{kind}:{code}"] += 1
            outage_samples.setdefault(f"{c}:{kind}:{code}", detail)
        stats["outage_errors"] += 1
    else:
        stats["unexpected"] += 1
        unexpected.append((kind, detail + (f" during {sorted(set(components))}" if components else "")))


class AddressBudget:
    """One client address's own pacing of the requests that reach the API,
    directly or through the router (which names the client to the API): a
    token bucket at 80 % of the API's rate and half its burst, so that what
    the API counts stays within its limiter even when the network bunches the
    requests up (up to a second of jitter)."""

    def __init__(self, rate, burst):
        self.rate, self.burst = rate * 0.8, max(1.0, burst / 2)
        self.tokens, self.updated = self.burst, time.monotonic()

    def available(self):
        now = time.monotonic()
        self.tokens = min(self.burst, self.tokens + (now - self.updated) * self.rate)
        self.updated = now
        return self.tokens

    def seconds_to_token(self):
        return max(0.0, (1 - self.available()) / self.rate)


API_BOUND = {"wallet", "wallet_direct", "batch", "bad_params"}  # kinds whose request the API answers
budgets = {}           # address -> AddressBudget


def client_addresses(index):
    """Client number `index`'s share of the loopback addresses."""
    return [f"127.0.0.{2 + n}" for n in range(index, CLIENT_ADDRESSES, HTTP_CLIENTS + WS_CLIENTS)]


async def pick_address(addresses, turn, kind):
    """The address for the client's next request: the next in turn (every
    connection stays in use); a request the API answers takes a token from its
    address's budget, from the next address that has one, else waits for the
    first one to refill."""
    order = addresses[turn % len(addresses):] + addresses[:turn % len(addresses)]
    if kind not in API_BOUND:
        return order[0]
    waited = False
    while True:
        for address in order:
            if budgets[address].available() >= 1:
                budgets[address].tokens -= 1
                stats["api_requests"] += 1
                return address
        wait = min(budgets[a].seconds_to_token() for a in order)
        stats["budget_waits"] += not waited
        stats["budget_wait_ms"] += int(wait * 1000)
        waited = True
        await asyncio.sleep(wait)


async def http_client(index, stop, script=None):
    """Keep-alive connections to the router and the API from each of the
    client's addresses, reopened when closed. Requests of the mix, or of the
    kinds in `script` and then returns."""
    connections = {}
    addresses = client_addresses(index)
    script = list(script) if script else None
    turn = 0
    while not stop.is_set() and script != []:
        kind, body, expects = build_request(script.pop() if script else None)
        address = await pick_address(addresses, turn, kind)
        turn += 1
        port = api_port if kind == "wallet_direct" else router_port
        key = (address, port)
        t0 = time.time()
        try:
            if key not in connections:
                connections[key] = await asyncio.open_connection("127.0.0.1", port, local_addr=(address, 0))
            reader, writer = connections[key]
            data = body.encode()
            writer.write(b"POST / HTTP/1.1\r\nHost: soak\r\nContent-Type: application/json\r\nContent-Length: " +
                         str(len(data)).encode() + b"\r\n\r\n" + data)
            head_raw = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 20)
            lines = head_raw.decode("latin-1").split("\r\n")
            status = int(lines[0].split()[1])
            headers = {l.split(":", 1)[0].lower(): l.split(":", 1)[1].strip() for l in lines[1:] if ":" in l}
            if "content-length" in headers:
                text = (await asyncio.wait_for(reader.readexactly(int(headers["content-length"])), 20)).decode()
            else:
                text = (await asyncio.wait_for(reader.read(), 20)).decode()
                headers["connection"] = "close"
            judge(kind, expects, status, text, t0, time.time())
            if "x-jsonrpc-cache" in headers:
                stats["cache_" + headers["x-jsonrpc-cache"].lower()] += 1
            if headers.get("connection", "").lower() == "close":
                connections.pop(key)[1].close()
        except (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError, ValueError, IndexError) as e:
            stats["requests"] += 1
            note_failure(kind, f"HTTP transport failure: {type(e).__name__} {e}", t0, time.time(), proper=False)
            if key in connections:
                connections.pop(key)[1].close()
    for _, writer in connections.values():
        writer.close()


async def ws_client(index, stop, script=None):
    """A WebSocket connection to the router from each of the client's
    addresses, reopened when closed."""
    connections = {}
    addresses = client_addresses(index)
    script = list(script) if script else None
    turn = 0
    while not stop.is_set() and script != []:
        kind, body, expects = build_request(script.pop() if script else None)
        if kind == "wallet_direct":
            continue  # the API itself is HTTP only
        address = await pick_address(addresses, turn, kind)
        turn += 1
        try:
            if address not in connections:
                connections[address] = await websockets.connect(
                    f"ws://127.0.0.1:{router_port}/", ping_interval=None, max_size=64 << 20, open_timeout=10,
                    local_addr=(address, 0))
            ws = connections[address]
            t0 = time.time()
            await ws.send(body)
            text = await asyncio.wait_for(ws.recv(), 20)
            judge(kind, expects, 101, text, t0, time.time())
        except (OSError, asyncio.TimeoutError, websockets.exceptions.WebSocketException) as e:
            stats["requests"] += 1
            note_failure("ws", f"WebSocket failure: {type(e).__name__} {e}", time.time(), time.time(), proper=False)
            if address in connections:
                await close_ws(connections.pop(address))
            await asyncio.sleep(0.2)
    for ws in connections.values():
        await close_ws(ws)


async def close_ws(ws):
    try:
        await asyncio.wait_for(ws.close(), 5)
    except (OSError, asyncio.TimeoutError, websockets.exceptions.WebSocketException):
        pass


async def load(seconds, with_faults):
    stop = asyncio.Event()
    tasks = [asyncio.create_task(http_client(i, stop)) for i in range(HTTP_CLIENTS)]
    tasks += [asyncio.create_task(ws_client(HTTP_CLIENTS + i, stop)) for i in range(WS_CLIENTS)]
    fault_task = asyncio.create_task(faults(time.time(), stop)) if with_faults else None
    sampler = asyncio.create_task(sample_memory(stop))
    await asyncio.sleep(seconds)
    if fault_task:
        await fault_task  # an outage in progress ends first
    stop.set()
    await asyncio.gather(*tasks, sampler)


# ---------------------------------------------------------------------------

def tcp_peers(pids):
    """The processes' established TCP connections by the component at the
    other end, and their other connections ("not_established": a socket the
    peer closed and nothing closed here, or one stuck half-way)."""
    names = {pg_port: "postgres", redis_port: "redis", sim_port: "node", social_port: "social", api_port: "api"}
    peers = Counter()
    out = subprocess.run(["ss", "-tanpH"], capture_output=True, text=True).stdout
    for line in out.splitlines():
        fields = line.split()
        if len(fields) < 6 or not any(f"pid={p}," in fields[-1] for p in pids) or fields[0] == "LISTEN":
            continue
        if fields[0] != "ESTAB":
            peers["not_established"] += 1
            continue
        local, peer = int(fields[3].rsplit(":", 1)[1]), int(fields[4].rsplit(":", 1)[1])
        peers[names.get(peer) or ("client" if local in (router_port, api_port) else str(peer))] += 1
    return dict(sorted(peers.items()))


def snapshot():
    workers = children(nginx.proc.pid)
    return {"workers": workers, "worker_rss_kb": sum(rss_kb(p) for p in workers),
            "worker_fds": sum(fd_count(p) for p in workers), "worker_tcp": tcp_peers(workers),
            "master_rss_kb": rss_kb(nginx.proc.pid), "indexer_rss_kb": rss_kb(indexer.proc.pid),
            "indexer_fds": fd_count(indexer.proc.pid), "indexer_tcp": tcp_peers([indexer.proc.pid])}


async def sample_memory(stop):
    """Worker RSS under load every 30 s, to tell a plateau from a leak."""
    while not stop.is_set():
        try:
            await asyncio.wait_for(stop.wait(), 30)
        except asyncio.TimeoutError:
            workers = children(nginx.proc.pid)
            rss_samples.append(sum(rss_kb(p) for p in workers))
            log(f"worker RSS {rss_samples[-1]} kB, requests {stats['requests']}")


rss_samples = []


def compare_tables():
    query = (f"SELECT {COLUMNS} FROM wallet_operation_events ORDER BY block_num, trx_in_block, op_in_trx, virtual_op, "
             "account, role, block_seq")
    dumps = {}
    for database in ("wallet", "reference"):
        psql(database, "ANALYZE")  # as in main(): a plan made with statistics
        dumps[database] = psql(database, f"COPY ({query}) TO STDOUT").splitlines()
    equal = dumps["wallet"] == dumps["reference"]
    if not equal:
        a, b = set(dumps["wallet"]), set(dumps["reference"])
        log(f"tables differ: {len(a - b)} rows only in the soaked table, {len(b - a)} only in the clean index")
        for row in sorted(a - b)[:5]:
            log("  soaked only:", row[:300])
        for row in sorted(b - a)[:5]:
            log("  clean only: ", row[:300])
    return equal, len(dumps["wallet"]), len(dumps["reference"])


async def main():
    if not HTTP_CLIENTS + WS_CLIENTS <= CLIENT_ADDRESSES <= 250:
        raise SystemExit(f"SOAK_CLIENT_ADDRESSES={CLIENT_ADDRESSES}: from {HTTP_CLIENTS + WS_CLIENTS} (one per client) to 250")
    rate, burst = api_limiter_defaults()
    for index in range(HTTP_CLIENTS + WS_CLIENTS):
        for address in client_addresses(index):
            budgets[address] = AddressBudget(rate, burst)
    log(f"seed {SEED}, work dir {work}, {CLIENT_ADDRESSES} client addresses, API limiter at its defaults "
        f"({rate}/s, burst {burst})")
    await asyncio.to_thread(start_stack)
    chain_stop = asyncio.Event()
    chain = asyncio.create_task(drive_chain(chain_stop))
    while checkpoint("wallet") < CHAIN_START - 50:
        await asyncio.sleep(0.5)
    # Statistics first: planned with none (autovacuum has not come by yet), the
    # view reads a block's operations again for each of its events (minutes).
    psql("wallet", "ANALYZE")
    busiest = psql("wallet", "SELECT account FROM wallet_operation_events GROUP BY account ORDER BY count(*) DESC LIMIT 40")
    accounts[:] = busiest.split() or accounts

    log(f"warm-up: {WARMUP_SECONDS} s of load, no faults")
    await load(WARMUP_SECONDS, with_faults=False)
    # The largest answer of the run (the pathological block) on every client
    # at once: the workers' buffers reach their high-water mark before the
    # start figures.
    no_stop = asyncio.Event()
    await asyncio.gather(*(http_client(i, no_stop, ["node_big"] * 3) for i in range(HTTP_CLIENTS)),
                         *(ws_client(HTTP_CLIENTS + i, no_stop, ["node_big"] * 3) for i in range(WS_CLIENTS)))
    warm_unexpected = stats["unexpected"]
    await asyncio.sleep(3)
    start = snapshot()
    log("idle after warm-up:", start)

    log(f"faulted phase: {SECONDS} s")
    rss_samples.clear()
    t0 = time.time()
    await load(SECONDS, with_faults=True)
    phase = time.time() - t0
    chain_stop.set()
    await chain
    await asyncio.sleep(3)
    end = snapshot()
    log("idle at the end:", end)
    indexer_alive = indexer.running()
    # One more cycle of load without faults, then idle again: an allocator's
    # high-water mark stays where it is, a leak grows again.
    loaded = rss_samples[:]
    await load(RECOVERY_SECONDS, with_faults=False)
    await asyncio.sleep(3)
    again = snapshot()
    log("idle after one more cycle of load:", again)

    # The indexer reaches the head; then a second indexer makes a clean index
    # of the same chain into "reference".
    final_head = (await sim_control({}))["head"]
    for _ in range(600):
        if checkpoint("wallet") >= final_head:
            break
        await asyncio.sleep(0.1)
    reference = indexer_service("reference-indexer", "reference")
    reference.start()
    for _ in range(1200):
        if checkpoint("reference") >= final_head:
            break
        await asyncio.sleep(0.1)
    reference.kill(signal.SIGTERM)
    equal, rows, reference_rows = compare_tables()
    equal = equal and checkpoint("wallet") == final_head == checkpoint("reference")

    with open(os.path.join(work, "nginx/logs/error.log")) as f:
        alerts = [l for l in f if "[alert]" in l or "[emerg]" in l or "signal" in l]
    for line in alerts[:5]:
        log("nginx:", line.strip())
    kinds = Counter(k for k, _ in unexpected)
    for kind in kinds:
        for detail in [d for k, d in unexpected if k == kind][:3]:
            log("unexpected:", kind, detail)
    for key, detail in sorted(outage_samples.items()):
        log(f"during an outage, {key} x{outage_errors[key]}: {detail}")
    worker_restarts = len(set(again["workers"]) - set(start["workers"]))
    peers = sorted(set(start["worker_tcp"]) | set(again["worker_tcp"]))
    tcp_growth = {p: again["worker_tcp"].get(p, 0) - start["worker_tcp"].get(p, 0) for p in peers}
    non_tcp_growth = again["worker_fds"] - start["worker_fds"] - sum(tcp_growth.values())
    # Leaked descriptors: any but the established TCP connections that idle
    # keepalive and database pools hold (bounded by configuration; their
    # number at idle follows the last load's concurrency, reported apart).
    fd_growth = (non_tcp_growth + again["worker_tcp"].get("not_established", 0)
                 + again["indexer_fds"] - start["indexer_fds"])
    forks_total = len(forks)
    print(f"RESULT soak requests={stats['requests']} unexpected_errors={stats['unexpected']}"
          f" worker_rss_growth_kb={loaded[-1] - loaded[0] if len(loaded) > 1 else 'n/a'}"
          f" fd_growth={fd_growth}"
          f" table_equal={int(equal)} ok={stats['ok']} http_cache_hits={stats['cache_hit']} http_cache_misses={stats['cache_miss']} bad_requests_refused={stats['bad_request_refused_properly']}"
          f" outage_errors={stats['outage_errors']} outage_errors_by_kind={','.join(f'{k}={v}' for k, v in sorted(outage_errors.items())) or 'none'}"
          f" unexpected_by_kind={','.join(f'{k}={v}' for k, v in sorted(kinds.items())) or 'none'}"
          f" warmup_unexpected={warm_unexpected} rate_limited={stats['rate_limited']}"
          f" client_addresses={CLIENT_ADDRESSES} api_requests={stats['api_requests']}"
          f" api_rps_per_address={stats['api_requests'] / (phase + WARMUP_SECONDS + RECOVERY_SECONDS) / CLIENT_ADDRESSES:.2f}"
          f" budget_waits={stats['budget_waits']} budget_wait_s={stats['budget_wait_ms'] / 1000:.0f}"
          f" worker_rss_kb_loaded_first={loaded[0] if loaded else 'n/a'} worker_rss_kb_loaded_last={loaded[-1] if loaded else 'n/a'}"
          f" worker_idle_rss_kb_start={start['worker_rss_kb']} worker_idle_rss_kb_after_faults={end['worker_rss_kb']}"
          f" worker_idle_rss_kb_end={again['worker_rss_kb']}"
          f" worker_fds_after_faults={end['worker_fds']}"
          f" indexer_rss_kb_start={start['indexer_rss_kb']} indexer_rss_kb_end={again['indexer_rss_kb']}"
          f" indexer_fds_start={start['indexer_fds']} indexer_fds_end={again['indexer_fds']}"
          f" nginx_master_rss_kb_start={start['master_rss_kb']} nginx_master_rss_kb_end={again['master_rss_kb']}"
          f" worker_fds_start={start['worker_fds']} worker_fds_end={again['worker_fds']}"
          f" worker_idle_connections_growth_by_peer={','.join(f'{p}:{g:+d}' for p, g in tcp_growth.items() if g) or 'none'}"
          f" worker_fd_growth_not_tcp={non_tcp_growth}"
          f" worker_restarts={worker_restarts} nginx_alerts={len(alerts)} indexer_alive={int(indexer_alive)}"
          f" rows={rows} reference_rows={reference_rows} head={final_head} forks={forks_total}"
          f" outages={len(outages)} seconds={phase:.0f} rps={stats['requests'] / (phase + WARMUP_SECONDS + RECOVERY_SECONDS):.0f}"
          f" worker_rss_kb_loaded_samples={'/'.join(map(str, loaded)) or 'none'} seed={SEED}")


def cleanup():
    for s in ("indexer", "nginx"):
        if s in globals() and globals()[s].running():
            globals()[s].kill(signal.SIGTERM)
    for s in (social, sim, redis):
        s.kill(signal.SIGTERM)
    pg.kill(signal.SIGINT)
    if os.environ.get("SOAK_KEEP") != "1":
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    try:
        asyncio.run(main())
    finally:
        cleanup()
