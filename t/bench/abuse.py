"""Abuse benchmark of the JSON-RPC router (t/bench/run abuse; run by t/bench/abuse.sh).

One nginx worker with the module, the shipped router location
(conf/nginx/jsonrpc-router.conf: the shipped budgets and timeouts, nothing
turned off) and the shipped routing file (conf/routes.hive.json, targets
pointed here); Redis with the shipped maxmemory and eviction policy (read from
compose.yaml); the node simulator (synthetic chain, a time per call so that
concurrency at the node is real) and router-test-backend as the social target.

Honest clients, from 127.0.0.2..127.0.0.5, HTTP and WebSocket, closed loop
with a short think time: cache hits (final block headers and blocks, social
reads), uncached node reads, small batches. Each answer must be a result with
the caller's id; anything else is an honest error.

Each attack, from 127.0.0.99 (a child process of this script, `abuse.py
attack NAME`), runs for PHASE seconds right after a clean phase of BASELINE
seconds, its baseline (the machine is shared: each attack is compared with
the moments just before it); a clean phase ends the run (recovery):
  amplify      batches of 50 identical calls to a large (~1 MB) cached result
  ws_flood     WebSocket connections sending batches of uncached calls as fast
               as the router reads them
  slow_reader  WebSocket connections asking for large answers and never reading
               (45 s: beyond jsonrpc_router_ws_send_timeout's 30 s)
  slow_post    256 connections trickling a POST body, a byte every 5 s
  big_hits     concurrent hits on a cached entry over 2 MiB (Redis only)
  key_spray    many distinct client-chosen cache keys (final block ranges)
For each phase: honest throughput (requests begun in the phase and answered)
and p99 against its baseline, honest errors (a request counts in the phase it
began in, also when it fails later), the worker's peak RSS and descriptors and
its CPU share (cpu) and its share of time spent ready to run but waiting
for a CPU (wait: cpu + wait near 1 is a worker that was CPU-bound; c_wait the same for the honest clients'
process), the node's peak concurrent requests (hive-node-sim /sim/status
rpc_in_flight_peak), Redis used_memory, what the attacker got, and whom the
router closed (its info lines in the error log).
Goals: honest ratio >= 0.8 and no honest error under every attack; worker RSS
within ABUSE_RSS_BOUND_MB; the node never above the configured concurrency
(jsonrpc_router_upstream_connections, 64, x 1 worker).

Ends with: RESULT abuse attacks=.. worst_honest_ratio=.. honest_errors=..
peak_worker_rss_mb=.. peak_node_concurrency=.. ...
Environment: ABUSE_PHASE_SECONDS (default 20), ABUSE_BASELINE_SECONDS (10), ABUSE_RSS_BOUND_MB (256),
ABUSE_ATTACKS (comma list, default all), ABUSE_KEEP=1 keeps the work directory.
"""
import asyncio
import base64
import json
import os
import random
import re
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

from benchlib import fd_count, free_port, nginx_temp_paths, rss_kb, wait_port

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("WALLET_BUILD_DIR", os.path.join(ROOT, "build"))
PHASE_SECONDS = float(os.environ.get("ABUSE_PHASE_SECONDS", "20"))
BASELINE_SECONDS = float(os.environ.get("ABUSE_BASELINE_SECONDS", "10"))
RSS_BOUND_MB = float(os.environ.get("ABUSE_RSS_BOUND_MB", "256"))
ATTACKS = os.environ.get("ABUSE_ATTACKS", "amplify,ws_flood,slow_reader,slow_post,big_hits,key_spray").split(",")
# A slow reader is cut after jsonrpc_router_ws_send_timeout (30 s shipped): its phase outlasts it.
SLOW_READER_SECONDS = 45
RAMP_SECONDS = 2       # the attack runs this long before the honest clients are measured
SETTLE_SECONDS = 3     # between phases, after the attacker is gone

HONEST_ADDRESSES = ["127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"]
ABUSER_ADDRESS = "127.0.0.99"
HONEST_HTTP = 6
HONEST_WS = 4
THINK_SECONDS = 0.01
REQUEST_TIMEOUT = 20

CHAIN_HEAD = 100000
LIB_LAG = 5
CALL_LATENCY_MS = 5    # the node's time per request
# block_api.get_block_range of final blocks, cached with a day's expiry
# (expire_if_reversible): sizes measured at start (large_ranges()).
AMPLIFY_TARGET_BYTES = 1 << 20
BIG_TARGET_BYTES = 3 << 20


