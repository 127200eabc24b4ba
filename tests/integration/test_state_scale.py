"""tests/integration/test_state_scale.py — fencing-token locks over real servers (issue 24).

What docs/locks.md promises, checked end to end: at most one current grant per lock while
several clients fight for it over their own connections; every write guarded by the current
token goes through and every write guarded by a stale one (released, expired, or granted again
since) is refused with 409 and changes nothing; a grant that is not renewed ends at its TTL; and
tokens strictly increase across grants, a SIGKILL and restart of a node, and a leader kill in a
three-node cluster (they are log indexes), where acquires parked on the surviving nodes get the
lock in turn once it is released through the new leader."""

import random
import threading
import time
import unittest

from harness import ClusterTestCase, ServerTestCase, metric, seed_from_env, wait_until


def acquire(client, name, owner, ttl_ms=60000, wait_ms=0):
    return client.post(f"/api/v1/locks/{name}/acquire", {"owner": owner, "ttlMs": ttl_ms, "waitMs": wait_ms})


def guarded_write(client, name, token, owner, phase, queue="audit"):
    """One transaction guarded by (name, token): the KV record of the holder and an audit
    message, both carrying who wrote them. The audit queue's single partition keeps the log
    order of the guarded writes that went through."""
    guard = {"name": name, "token": token}
    record = {"owner": owner, "token": token, "phase": phase}
    return client.post("/api/v1/transaction", {"operations": [
        {"type": "kv.set", "bucket": "fenced", "key": name, "value": record, "lock": guard},
        {"type": "push", "items": [{"queue": queue, "payload": record}], "lock": guard},
    ]})


def drain(client, queue):
    """Every message of `queue` in FIFO order (auto-acked)."""
    out = []
    while True:
        r = client.pop(queue, batch=1000, wait=False, autoAck=True)
        if r.status == 204:
            return out
        assert r.status == 200, r
        out += [m["data"] for m in r.json()["messages"]]


