"""tests/integration/test_state.py — the KV, lock and timer routes against a real `queen serve`.

What only a node can show: TTLs, lock expiries and timers come due on the node's clock and are
applied through entries the leader proposes (Due), waiting acquires are woken by the node's
applier, and the state survives a restart (docs/http-api.md, sections 7-9)."""
import threading
import time
import unittest

from harness import Server, ServerTestCase, wait_until


class Kv(ServerTestCase):
    def test_put_get_compare_and_set_and_delete(self):
        r = self.client.put("/api/v1/kv/users/42", {"name": "Ada"})
        self.assertEqual(r.status, 200, r)
        version = r.json()["version"]
        self.assertEqual(r.headers["etag"], f'"{version}"')
        got = self.client.get("/api/v1/kv/users/42")
        self.assertEqual(got.status, 200, got)
        self.assertEqual(got.json()["value"], {"name": "Ada"})
        self.assertEqual(got.json()["version"], version)

        stale = self.client.put("/api/v1/kv/users/42", {"name": "Bob"}, headers={"If-Match": str(version + 1)})
        self.assertEqual(stale.status, 409, stale)
        self.assertEqual(stale.json()["currentVersion"], version)
        ok = self.client.put("/api/v1/kv/users/42", {"name": "Bob"}, headers={"If-Match": f'"{version}"'})
        self.assertEqual(ok.status, 200, ok)
        self.assertGreater(ok.json()["version"], version)
        self.assertEqual(self.client.get("/api/v1/kv/users/42").json()["value"], {"name": "Bob"})

        self.assertEqual(self.client.delete("/api/v1/kv/users/42").json(), {"deleted": True})
        self.assertEqual(self.client.get("/api/v1/kv/users/42").status, 404)

    def test_a_ttl_ends_the_key_and_the_node_removes_it(self):
        r = self.client.put("/api/v1/kv/sessions/s1?ttlMs=300", {"user": 1})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(self.client.get("/api/v1/kv/sessions/s1").status, 200)
        wait_until(lambda: self.client.get("/api/v1/kv/sessions/s1").status == 404, timeout=10,
                   what="the key to expire")
        # The record itself is deleted by a Due entry: the bucket count drops to zero.
        wait_until(lambda: self.client.get("/api/v1/kv").json()["buckets"] == [], timeout=10,
                   what="the expired key to be removed")

    def test_keys_survive_a_restart(self):
        version = self.client.put("/api/v1/kv/config/mode", "fast").json()["version"]
        self.client.close()
        self.server.stop()
        self.server.start()
        self.client = self.server.client()
        got = self.client.get("/api/v1/kv/config/mode")
        self.assertEqual(got.status, 200, got)
        self.assertEqual(got.json()["value"], "fast")
        self.assertEqual(got.json()["version"], version)


class Locks(ServerTestCase):
    def acquire_in_thread(self, name, body):
        """Starts an acquire on its own connection; returns (thread, result dict)."""
        out = {}

        def run():
            client = self.server.client()
            try:
                started = time.monotonic()
                out["response"] = client.post(f"/api/v1/locks/{name}/acquire", body)
                out["seconds"] = time.monotonic() - started
            finally:
                client.close()

        thread = threading.Thread(target=run)
        thread.start()
        return thread, out

    def test_a_waiting_acquire_gets_the_lock_when_it_is_released(self):
        first = self.client.post("/api/v1/locks/report/acquire", {"owner": "a", "ttlMs": 60000}).json()
        thread, out = self.acquire_in_thread("report", {"owner": "b", "waitMs": 20000})
        time.sleep(0.3)  # let it park (the release below must wake it, not find it not yet asked)
        self.assertTrue(thread.is_alive())
        released = self.client.post("/api/v1/locks/report/release", {"token": first["token"]})
        self.assertEqual(released.status, 200, released)
        thread.join(20)
        self.assertEqual(out["response"].status, 200, out["response"])
        grant = out["response"].json()
        self.assertEqual(grant["owner"], "b")
        self.assertGreater(grant["token"], first["token"])
        self.assertLess(out["seconds"], 10)

    def test_a_waiting_acquire_gets_the_lock_when_the_grant_expires(self):
        self.client.post("/api/v1/locks/lease/acquire", {"owner": "a", "ttlMs": 500})
        thread, out = self.acquire_in_thread("lease", {"owner": "b", "waitMs": 20000})
        thread.join(20)
        self.assertEqual(out["response"].status, 200, out["response"])
        self.assertEqual(out["response"].json()["owner"], "b")
        self.assertLess(out["seconds"], 10)

    def test_a_waiting_acquire_answers_409_at_its_deadline(self):
        self.client.post("/api/v1/locks/busy/acquire", {"owner": "a", "ttlMs": 60000})
        started = time.monotonic()
        r = self.client.post("/api/v1/locks/busy/acquire", {"owner": "b", "waitMs": 400})
        elapsed = time.monotonic() - started
        self.assertEqual(r.status, 409, r)
        self.assertEqual(r.json()["owner"], "a")
        self.assertGreaterEqual(elapsed, 0.35)
        self.assertEqual(self.client.get("/api/v1/locks/busy").json()["owner"], "a")


class Timers(ServerTestCase):
    def test_a_timer_delivers_its_message_to_the_queue(self):
        r = self.client.post("/api/v1/timers", {"id": "remind", "queue": "reminders", "payload": {"n": 1},
                                                "transactionId": "remind-1", "delayMs": 300})
        self.assertEqual(r.status, 201, r)
        self.assertFalse(r.json()["replaced"])
        self.assertEqual(self.client.get("/api/v1/timers/remind").json()["queue"], "reminders")
        p = self.client.pop("reminders", wait=True, timeout=10000)
        self.assertEqual(p.status, 200, p)
        message = p.json()["messages"][0]
        self.assertEqual(message["data"], {"n": 1})
        self.assertEqual(message["transactionId"], "remind-1")
        self.assertEqual(self.client.get("/api/v1/timers/remind").status, 404)

    def test_a_repeating_timer_fires_until_cancelled(self):
        r = self.client.post("/api/v1/timers", {"id": "tick", "queue": "ticks", "delayMs": 0, "intervalMs": 100})
        self.assertEqual(r.status, 201, r)
        wait_until(lambda: self.client.get("/api/v1/timers/tick").json()["fired"] >= 3, timeout=10,
                   what="three firings")
        self.assertEqual(self.client.delete("/api/v1/timers/tick").json(), {"cancelled": True})
        ids = []
        while True:
            p = self.client.pop("ticks", batch=100, wait=False, autoAck=True)
            if p.status == 204:
                break
            ids += [m["transactionId"] for m in p.json()["messages"]]
        self.assertGreaterEqual(len(ids), 3)
        self.assertEqual(ids[:3], ["tick#1", "tick#2", "tick#3"])

    def test_a_pending_timer_fires_after_a_restart(self):
        r = self.client.post("/api/v1/timers", {"id": "later", "queue": "after", "payload": "x", "delayMs": 1500})
        self.assertEqual(r.status, 201, r)
        self.client.close()
        self.server.stop()
        self.server.start()
        self.client = self.server.client()
        self.assertEqual(self.client.get("/api/v1/timers").json()["timers"][0]["id"], "later")
        p = self.client.pop("after", wait=True, timeout=10000)
        self.assertEqual(p.status, 200, p)
        self.assertEqual(p.json()["messages"][0]["data"], "x")


if __name__ == "__main__":
    unittest.main()