def log(*parts):
    print(f"[abuse {time.strftime('%H:%M:%S')}]", *parts, file=sys.stderr, flush=True)


def envelope(method, params, rid):
    return {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}


def block_range(start, count, rid=1):
    return envelope("block_api.get_block_range", {"starting_block_num": start, "count": count}, rid)


# ---------------------------------------------------------------------------
# A minimal HTTP/1.1 keep-alive client over asyncio streams (both sides).

async def http_post(conn, body, timeout=REQUEST_TIMEOUT):
    """POSTs body on conn = (reader, writer); returns (status, headers, body bytes)."""
    reader, writer = conn
    data = body.encode()
    writer.write(b"POST / HTTP/1.1\r\nHost: abuse\r\nContent-Type: application/json\r\nContent-Length: " +
                 str(len(data)).encode() + b"\r\n\r\n" + data)
    head_raw = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout)
    lines = head_raw.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {l.split(":", 1)[0].lower(): l.split(":", 1)[1].strip() for l in lines[1:] if ":" in l}
    if "content-length" in headers:
        text = await asyncio.wait_for(reader.readexactly(int(headers["content-length"])), timeout)
    else:
        text = await asyncio.wait_for(reader.read(), timeout)
        headers["connection"] = "close"
    return status, headers, text


async def http_connect(port, address):
    return await asyncio.open_connection("127.0.0.1", port, local_addr=(address, 0), limit=1 << 20)


# ---------------------------------------------------------------------------
# The attacks (child process: `abuse.py attack NAME SECONDS`, settings in the environment).

CODE_BYTES = re.compile(rb'"error":\{"code":(-?\d+)')
CODE_TEXT = re.compile(r'"error":\{"code":(-?\d+)')