class LockContention(ServerTestCase):
    THREADS = 8
    GRANTS_EACH = 10

    def test_concurrent_acquirers_hold_the_lock_one_at_a_time(self):
        seed = seed_from_env()
        name = "contended"
        lock = threading.Lock()  # guards the records below (the test's, not the lock under test)
        holding = []  # who believes it holds the lock now (client side: must never exceed one)
        overlaps = []
        grants = []  # (token, owner) in the order the clients received them
        writes = []  # (owner, token, phase, response) of every guarded write with a current token
        stale = []  # (owner, token, response) of a write after the owner's own release
        releases = []
        errors = []
        deadline = time.monotonic() + 120

        def worker(k):
            rng = random.Random(seed * 100 + k)
            owner = f"worker-{k}"
            client = self.server.client(timeout=60)
            try:
                held = 0
                while held < self.GRANTS_EACH:
                    if time.monotonic() > deadline:
                        errors.append(f"{owner} got only {held} grants before the deadline")
                        return
                    # waitMs: parked until a release wakes it (a 409 when the wait ends first).
                    r = acquire(client, name, owner, ttl_ms=60000, wait_ms=20000)
                    if r.status == 409:
                        continue
                    if r.status != 200:
                        errors.append(f"{owner} acquire: {r!r}")
                        return
                    token = r.json()["token"]
                    with lock:
                        if holding:
                            overlaps.append((list(holding), (owner, token)))
                        holding.append((owner, token))
                        grants.append((token, owner))
                    for phase in ("enter", "exit"):
                        writes.append((owner, token, phase, guarded_write(client, name, token, owner, phase)))
                        if rng.random() < 0.5:
                            time.sleep(rng.random() * 0.01)  # vary the interleaving (seeded)
                    with lock:
                        holding.remove((owner, token))
                    released = client.post(f"/api/v1/locks/{name}/release", {"token": token})
                    releases.append((owner, token, released))
                    # The grant is over: the same token must not write any more, whether the
                    # lock is free now or another worker already holds it.
                    stale.append((owner, token, guarded_write(client, name, token, owner, "stale")))
                    held += 1
            except Exception as error:  # reported by the main thread
                errors.append(f"{owner}: {error!r}")
            finally:
                client.close()

        threads = [threading.Thread(target=worker, args=(k,)) for k in range(self.THREADS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(180)
        self.assertFalse(any(t.is_alive() for t in threads), "a worker hangs")
        self.assertEqual(errors, [])
        total = self.THREADS * self.GRANTS_EACH
        self.assertEqual(len(grants), total)
        self.assertEqual(overlaps, [], "two clients held the lock at once")

        # Tokens: one per grant, strictly increasing in the order the grants were given (the
        # client-side order of grants is the server's: a grant comes only after the release of
        # the one before it).
        tokens = [token for token, _ in grants]
        self.assertEqual(tokens, sorted(set(tokens)), f"tokens not strictly increasing: {tokens}")
        for owner, token, phase, r in writes:
            self.assertEqual(r.status, 200, f"{owner} token {token} {phase}: {r!r}")
            self.assertTrue(r.json()["success"], r.json())
        for owner, token, r in releases:
            self.assertEqual(r.status, 200, f"{owner} release {token}: {r!r}")
        for owner, token, r in stale:
            self.assertEqual(r.status, 409, f"{owner}'s write with released token {token}: {r!r}")
            self.assertEqual(r.json()["reason"], "conflict", r.json())
            self.assertEqual(r.json()["failedIndex"], 0, r.json())
            self.assertIn(str(token), r.json()["error"])

        # The server's order of the guarded writes: each holder's enter and exit back to back
        # (no other holder's write between them), grants in token order, and no stale write.
        audit = drain(self.client, "audit")
        self.assertEqual([a["phase"] for a in audit].count("stale"), 0, "a stale token wrote")
        self.assertEqual(len(audit), 2 * total)
        expected = []
        for token, owner in grants:
            expected += [{"owner": owner, "token": token, "phase": "enter"},
                         {"owner": owner, "token": token, "phase": "exit"}]
        self.assertEqual(audit, expected)
        last_token, last_owner = grants[-1]
        kv = self.client.get(f"/api/v1/kv/fenced/{name}")
        self.assertEqual(kv.json()["value"], {"owner": last_owner, "token": last_token, "phase": "exit"})
        self.assertEqual(self.client.get(f"/api/v1/locks/{name}").status, 404)  # all released

        # A stale token after someone else's grant: refused, naming the current grant.
        newcomer = acquire(self.client, name, "newcomer").json()
        self.assertGreater(newcomer["token"], last_token)
        r = guarded_write(self.client, name, last_token, last_owner, "stale")
        self.assertEqual(r.status, 409, r)
        self.assertIn(f"current token {newcomer['token']}", r.json()["error"])
        self.assertEqual(self.client.get(f"/api/v1/kv/fenced/{name}").json()["value"]["token"], last_token)
        self.assertEqual(drain(self.client, "audit"), [])

    def test_a_grant_that_is_not_renewed_expires_and_fences_its_old_holder(self):
        name = "lease"
        a = acquire(self.client, name, "a", ttl_ms=60000)
        self.assertEqual(a.status, 200, a)
        token_a = a.json()["token"]
        self.assertEqual(guarded_write(self.client, name, token_a, "a", "work").status, 200)
        # Renew to a short TTL (same token), then never again: the grant ends at its expiry.
        renewed = self.client.post(f"/api/v1/locks/{name}/renew", {"token": token_a, "ttlMs": 300})
        self.assertEqual(renewed.status, 200, renewed)
        self.assertEqual(renewed.json()["token"], token_a)
        # b waits for the lock: only the expiry can free it (nobody releases).
        other = self.server.client()
        try:
            b = acquire(other, name, "b", ttl_ms=60000, wait_ms=20000)
        finally:
            other.close()
        self.assertEqual(b.status, 200, b)
        token_b = b.json()["token"]
        self.assertEqual(b.json()["owner"], "b")
        self.assertGreater(token_b, token_a)
        self.assertEqual(guarded_write(self.client, name, token_b, "b", "work").status, 200)

        # The old holder wakes up: its write, renew and release are all refused, clearly.
        r = guarded_write(self.client, name, token_a, "a", "late")
        self.assertEqual(r.status, 409, r)
        self.assertEqual(r.json()["reason"], "conflict")
        self.assertIn(f"current token {token_b}", r.json()["error"])
        r = self.client.post(f"/api/v1/locks/{name}/renew", {"token": token_a, "ttlMs": 60000})
        self.assertEqual(r.status, 409, r)
        self.assertIn("not the current grant", r.json()["error"])
        r = self.client.post(f"/api/v1/locks/{name}/release", {"token": token_a})
        self.assertEqual(r.status, 409, r)
        self.assertIn("not the current grant", r.json()["error"])
        # ... and changed nothing: b still holds the lock and owns the record.
        held = self.client.get(f"/api/v1/locks/{name}").json()
        self.assertEqual((held["owner"], held["token"]), ("b", token_b))
        self.assertEqual(self.client.get(f"/api/v1/kv/fenced/{name}").json()["value"]["owner"], "b")
        self.assertEqual([m["owner"] for m in drain(self.client, "audit")], ["a", "b"])

    def test_an_expired_grant_fences_its_holder_before_anyone_else_acquires(self):
        name = "lapsed"
        token = acquire(self.client, name, "a", ttl_ms=300).json()["token"]
        # The node's Due entry removes the expired grant; the guard refuses from its expiry on.
        wait_until(lambda: self.client.get(f"/api/v1/locks/{name}").status == 404, timeout=10,
                   what="the grant to expire")
        r = guarded_write(self.client, name, token, "a", "late")
        self.assertEqual(r.status, 409, r)
        self.assertIn("the lock is free", r.json()["error"])
        self.assertEqual(self.client.get(f"/api/v1/kv/fenced/{name}").status, 404)
        self.assertEqual(drain(self.client, "audit"), [])


class LockTokensAcrossRestart(ServerTestCase):
    def restart(self):
        self.client.close()
        self.server.kill()
        self.server.start()
        self.client = self.server.client()

    def test_tokens_keep_increasing_after_sigkill_and_restart(self):
        c = self.client
        released = acquire(c, "released", "a").json()["token"]
        self.assertEqual(c.post("/api/v1/locks/released/release", {"token": released}).status, 200)
        held = acquire(c, "held", "a", ttl_ms=600000).json()["token"]
        expiring = acquire(c, "expiring", "a", ttl_ms=300).json()["token"]
        seen = [released, held, expiring]
        for round_ in range(2):
            self.restart()
            c = self.client
            # A grant taken after the restart is above every grant before it, on any lock.
            fresh = acquire(c, "released", f"b{round_}")
            self.assertEqual(fresh.status, 200, fresh)
            self.assertGreater(fresh.json()["token"], max(seen))
            seen.append(fresh.json()["token"])
            self.assertEqual(c.post("/api/v1/locks/released/release", {"token": seen[-1]}).status, 200)
        # The long grant survived both restarts with its token, and still guards writes.
        current = c.get("/api/v1/locks/held")
        self.assertEqual(current.status, 200, current)
        self.assertEqual((current.json()["owner"], current.json()["token"]), ("a", held))
        self.assertEqual(guarded_write(c, "held", held, "a", "after-restart").status, 200)
        self.assertEqual(acquire(c, "held", "b").status, 409)
        # The released and the expired grants stay refused.
        self.assertEqual(guarded_write(c, "released", released, "a", "late").status, 409)
        wait_until(lambda: c.get("/api/v1/locks/expiring").status == 404, timeout=10,
                   what="the short grant to expire")
        self.assertEqual(guarded_write(c, "expiring", expiring, "a", "late").status, 409)
        again = acquire(c, "expiring", "b")
        self.assertGreater(again.json()["token"], max(seen))
        self.assertEqual([m["phase"] for m in drain(c, "audit")], ["after-restart"])


class LockTokensAcrossFailover(ClusterTestCase):
    def acquire(self, i, name, owner, ttl_ms=60000):
        return self.request(i, "POST", f"/api/v1/locks/{name}/acquire", body={"owner": owner, "ttlMs": ttl_ms})

    def write(self, i, name, token, phase):
        client = self.cluster.nodes[i].client()
        try:
            return guarded_write(client, name, token, "a", phase)
        finally:
            client.close()

    def test_tokens_keep_increasing_after_the_leader_is_killed(self):
        leader, _ = self.cluster.leader()
        followers = [i for i in self.cluster.nodes if i != leader]
        # Grants through both the leader and a follower (which forwards to the leader).
        released = self.acquire(followers[0], "released", "a").json()["token"]
        r = self.request(leader, "POST", "/api/v1/locks/released/release", body={"token": released})
        self.assertEqual(r.status, 200, r)
        held = self.acquire(leader, "held", "a", ttl_ms=600000).json()["token"]
        expiring = self.acquire(followers[0], "expiring", "a", ttl_ms=300).json()["token"]
        contended = self.acquire(followers[1], "contended", "a").json()["token"]
        # A waiting acquire parked on each follower: both must survive the election and get the
        # lock in turn once it is released through the new leader.
        waited = {}

        def wait_for_lock(i):
            client = self.cluster.nodes[i].client(timeout=60)
            try:
                waited[i] = acquire(client, "contended", f"waiter-{i}", wait_ms=30000)
            except Exception as error:  # reported below
                waited[i] = error
            finally:
                client.close()

        waiters = [threading.Thread(target=wait_for_lock, args=(i,)) for i in followers]
        for thread in waiters:
            thread.start()
        wait_until(lambda: all(metric(self.metrics(i), "queen_longpoll_parked") >= 1 for i in followers),
                   timeout=10, what="an acquire parked on each follower")
        before = max(released, held, expiring, contended)

        self.cluster.nodes[leader].kill()
        new_leader, _ = self.cluster.leader(among=followers)
        other = next(i for i in followers if i != new_leader)
        fresh = self.acquire(other, "released", "b")
        self.assertEqual(fresh.status, 200, fresh)
        self.assertGreater(fresh.json()["token"], before)
        # The old grants: the released one and the expired one are refused on the new leader,
        # the long one is still current.
        self.assertEqual(self.write(other, "released", released, "late").status, 409)
        wait_until(lambda: self.request(new_leader, "GET", "/api/v1/locks/expiring").status == 404,
                   timeout=15, what="the short grant to expire under the new leader")
        self.assertEqual(self.write(new_leader, "expiring", expiring, "late").status, 409)
        ok = self.write(other, "held", held, "after-failover")
        self.assertEqual(ok.status, 200, ok)
        taken = self.acquire(new_leader, "held", "b")
        self.assertEqual(taken.status, 409, taken)
        self.assertEqual(taken.json()["owner"], "a")
        again = self.acquire(new_leader, "expiring", "b")
        self.assertGreater(again.json()["token"], fresh.json()["token"])

        # The waiters: still parked; the release wakes one, its release the other.
        self.assertEqual(waited, {})
        r = self.request(other, "POST", "/api/v1/locks/contended/release", body={"token": contended})
        self.assertEqual(r.status, 200, r)
        wait_until(lambda: waited, timeout=30, what="a waiter to get the released lock")
        [(first, grant)] = list(waited.items())
        self.assertEqual(grant.status, 200, grant)
        self.assertGreater(grant.json()["token"], again.json()["token"])
        self.assertEqual(self.write(new_leader, "contended", contended, "late").status, 409)
        r = self.request(new_leader, "POST", "/api/v1/locks/contended/release", body={"token": grant.json()["token"]})
        self.assertEqual(r.status, 200, r)
        for thread in waiters:
            thread.join(40)
        second = waited[next(i for i in followers if i != first)]
        self.assertEqual(second.status, 200, second)
        self.assertGreater(second.json()["token"], grant.json()["token"])

        # The old leader comes back as a follower: a grant through it is larger still.
        self.cluster.nodes[leader].start()
        self.cluster.leader()
        self.cluster.wait_applied(new_leader)
        last = self.acquire(leader, "rejoined", "c")
        self.assertEqual(last.status, 200, last)
        self.assertGreater(last.json()["token"], second.json()["token"])
        client = self.cluster.nodes[leader].client()
        try:
            self.assertEqual([m["phase"] for m in drain(client, "audit")], ["after-failover"])
        finally:
            client.close()


if __name__ == "__main__":
    unittest.main()
