"""tests/integration/test_request_limits.py — what one request may cost a real `queen serve`.

A push of 600,000 items (a ~15 MiB body, under http.body_size_bytes_max) is refused with 400 for
passing api.push_items_max without building the items past the limit, and sixteen of them at
once leave the node as small as before (the large bodies' memory goes back to the system,
docs/http-api.md "Limits"); a body trickled in steadily is cut off at http.request_read_timeout_ms;
the item limit is a setting; bad names and an empty tenant header are refused on a real socket."""

import socket
import threading
import time

from harness import ServerTestCase, rss_anon, wait_until

MIB = 1 << 20
OVERSIZED_ITEMS = 600_000
CONCURRENT = 16
# Measured on the 2-core box (RelWithDebInfo, tcmalloc), session 28: RssAnon ~9 MiB fresh; 16
# oversized pushes at once peaked at ~100 MiB of RSS and stayed at ~250 MiB before the release,
# ~1 MiB above fresh after it. The bound is far from both.
ANON_GROWTH_MAX = 24 * MIB


def push_body(items):
    return ('{"items":[' + ",".join(['{"queue":"q","payload":1}'] * items) + "]}").encode()


def raw_request(port, data, read_timeout=30):
    """Sends `data` on a fresh connection and returns the status line and body of the answer."""
    with socket.create_connection(("127.0.0.1", port), timeout=read_timeout) as s:
        s.sendall(data)
        answer = b""
        while b"\r\n\r\n" not in answer:
            chunk = s.recv(65536)
            if not chunk:
                break
            answer += chunk
        head, _, body = answer.partition(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        while len(body) < length:
            chunk = s.recv(65536)
            if not chunk:
                break
            body += chunk
        return head.split(b"\r\n")[0].decode(), body.decode()


def post_bytes(body):
    return (b"POST /api/v1/push HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n" % len(body)) + body


class OversizedPushes(ServerTestCase):
    def test_oversized_pushes_are_refused_and_their_memory_returns(self):
        pid = self.server.process.pid
        fresh = rss_anon(pid)
        request = post_bytes(push_body(OVERSIZED_ITEMS))
        self.assertLess(len(request), 16 * MIB)
        answers = [None] * CONCURRENT

        def one(i):
            answers[i] = raw_request(self.server.port, request)

        threads = [threading.Thread(target=one, args=(i,)) for i in range(CONCURRENT)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for status, body in answers:
            self.assertIn(" 400 ", status, body)
            self.assertIn(f"items has {OVERSIZED_ITEMS} entries, more than the limit of 10000", body)
        peak = rss_anon(pid)
        # The release runs ~100 ms after the last large body; wait for the resident size to fall.
        after = wait_until(lambda: (lambda r: r if r - fresh < ANON_GROWTH_MAX else None)(rss_anon(pid)),
                           timeout=20, what="RssAnon back near the fresh node's")
        print(f"RssAnon fresh {fresh / MIB:.1f} MiB, after the pushes {peak / MIB:.1f} MiB, "
              f"released {after / MIB:.1f} MiB")
        # Nothing was written, and the node still takes pushes.
        r = self.client.get("/api/v1/resources/queues")
        self.assertEqual(r.json()["queues"], [])
        r = self.client.post("/api/v1/push", {"items": [{"queue": "q", "payload": 1}]})
        self.assertEqual(r.status, 201, r)


class ItemLimitSetting(ServerTestCase):
    settings = {"api.push_items_max": "3"}

    def test_push_items_max_is_a_setting(self):
        r = self.client.post("/api/v1/push", raw_body=push_body(4),
                             headers={"Content-Type": "application/json"})
        self.assertEqual(r.status, 400, r)
        self.assertIn("more than the limit of 3", r.json()["error"])
        r = self.client.post("/api/v1/push", raw_body=push_body(3),
                             headers={"Content-Type": "application/json"})
        self.assertEqual(r.status, 201, r)


class TrickledBody(ServerTestCase):
    settings = {"http.request_read_timeout_ms": "1000", "http.body_read_timeout_ms": "5000"}

    def test_a_body_trickled_in_steadily_is_cut_off(self):
        with socket.create_connection(("127.0.0.1", self.server.port), timeout=30) as s:
            s.sendall(b"POST /api/v1/push HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n")
            answered = threading.Event()
            sent = [0]

            def trickle():
                for _ in range(200):  # 200 bytes, one every 50 ms: 10 s, far past the deadline
                    if answered.is_set():
                        return
                    try:
                        s.send(b" ")
                    except OSError:
                        return
                    sent[0] += 1
                    time.sleep(0.05)  # the trickle's pace

            thread = threading.Thread(target=trickle)
            thread.start()
            answer = s.recv(4096)
            answered.set()
            thread.join()
        self.assertTrue(answer.startswith(b"HTTP/1.1 408 "), answer)
        self.assertLess(sent[0], 200)  # cut off while the bytes still came


class NamesOnTheWire(ServerTestCase):
    def test_bad_names_and_an_empty_tenant_header_are_refused(self):
        for path in ["/api/v1/pop/queue/a%2Fb", "/api/v1/pop/queue/q/partition/%2E%2E",
                     "/api/v1/resources/queues/a%01b"]:
            r = self.client.get(path + "?wait=false")
            self.assertEqual(r.status, 400, (path, r))
        r = self.client.post("/api/v1/push", {"items": [{"queue": "a/b", "payload": 1}]})
        self.assertEqual(r.status, 400, r)
        self.assertEqual(r.json()["error"], "Queue name must not contain '/'")
        r = self.client.get("/api/v1/resources/queues", headers={"X-Queen-Tenant": ""})
        self.assertEqual(r.status, 400, r)
        self.assertEqual(self.client.get("/api/v1/resources/queues").json()["queues"], [])