class Attack:
    def __init__(self):
        self.port = int(os.environ["ABUSE_ROUTER_PORT"])
        self.amplify_range = json.loads(os.environ["ABUSE_AMPLIFY_RANGE"])
        self.big_range = json.loads(os.environ["ABUSE_BIG_RANGE"])
        self.lib = int(os.environ["ABUSE_LIB"])
        self.counts = {}
        self.rng = random.Random(99)

    def count(self, key, n=1):
        self.counts[key] = self.counts.get(key, 0) + n

    def tally(self, text):
        """Counts the results and error codes of an answer (object or batch), without
        parsing it: the attacker must not compete with the router for the CPU."""
        codes = CODE_BYTES if isinstance(text, bytes) else CODE_TEXT
        self.count("results", text.count(b'"result":' if isinstance(text, bytes) else '"result":'))
        for code in codes.findall(text):
            self.count(f"error_{int(code)}")

    async def http_loop(self, stop, make_body):
        conn = None
        while not stop.is_set():
            try:
                if conn is None:
                    conn = await http_connect(self.port, ABUSER_ADDRESS)
                status, headers, text = await http_post(conn, make_body(), timeout=60)
                self.count(f"http_{status}")
                self.tally(text)
                if headers.get("connection", "").lower() == "close":
                    conn[1].close()
                    conn = None
            except (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError, ValueError) as e:
                self.count(f"transport_{type(e).__name__}")
                if conn:
                    conn[1].close()
                conn = None
                await asyncio.sleep(0.05)

    async def amplify(self, stop):
        one = json.dumps([block_range(*self.amplify_range, rid=i) for i in range(50)])
        await asyncio.gather(*(self.http_loop(stop, lambda: one) for _ in range(8)))

    async def big_hits(self, stop):
        one = json.dumps(block_range(*self.big_range))
        await asyncio.gather(*(self.http_loop(stop, lambda: one) for _ in range(16)))

    async def key_spray(self, stop):
        def body():
            return json.dumps([block_range(self.rng.randint(1, self.lib - 300), self.rng.randint(5, 60), rid=i)
                               for i in range(10)])
        await asyncio.gather(*(self.http_loop(stop, body) for _ in range(8)))

    async def ws_flood(self, stop):
        import websockets

        async def one_connection():
            while not stop.is_set():
                try:
                    async with websockets.connect(f"ws://127.0.0.1:{self.port}/", ping_interval=None, max_size=None,
                                                  local_addr=(ABUSER_ADDRESS, 0), open_timeout=10) as ws:
                        async def reader():
                            async for text in ws:
                                self.tally(text)
                        reading = asyncio.create_task(reader())
                        n = 0
                        while not stop.is_set() and not reading.done():
                            n += 1
                            batch = [envelope("condenser_api.get_dynamic_global_properties", [], n * 100 + i)
                                     for i in range(50)]
                            await ws.send(json.dumps(batch))
                            self.count("messages_sent")
                        reading.cancel()
                except (OSError, asyncio.TimeoutError, websockets.exceptions.WebSocketException) as e:
                    self.count(f"ws_{type(e).__name__}")
                    await asyncio.sleep(0.1)
        await asyncio.gather(*(one_connection() for _ in range(4)))

    def ws_raw(self):
        """A WebSocket connection by hand, so that it can stop reading: small receive buffer."""
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.bind((ABUSER_ADDRESS, 0))
        s.connect(("127.0.0.1", self.port))
        key = base64.b64encode(os.urandom(16)).decode()
        s.sendall(f"GET / HTTP/1.1\r\nHost: abuse\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                  f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n".encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = s.recv(1)
            if not chunk:
                raise OSError("closed during the handshake")
            head += chunk
        if b" 101 " not in head.split(b"\r\n")[0]:
            raise OSError(head.split(b"\r\n")[0].decode())
        return s

    @staticmethod
    def ws_frame(text):
        payload = text.encode()
        mask = os.urandom(4)
        n = len(payload)
        header = bytes([0x81]) + (bytes([0x80 | n]) if n < 126 else bytes([0x80 | 126]) + n.to_bytes(2, "big")
                                  if n < 65536 else bytes([0x80 | 127]) + n.to_bytes(8, "big"))
        return header + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))

    async def slow_reader(self, stop):
        sockets = []
        message = self.ws_frame(json.dumps(block_range(*self.amplify_range)))
        for _ in range(16):
            try:
                s = await asyncio.to_thread(self.ws_raw)
            except OSError as e:
                self.count(f"connect_{e}")
                continue
            s.setblocking(False)
            sockets.append(s)
            self.count("connections")
        # Ask, and never read: each message is a ~1 MB answer the router must hold or drop.
        opened = time.time()
        sent = [0] * len(sockets)
        cut_after = {}
        while not stop.is_set():
            for i, s in enumerate(sockets):
                if i not in cut_after and peer_closed(s):
                    cut_after[i] = time.time() - opened
                if sent[i] >= 200 or i in cut_after:
                    continue
                try:
                    s.send(message)
                    sent[i] += 1
                    self.count("messages_sent")
                except OSError:
                    pass  # full (the router stopped reading) or closed
            await asyncio.sleep(0.05)
        self.count("cut_by_router", len(cut_after))
        self.count("still_open", len(sockets) - len(cut_after))
        if cut_after:
            self.counts["cut_after_s"] = f"{min(cut_after.values()):.0f}-{max(cut_after.values()):.0f}"
        for s in sockets:
            s.close()

    async def slow_post(self, stop):
        conns = []
        for _ in range(256):
            try:
                conn = await http_connect(self.port, ABUSER_ADDRESS)
            except OSError as e:
                self.count(f"connect_{type(e).__name__}")
                continue
            conn[1].write(b"POST / HTTP/1.1\r\nHost: abuse\r\nContent-Type: application/json\r\n"
                          b"Content-Length: 900000\r\n\r\n[")
            conns.append(conn)
            self.count("connections")
        # One byte every 5 s: within client_body_timeout (10 s) between two reads.
        while not stop.is_set():
            for reader, writer in conns:
                if not writer.is_closing():
                    writer.write(b" ")
            try:
                await asyncio.wait_for(stop.wait(), 5)
            except asyncio.TimeoutError:
                pass
        for reader, writer in conns:
            closed = reader.at_eof() or writer.is_closing() or peer_closed(writer.get_extra_info("socket"))
            self.count("cut_by_router" if closed else "still_open")
            writer.close()


def peer_closed(sock):
    """Whether the router closed this connection, seen without reading from it: the
    TCP state (tcp_info's first byte) is CLOSE_WAIT after its FIN, CLOSE after a reset."""
    try:
        return sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 8)[0] in (7, 8)
    except OSError:
        return True


