"""Pieces shared by the Python benchmarks (soak.py, abuse.py): ports on the
loopback interface and what /proc tells of a process."""
import os
import socket
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_open(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


def wait_port(port, what, timeout=60, logs=None):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if port_open(port):
            return
        time.sleep(0.05)
    raise RuntimeError(f"{what} did not open port {port}" + (f" (logs in {logs})" if logs else ""))


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def fd_count(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def nginx_temp_paths(ngx):
    """The http{} lines that keep a private nginx's temporary files under ngx/tmp."""
    return "".join(f"    {kind}_temp_path {ngx}/tmp/{name};\n" for kind, name in
                   (("client_body", "body"), ("proxy", "proxy"), ("fastcgi", "fastcgi"), ("uwsgi", "uwsgi"),
                    ("scgi", "scgi")))
