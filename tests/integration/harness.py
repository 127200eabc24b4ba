"""tests/integration/harness.py — start real `queen serve` processes and talk HTTP to them.

Only the Python standard library. A server is started on port 0 with a fresh data directory on
disk; the harness reads the port from the `node.listening` log line (an event, not a sleep).
Randomized tests take QUEEN_SEED (or draw one) and print it."""
import http.client
import json
import os
import random
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import unittest

QUEEN_BIN = os.environ.get("QUEEN_BIN", os.path.join(os.path.dirname(__file__), "../../build/release/cli/queen"))
SOURCE_DIR = os.environ.get("QUEEN_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "../.."))


def seed_from_env():
    seed = int(os.environ.get("QUEEN_SEED", "0")) or random.randrange(1, 2**31)
    print(f"seed={seed} (rerun with QUEEN_SEED={seed})", flush=True)
    return seed


class Server:
    """A `queen serve` child process. Use as a context manager or call start()/stop()."""

    def __init__(self, data_dir=None, settings=None, env=None, args=None, host="127.0.0.1"):
        self.owns_dir = data_dir is None
        self.data_dir = data_dir or tempfile.mkdtemp(prefix="queen-it-", dir=os.environ.get("QUEEN_TEST_DIR"))
        self.settings = {"http.address": "127.0.0.1", "http.port": "0", "tenant.sweep_interval_ms": "200"}
        self.settings.update(settings or {})
        self.env = dict(os.environ, **(env or {}))
        self.args = args or []
        self.host = host  # where its HTTP listener is reached (http.address)
        self.process = None
        self.port = None
        self.log_lines = []
        self._listening = threading.Event()
        self._reader = None

    def start(self, timeout=30):
        self.spawn()
        return self.wait_listening(timeout)

    def spawn(self):
        """Starts the process without waiting for it to listen (see wait_listening)."""
        cmd = [QUEEN_BIN, "serve", "--data-dir", self.data_dir] + self.args
        for key, value in self.settings.items():
            cmd += ["--set", f"{key}={value}"]
        self._listening.clear()
        self.port = None
        self.process = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=self.env, text=True)
        self._reader = threading.Thread(target=self._read_output, daemon=True)
        self._reader.start()
        return self

    def wait_listening(self, timeout=30):
        if not self._listening.wait(timeout) or self.port is None:
            self.kill()
            raise RuntimeError("queen serve did not start:\n" + "".join(self.log_lines[-50:]))
        return self

    def _read_output(self):
        for line in self.process.stdout:
            self.log_lines.append(line)
            if os.environ.get("QUEEN_TEST_VERBOSE"):
                print("  server| " + line, end="", flush=True)
            m = re.search(r"node\.listening http=[^ ]*:(\d+)", line)
            if m:
                self.port = int(m.group(1))
                self._listening.set()
        self._listening.set()

    def stop(self, sig=signal.SIGTERM, timeout=60):
        """Stops the server with `sig` and returns its exit code."""
        if self.process is None:
            return None
        if self.process.poll() is None:
            self.process.send_signal(sig)
        code = self.process.wait(timeout)
        self._reader.join(timeout)
        self.process.stdout.close()
        self.process = None
        return code

    def kill(self):
        return self.stop(signal.SIGKILL)

    def cleanup(self):
        if self.process is not None:
            self.kill()
        if self.owns_dir and not os.environ.get("QUEEN_KEEP_TEST_DIRS"):
            shutil.rmtree(self.data_dir, ignore_errors=True)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.cleanup()

    def client(self, timeout=30, source_address=None, ssl_context=None):
        return Client(self.host, self.port, timeout, source_address, ssl_context)

    def output(self):
        return "".join(self.log_lines)


class Response:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers
        self.body = body

    def json(self):
        return json.loads(self.body) if self.body else None

    def __repr__(self):
        return f"<{self.status} {self.body[:300]!r}>"