async def run_attack(name, seconds):
    attack = Attack()
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    task = asyncio.create_task(getattr(attack, name)(stop))
    try:
        await asyncio.wait_for(stop.wait(), seconds)
    except asyncio.TimeoutError:
        stop.set()
    # The request loops are cut short; the slow attacks count what the router closed.
    try:
        await asyncio.wait_for(task, 3)
    except asyncio.TimeoutError:
        pass
    print(json.dumps(attack.counts, sort_keys=True), flush=True)


# ---------------------------------------------------------------------------
# The stack.

class Stack:
    def __init__(self, work):
        self.work = work
        self.procs = []
        self.redis_port, self.sim_port, self.social_port, self.router_port = (free_port() for _ in range(4))

    def start(self, name, argv, port):
        logf = open(os.path.join(self.work, name + ".log"), "ab")
        proc = subprocess.Popen(argv, stdout=logf, stderr=subprocess.STDOUT, start_new_session=True)
        logf.close()
        self.procs.append(proc)
        wait_port(port, name)
        return proc

    def shipped_redis_memory(self):
        """maxmemory and its policy as compose.yaml runs Redis."""
        with open(os.path.join(ROOT, "compose.yaml")) as f:
            text = f.read()
        memory = re.search(r'"--maxmemory",\s*"([^"]+)"', text).group(1)
        policy = re.search(r'"--maxmemory-policy",\s*"([^"]+)"', text).group(1)
        return memory, policy

    def up(self):
        self.maxmemory, self.policy = self.shipped_redis_memory()
        self.start("redis", ["redis-server", "--bind", "127.0.0.1", "--port", str(self.redis_port), "--save", "",
                             "--appendonly", "no", "--dir", self.work, "--maxmemory", self.maxmemory,
                             "--maxmemory-policy", self.policy], self.redis_port)
        self.start("sim", [os.path.join(BUILD, "t/sim/hive-node-sim"), "--synthetic", "--seed", "7", "--length",
                           str(CHAIN_HEAD), "--block-interval-ms", "0", "--lib-lag", str(LIB_LAG),
                           "--pathological-every", "0", "--call-latency-ms", str(CALL_LATENCY_MS),
                           "--max-connections", "4096", "--port", str(self.sim_port)], self.sim_port)
        self.start("social", [os.path.join(BUILD, "t/backends/router-test-backend"), "--name", "social", "--port",
                              str(self.social_port)], self.social_port)
        with open(os.path.join(ROOT, "conf/routes.hive.json")) as f:
            routes = json.load(f)
        routes["targets"] = {"node": f"http://127.0.0.1:{self.sim_port}", "hafah": f"http://127.0.0.1:{self.sim_port}",
                             "social": f"http://127.0.0.1:{self.social_port}",
                             "wallet_indexer": f"http://127.0.0.1:{free_port()}"}  # not called here
        routes_file = os.path.join(self.work, "routes.json")
        with open(routes_file, "w") as f:
            json.dump(routes, f)
        # The shipped location as it is, with this run's routing file and Redis.
        with open(os.path.join(ROOT, "conf/nginx/jsonrpc-router.conf")) as f:
            location = f.read()
        # The node's bound: the shipped value, or the directive's default (x 1 worker).
        shipped = re.search(r"^\s*jsonrpc_router_upstream_connections\s+(\d+);", location, re.M)
        self.node_concurrency = int(shipped.group(1)) if shipped else 64
        location = location.replace("/etc/wallet-rpc/routes.json", routes_file)
        location = location.replace("127.0.0.1:6379", f"127.0.0.1:{self.redis_port}")
        ngx = os.path.join(self.work, "nginx")
        os.makedirs(os.path.join(ngx, "logs"))
        os.makedirs(os.path.join(ngx, "tmp"))
        with open(os.path.join(ngx, "router.conf"), "w") as f:
            f.write(location)
        with open(os.path.join(ngx, "nginx.conf"), "w") as f:
            f.write(f"""daemon off;
master_process on;
worker_processes 1;
{"user root root;" if os.geteuid() == 0 else ""}
error_log {ngx}/logs/error.log info;  # the router says whom it closed, at info
pid {ngx}/nginx.pid;
load_module {BUILD}/ngx_module/ngx_http_wallet_module.so;
events {{ worker_connections 4096; }}  # as scripts/render-demo-nginx
http {{
    access_log off;
{nginx_temp_paths(ngx)}    server {{
        listen 127.0.0.1:{self.router_port};
        include {ngx}/router.conf;
    }}
}}
""")
        self.nginx = self.start("nginx", ["/usr/sbin/nginx", "-p", ngx, "-c", os.path.join(ngx, "nginx.conf")],
                                self.router_port)
        for _ in range(100):
            workers = subprocess.run(["pgrep", "-P", str(self.nginx.pid)], capture_output=True, text=True).stdout.split()
            if workers:
                self.worker = int(workers[0])
                break
            time.sleep(0.05)

    def down(self):
        for proc in reversed(self.procs):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)