class Client:
    """A keep-alive HTTP/1.1 client (one connection, reconnects when the server closed it); HTTPS
    with `ssl_context` (an ssl.SSLContext)."""

    def __init__(self, host, port, timeout=30, source_address=None, ssl_context=None):
        self.host, self.port, self.timeout = host, port, timeout
        self.source_address = source_address  # (ip, 0): connect from that local address
        self.ssl_context = ssl_context
        self.conn = None

    def request(self, method, path, body=None, headers=None, raw_body=None):
        hdrs = dict(headers or {})
        data = raw_body
        if body is not None:
            data = json.dumps(body).encode()
            hdrs.setdefault("Content-Type", "application/json")
        for attempt in range(2):
            if self.conn is None and self.ssl_context is not None:
                self.conn = http.client.HTTPSConnection(self.host, self.port, timeout=self.timeout,
                                                        source_address=self.source_address,
                                                        context=self.ssl_context)
            elif self.conn is None:
                self.conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout,
                                                       source_address=self.source_address)
            try:
                self.conn.request(method, path, body=data, headers=hdrs)
                resp = self.conn.getresponse()
                payload = resp.read().decode("utf-8", "replace")
                if resp.getheader("Connection", "").lower() == "close":
                    self.close()
                return Response(resp.status, {k.lower(): v for k, v in resp.getheaders()}, payload)
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                self.close()
                if attempt == 1:
                    raise
        raise AssertionError("unreachable")

    def get(self, path, **kw):
        return self.request("GET", path, **kw)

    def post(self, path, body=None, **kw):
        return self.request("POST", path, body=body, **kw)

    def put(self, path, body=None, **kw):
        return self.request("PUT", path, body=body, **kw)

    def delete(self, path, **kw):
        return self.request("DELETE", path, **kw)

    def close(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    # Convenience calls of the Queen v1 API.
    def push(self, queue, payloads, partition=None, transaction_ids=None):
        items = []
        for i, payload in enumerate(payloads):
            item = {"queue": queue, "payload": payload}
            if partition is not None:
                item["partition"] = partition
            if transaction_ids is not None:
                item["transactionId"] = transaction_ids[i]
            items.append(item)
        return self.post("/api/v1/push", {"items": items})

    def pop(self, queue, partition=None, **params):
        path = f"/api/v1/pop/queue/{queue}" + (f"/partition/{partition}" if partition else "")
        if params:
            path += "?" + "&".join(f"{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in params.items())
        return self.get(path)

    def ack(self, transaction_id, partition_id, status="completed", lease_id=None, consumer_group=None, error=None):
        body = {"transactionId": transaction_id, "partitionId": partition_id, "status": status}
        if lease_id:
            body["leaseId"] = lease_id
        if consumer_group:
            body["consumerGroup"] = consumer_group
        if error:
            body["error"] = error
        return self.post("/api/v1/ack", body)


def metric(body, name):
    """The value of Prometheus sample `name` in `body`: a bare name (its first series) or a whole
    series `name{labels}` (0 when absent)."""
    pattern = re.escape(name) if "{" in name else re.escape(name) + r"(?:\{[^}]*\})?"
    found = re.search(r"^" + pattern + r" (\S+)$", body, re.M)
    return float(found.group(1)) if found else 0.0


def rss_anon(pid):
    """RssAnon of process `pid` in bytes (/proc/<pid>/status)."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            key, _, value = line.partition(":")
            if key == "RssAnon":
                return int(value.split()[0]) * 1024
    raise AssertionError("no RssAnon in /proc/<pid>/status")


def wait_until(predicate, timeout=30, interval=0.02, what="condition"):
    """Polls `predicate` (for state only observable by polling, e.g. a file); prefer events."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out waiting for {what}")


class ServerTestCase(unittest.TestCase):
    """Starts one server per test (fresh data directory)."""

    settings = {}

    def setUp(self):
        self.server = Server(settings=self.settings)
        self.server.start()
        self.client = self.server.client()

    def tearDown(self):
        self.client.close()
        failed = any(error for _, error in (self._outcome.errors if hasattr(self._outcome, "errors") else []))
        if failed:
            print(self.server.output()[-4000:])
        self.server.cleanup()


def free_port(host):
    import socket
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


class ClusterProcesses:
    """`size` real `queen serve` processes forming one cluster: node i binds its HTTP and peer
    listeners on 127.0.0.i (free ports), the same peers and secret on all."""

    SECRET = "integration-test-cluster-secret"

    def __init__(self, size=3, settings=None):
        hosts = {i: f"127.0.0.{i}" for i in range(1, size + 1)}
        peers = ",".join(f"{i}@{host}:{free_port(host)}" for i, host in hosts.items())
        self.nodes = {}
        for i, host in hosts.items():
            node_settings = {
                "node.id": str(i),
                "http.address": host,
                "cluster.peers": peers,
                "cluster.secret": self.SECRET,
                "cluster.tick_ms": "20",
                "cluster.election_ticks": "10",
                "cluster.heartbeat_ticks": "2",
            }
            node_settings.update(settings or {})
            self.nodes[i] = Server(settings=node_settings, host=host)

    def start(self):
        # All at once: a fresh cluster's nodes wait in their start for each other (the first key
        # is created once every node answered that it has none; docs/security.md).
        for node in self.nodes.values():
            node.spawn()
        for node in self.nodes.values():
            node.wait_listening()
        return self

    def cleanup(self):
        for node in self.nodes.values():
            if node.process is not None and node.process.poll() is None:
                try:
                    node.process.send_signal(signal.SIGCONT)  # a stopped node cannot die
                except OSError:
                    pass
            node.cleanup()

    def running(self):
        return {i: n for i, n in self.nodes.items() if n.process is not None}

    def tenant_health(self, i, tenant="default", source_address=None):
        client = self.nodes[i].client(timeout=2, source_address=source_address)
        try:
            r = client.get("/health")
        except OSError:
            return None
        finally:
            client.close()
        if r.status not in (200, 503):  # 503: a tenant stopped after a failure (still listed)
            return None
        for t in r.json()["tenants"]:
            if t["name"] == tenant:
                return t
        return None

    def leader(self, timeout=30, among=None, source_address=None):
        """Waits until the nodes (`among`, default every running one) name one leader which
        says it leads; returns (leader id, term)."""
        found = {}

        def agreed():
            ids = among or list(self.running())
            views = {i: self.tenant_health(i, source_address=source_address) for i in ids}
            if any(v is None for v in views.values()):
                return False
            leaders = {v["leaderId"] for v in views.values()}
            if len(leaders) != 1 or 0 in leaders:
                return False
            leader = leaders.pop()
            if leader not in views or views[leader]["role"] != "leader":
                return False
            found["id"], found["term"] = leader, views[leader]["term"]
            return True

        wait_until(agreed, timeout=timeout, what="one leader every running node agrees on")
        return found["id"], found["term"]

    def wait_applied(self, leader, nodes=None, timeout=30):
        """Waits until each of `nodes` (default every node) applied everything `leader` has
        committed now; returns that committed index."""
        committed = self.tenant_health(leader)["committedIndex"]
        for i in nodes if nodes is not None else list(self.nodes):
            wait_until(lambda: (self.tenant_health(i) or {}).get("appliedIndex", 0) >= committed,
                       timeout=timeout, what=f"node {i} applies through {committed}")
        return committed


class ClusterTestCase(unittest.TestCase):
    """Starts a fresh ClusterProcesses per test (`size` nodes, `settings`) and waits for the
    default tenant's leader; when the test failed, prints the end of every node's output."""

    size = 3
    settings = None

    def setUp(self):
        self.cluster = ClusterProcesses(size=self.size, settings=self.settings).start()
        self.cluster.leader()

    def tearDown(self):
        failed = any(error for _, error in (self._outcome.errors if hasattr(self._outcome, "errors") else []))
        if failed:
            for i, node in self.cluster.nodes.items():
                print(f"---- node {i}\n" + node.output()[-4000:])
        self.cluster.cleanup()

    def request(self, i, method, path, tenant=None, body=None, timeout=30):
        """One request to node i on a connection of its own (`tenant`: the X-Queen-Tenant header)."""
        client = self.cluster.nodes[i].client(timeout=timeout)
        try:
            headers = {"X-Queen-Tenant": tenant} if tenant else None
            return client.request(method, path, body=body, headers=headers)
        finally:
            client.close()

    def metrics(self, i):
        """Node i's /metrics/prometheus text."""
        r = self.request(i, "GET", "/metrics/prometheus")
        self.assertEqual(r.status, 200, r)
        return r.body