async def redis_used_memory(port):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"INFO memory\r\n")
    size = int((await reader.readline())[1:])
    text = (await reader.readexactly(size + 2)).decode()
    writer.close()
    return int(re.search(r"^used_memory:(\d+)", text, re.M).group(1))


async def sim_call(port, path, body=None):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    data = json.dumps(body).encode() if body is not None else b""
    method = b"POST" if body is not None else b"GET"
    writer.write(method + b" " + path.encode() + b" HTTP/1.1\r\nHost: sim\r\nConnection: close\r\n"
                 b"Content-Length: " + str(len(data)).encode() + b"\r\n\r\n" + data)
    raw = await reader.read()
    writer.close()
    return json.loads(raw.split(b"\r\n\r\n", 1)[1])


# ---------------------------------------------------------------------------
# The honest clients and the measurement.

class Honest:
    def __init__(self, stack):
        self.stack = stack
        self.rng = random.Random(7)
        self.phase = None        # the phase being measured, or None between phases
        self.latencies = {}      # phase -> [seconds]
        self.errors = {}         # phase -> count
        self.samples = {}        # phase -> first error texts
        self.next_id = 0
        lib = CHAIN_HEAD - LIB_LAG
        self.hot_headers = [lib - 1000 - 37 * i for i in range(40)]
        self.hot_blocks = [lib - 2000 - 53 * i for i in range(20)]

    def request(self):
        """(JSON text, ids expected)."""
        self.next_id += 1
        rid = self.next_id
        kind = self.rng.choice(["header", "header", "block", "social", "dgp", "dgp", "db_dgp", "batch"])
        if kind == "header":
            calls = [envelope("block_api.get_block_header", {"block_num": self.rng.choice(self.hot_headers)}, rid)]
        elif kind == "block":
            calls = [envelope("condenser_api.get_block", [self.rng.choice(self.hot_blocks)], rid)]
        elif kind == "social":
            calls = [envelope("bridge.get_ranked_posts", {"sort": "trending", "tag": f"t{rid % 5}"}, rid)]
        elif kind == "dgp":
            calls = [envelope("condenser_api.get_dynamic_global_properties", [], rid)]
        elif kind == "db_dgp":
            calls = [envelope("database_api.get_dynamic_global_properties", {}, rid)]
        else:
            calls = [envelope("block_api.get_block_header", {"block_num": self.rng.choice(self.hot_headers)}, f"{rid}a"),
                     envelope("condenser_api.get_dynamic_global_properties", [], f"{rid}b"),
                     envelope("bridge.get_ranked_posts", {"sort": "trending", "tag": "t1"}, f"{rid}c")]
            return json.dumps(calls), [c["id"] for c in calls]
        return json.dumps(calls[0]), [rid]

    def judge(self, text, ids, t0, phase):
        try:
            answer = json.loads(text)
            answers = answer if isinstance(answer, list) else [answer]
            ok = len(answers) == len(ids) and all(isinstance(a, dict) and "result" in a and "error" not in a
                                                  and a.get("id") == rid for a, rid in zip(answers, ids))
        except ValueError:
            ok = False
        self.finish(ok, text[:200], t0, phase)

    def finish(self, ok, detail, t0, phase):
        """Counts a request in the phase it began in (None: between phases), whenever it ends:
        a request stuck past its phase still counts there, as an error once it times out."""
        if phase is None:
            return
        if ok:
            self.latencies.setdefault(phase, []).append(time.time() - t0)
        else:
            self.errors[phase] = self.errors.get(phase, 0) + 1
            samples = self.samples.setdefault(phase, [])
            if len(samples) < 3:
                samples.append(detail)

    async def http_client(self, address, stop):
        conn = None
        while not stop.is_set():
            body, ids = self.request()
            phase, t0 = self.phase, time.time()
            try:
                if conn is None:
                    conn = await http_connect(self.stack.router_port, address)
                status, headers, text = await http_post(conn, body)
                self.judge(text, ids, t0, phase)
                if headers.get("connection", "").lower() == "close":
                    conn[1].close()
                    conn = None
            except (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError, ValueError) as e:
                self.finish(False, f"HTTP {type(e).__name__} {e}", t0, phase)
                if conn:
                    conn[1].close()
                conn = None
            await asyncio.sleep(THINK_SECONDS)

    async def ws_client(self, address, stop):
        import websockets
        while not stop.is_set():
            phase, t0 = self.phase, time.time()
            try:
                async with websockets.connect(f"ws://127.0.0.1:{self.stack.router_port}/", ping_interval=None,
                                              max_size=64 << 20, open_timeout=10, local_addr=(address, 0)) as ws:
                    while not stop.is_set():
                        body, ids = self.request()
                        phase, t0 = self.phase, time.time()
                        await ws.send(body)
                        self.judge(await asyncio.wait_for(ws.recv(), REQUEST_TIMEOUT), ids, t0, phase)
                        await asyncio.sleep(THINK_SECONDS)
            except (OSError, asyncio.TimeoutError, websockets.exceptions.WebSocketException) as e:
                self.finish(False, f"WebSocket {type(e).__name__} {e}", t0, phase)
                await asyncio.sleep(0.1)


class Sampler:
    """Peaks of the worker's RSS and descriptors and of Redis memory over a phase."""

    def __init__(self, stack):
        self.stack = stack
        self.reset()

    def reset(self):
        self.rss_kb = self.fds = self.redis = 0

    async def run(self, stop):
        while not stop.is_set():
            try:
                self.rss_kb = max(self.rss_kb, rss_kb(self.stack.worker))
                self.fds = max(self.fds, fd_count(self.stack.worker))
                self.redis = max(self.redis, await redis_used_memory(self.stack.redis_port))
            except (OSError, ValueError, AttributeError) as e:
                log(f"sampler: {type(e).__name__} {e}")
            await asyncio.sleep(0.2)


def p99(values):
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]


async def large_ranges(port, lib):
    """(start, count) of final block ranges whose answers are about AMPLIFY_TARGET_BYTES and
    BIG_TARGET_BYTES (over the 2 MiB the memory layer keeps), fetched once so that they are cached."""
    conn = await http_connect(port, "127.0.0.1")
    found = {}
    for name, target, start in (("amplify", AMPLIFY_TARGET_BYTES, lib - 5000), ("big", BIG_TARGET_BYTES, lib - 9000)):
        _, _, text = await http_post(conn, json.dumps(block_range(start, 10)))
        per_block = max(len(text) // 10, 1)
        count = min(1000, max(1, target // per_block))
        _, headers, text = await http_post(conn, json.dumps(block_range(start, count)))
        if b'"result"' not in text:
            raise RuntimeError(f"get_block_range answered {text[:300]}")
        found[name] = ((start, count), len(text))
    _, headers, _ = await http_post(conn, json.dumps(block_range(*found["amplify"][0])))
    conn[1].close()
    return found, headers.get("x-jsonrpc-cache", "?")


async def main():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    work = tempfile.mkdtemp(prefix="router-abuse-")
    if os.geteuid() == 0:
        os.chmod(work, 0o755)
    stack = Stack(work)
    try:
        stack.up()
        await run_phases(stack, work)
    finally:
        stack.down()
        if os.environ.get("ABUSE_KEEP") == "1":
            log(f"work directory kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


async def run_phases(stack, work):
    router = stack.router_port
    lib = CHAIN_HEAD - LIB_LAG
    # The router learns the node's LIB (chain-nodes poll) before final answers are cached.
    for _ in range(100):
        status = await sim_call(stack.sim_port, "/sim/status")
        conn = await http_connect(router, "127.0.0.1")
        _, headers, _ = await http_post(conn, json.dumps(envelope("block_api.get_block_header", {"block_num": lib - 1}, 1)))
        _, headers, _ = await http_post(conn, json.dumps(envelope("block_api.get_block_header", {"block_num": lib - 1}, 1)))
        conn[1].close()
        if headers.get("x-jsonrpc-cache", "").upper() == "HIT":
            break
        await asyncio.sleep(0.2)
    else:
        raise RuntimeError("final block headers are not cached")
    ranges, cache = await large_ranges(router, status["last_irreversible_block_num"])
    log(f"amplify range {ranges['amplify'][0]}: {ranges['amplify'][1]} bytes; big range {ranges['big'][0]}: "
        f"{ranges['big'][1]} bytes; second amplify request: {cache}")
    attack_env = dict(os.environ, ABUSE_ROUTER_PORT=str(router), ABUSE_AMPLIFY_RANGE=json.dumps(ranges["amplify"][0]),
                      ABUSE_BIG_RANGE=json.dumps(ranges["big"][0]), ABUSE_LIB=str(lib))

    honest = Honest(stack)
    sampler = Sampler(stack)
    stop = asyncio.Event()
    tasks = [asyncio.create_task(honest.http_client(HONEST_ADDRESSES[i % len(HONEST_ADDRESSES)], stop))
             for i in range(HONEST_HTTP)]
    tasks += [asyncio.create_task(honest.ws_client(HONEST_ADDRESSES[i % len(HONEST_ADDRESSES)], stop))
              for i in range(HONEST_WS)]
    tasks.append(asyncio.create_task(sampler.run(stop)))
    await asyncio.sleep(5)  # warm: the honest keys cached, connections open

    # Each attack follows a clean phase of its own: the machine is shared, so
    # each attack is compared with the moments just before it.
    plan = []
    for attack in ATTACKS:
        plan += [(f"clean:{attack}", None, BASELINE_SECONDS),
                 (attack, attack, SLOW_READER_SECONDS if attack == "slow_reader" else PHASE_SECONDS)]
    plan.append(("recovery", None, BASELINE_SECONDS))
    error_log = os.path.join(work, "nginx", "logs", "error.log")
    rows = []
    for phase, attack, seconds in plan:
        attacker = None
        await sim_call(stack.sim_port, "/sim/control", {"reset_peak": True})
        log_start = os.path.getsize(error_log)
        if attack:
            attacker = await asyncio.create_subprocess_exec(
                sys.executable, os.path.abspath(__file__), "attack", attack, str(seconds + RAMP_SECONDS),
                stdout=asyncio.subprocess.PIPE, env=attack_env)
            await asyncio.sleep(RAMP_SECONDS)
        sampler.reset()
        cpu_start, wait_start = worker_cpu_seconds(stack.worker), worker_wait_seconds(stack.worker)
        clients_wait_start = worker_wait_seconds(os.getpid())
        honest.phase = phase
        start = time.time()
        await asyncio.sleep(seconds)
        honest.phase = None
        elapsed = time.time() - start
        cpu = (worker_cpu_seconds(stack.worker) - cpu_start) / elapsed
        waited = (worker_wait_seconds(stack.worker) - wait_start) / elapsed
        clients_waited = (worker_wait_seconds(os.getpid()) - clients_wait_start) / elapsed
        attack_counts = {}
        if attacker:
            out, _ = await attacker.communicate()
            try:
                attack_counts = json.loads(out.decode().strip().splitlines()[-1])
            except (ValueError, IndexError):
                attack_counts = {"output": out.decode()[-200:]}
        status = await sim_call(stack.sim_port, "/sim/status")
        with open(error_log, "rb") as f:
            f.seek(log_start)
            logged = f.read().decode("latin-1")
        closes = {"ws_send_timeout": logged.count("WebSocket client did not read its answers within"),
                  "ws_max_output": logged.count("WebSocket client not reading:"),
                  "ws_worker_output": logged.count("over jsonrpc_router_ws_worker_output"),
                  "client_connections": logged.count("Too many connections from this client"),
                  "body_timeout": logged.count("client timed out")}
        rows.append({"phase": phase, "attack": attack, "elapsed": elapsed, "rss_mb": sampler.rss_kb / 1024,
                     "fds": sampler.fds, "cpu": cpu, "wait": waited, "clients_wait": clients_waited, "node_peak": status["rpc_in_flight_peak"],
                     "redis_mb": sampler.redis / (1 << 20), "attacker": attack_counts,
                     "closed": {k: v for k, v in closes.items() if v}})
        log(f"{phase}: worker {sampler.rss_kb / 1024:.1f} MB {sampler.fds} fds cpu {cpu:.2f}; node peak "
            f"{status['rpc_in_flight_peak']}; redis {sampler.redis / (1 << 20):.1f} MB; attacker "
            f"{json.dumps(attack_counts, sort_keys=True)}; router closed {rows[-1]['closed']}")
        await asyncio.sleep(SETTLE_SECONDS)
    stop.set()
    # The honest requests still out end (answered or timed out) and count in their phase.
    await asyncio.gather(*tasks, return_exceptions=True)
    for row in rows:
        lat = honest.latencies.get(row["phase"], [])
        row.update(rps=len(lat) / row["elapsed"], p99_ms=p99(lat) * 1000, errors=honest.errors.get(row["phase"], 0),
                   samples=honest.samples.get(row["phase"], []))
    report(rows, stack)


def worker_wait_seconds(pid):
    """Time the worker was ready to run but waited for a CPU (/proc/PID/schedstat):
    with its CPU time near the phase's length, the worker was CPU-bound on this machine."""
    with open(f"/proc/{pid}/schedstat") as f:
        return int(f.read().split()[1]) / 1e9


def worker_cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def report(rows, stack):
    configured = stack.node_concurrency
    print(f"{'phase':<20} {'honest_rps':>10} {'ratio':>6} {'p99_ms':>8} {'p99_x':>6} {'errors':>6} {'rss_mb':>7} "
          f"{'fds':>5} {'cpu':>5} {'wait':>5} {'c_wait':>6} {'node_peak':>9} {'redis_mb':>8}  attacker / closed by the router")
    baseline = rows[0]
    for r in rows:
        if r["attack"] is None and r["phase"] != "recovery":
            baseline = r
        r["ratio"] = r["rps"] / baseline["rps"] if baseline["rps"] else 0
        r["p99_x"] = r["p99_ms"] / baseline["p99_ms"] if baseline["p99_ms"] else 0
        print(f"{r['phase']:<20} {r['rps']:>10.0f} {r['ratio']:>6.2f} {r['p99_ms']:>8.1f} {r['p99_x']:>6.2f} "
              f"{r['errors']:>6} {r['rss_mb']:>7.1f} {r['fds']:>5} {r['cpu']:>5.2f} {r['wait']:>5.2f} {r['clients_wait']:>6.2f} {r['node_peak']:>9} "
              f"{r['redis_mb']:>8.1f}  {json.dumps(r['attacker'], sort_keys=True)} {json.dumps(r['closed'])}")
        for sample in r["samples"]:
            print(f"    honest error: {sample}")
    attacks = [r for r in rows if r["attack"]]
    cleans = [r for r in rows if not r["attack"] and r["phase"] != "recovery"]
    worst = min(attacks, key=lambda r: r["ratio"])
    peak_rss = max(r["rss_mb"] for r in rows)
    peak_node = max(r["node_peak"] for r in rows)
    errors = sum(r["errors"] for r in attacks)
    goals = {"honest_ratio>=0.8": all(r["ratio"] >= 0.8 for r in attacks), "honest_errors=0": errors == 0,
             f"worker_rss<={RSS_BOUND_MB:.0f}MB": peak_rss <= RSS_BOUND_MB,
             f"node_concurrency<={configured}": peak_node <= configured}
    for goal, held in goals.items():
        print(f"goal {goal}: {'held' if held else 'MISSED'}")
    print(f"RESULT abuse attacks={len(attacks)} worst_honest_ratio={worst['ratio']:.2f} worst_attack={worst['phase']} "
          f"honest_errors={errors} peak_worker_rss_mb={peak_rss:.1f} rss_bound_mb={RSS_BOUND_MB:.0f} "
          f"peak_node_concurrency={peak_node} configured_node_concurrency={configured} "
          f"peak_redis_mb={max(r['redis_mb'] for r in rows):.1f} redis_maxmemory={stack.maxmemory} "
          f"clean_rps={statistics.median(r['rps'] for r in cleans):.0f} "
          f"clean_p99_ms={statistics.median(r['p99_ms'] for r in cleans):.1f} "
          f"worst_p99_ms={max(r['p99_ms'] for r in attacks):.1f} recovery_ratio={rows[-1]['ratio']:.2f} "
          f"phase_seconds={PHASE_SECONDS:.0f} goals_met={sum(goals.values())}/{len(goals)}")


if __name__ == "__main__":
    if len(sys.argv) >= 4 and sys.argv[1] == "attack":
        asyncio.run(run_attack(sys.argv[2], float(sys.argv[3])))
    else:
        asyncio.run(main())
