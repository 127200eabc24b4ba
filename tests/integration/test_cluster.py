"""tests/integration/test_cluster.py — three real `queen serve` processes form a cluster: the
default tenant is one raft group over them, one leader commits writes (a follower forwards them
to it and relays the answer), followers apply the same entries, and after a SIGKILL of the
leader a new one holds every acknowledged push; a long poll parked on a follower rides through
the leader's death.

Each node binds its peer listener on its own loopback address (127.0.0.1-3); the HTTP listeners
pick free ports."""
import json
import os
import subprocess
import random
import shutil
import signal
import threading
import time
import unittest

from harness import QUEEN_BIN, ClusterProcesses, ClusterTestCase, metric, seed_from_env, wait_until


class ClusterReplication(unittest.TestCase):
    def setUp(self):
        self.seed = seed_from_env()
        self.rng = random.Random(self.seed)
        self.cluster = ClusterProcesses(settings={"cluster.leader_wait_ms": "2000"}).start()

    def tearDown(self):
        self.cluster.cleanup()

    def test_leader_failover_keeps_every_acknowledged_push(self):
        cluster = self.cluster
        leader_id, term = cluster.leader()
        leader = cluster.nodes[leader_id]
        follower_id = next(i for i in cluster.nodes if i != leader_id)

        # Writes to the leader and to a follower (which forwards them) are all committed once.
        c = leader.client()
        follower = cluster.nodes[follower_id].client()
        ids = [f"m{i}" for i in range(60)]
        for start in range(0, len(ids), 20):
            via = c if (start // 20) % 2 == 0 else follower
            r = via.post("/api/v1/push", {"items": [
                {"queue": "replicated", "partition": "p", "transactionId": t, "payload": {"t": t}}
                for t in ids[start:start + 20]]})
            self.assertEqual(r.status, 201, r.body)
            self.assertTrue(all(x["status"] == "queued" for x in r.json()), r.body)
        # A pop is a write too (the lease): through the follower it is forwarded, and so is the
        # ack that completes it (consumer group "side": the queue-mode pops below still see all).
        r = follower.pop("replicated", consumerGroup="side", batch=1, wait=False)
        self.assertEqual(r.status, 200, r.body)
        m = r.json()["messages"][0]
        self.assertEqual(m["transactionId"], "m0")
        r = follower.ack(m["transactionId"], m["partitionId"], lease_id=m["leaseId"], consumer_group="side")
        self.assertEqual(r.status, 200, r.body)
        r = follower.pop("replicated", consumerGroup="side", batch=1, wait=False)
        self.assertEqual(r.json()["messages"][0]["transactionId"], "m1", r.body)
        follower.close()

        # Reads are linearizable on every node: a push acknowledged by one node is seen by a
        # read that starts afterwards on any other (ReadIndex), with no waiting in between.
        for n in range(5):
            t = f"read-{n}"
            r = c.post("/api/v1/push", {"items": [
                {"queue": "reads", "partition": "p", "transactionId": t, "payload": {}}]})
            self.assertEqual(r.status, 201, r.body)
            for i in cluster.nodes:
                reader = cluster.nodes[i].client()
                r = reader.get("/api/v1/resources/queues/reads")
                reader.close()
                self.assertEqual(r.status, 200, r.body)
                self.assertEqual(r.json()["totals"]["total"], n + 1, f"node {i} after push {n}: {r.body}")

        # Every follower applies the same entries.
        cluster.wait_applied(leader_id)

        # `queen admin cluster status` on a follower: it follows, and names the leader.
        node = cluster.nodes[follower_id]
        out = subprocess.run([QUEEN_BIN, "admin", "--url", f"http://{node.host}:{node.port}", "--json",
                              "cluster", "status"], stdout=subprocess.PIPE, text=True)
        self.assertEqual(out.returncode, 0, out.stdout)
        view = json.loads(out.stdout)
        self.assertEqual([(v["tenant"], v["role"], v["leader"], v["node"]) for v in view],
                         [("default", "follower", leader_id, follower_id)])

        # The leader's metrics: its commits were timed and it tracks each follower's lag.
        r = c.get("/metrics/prometheus")
        self.assertIn('queen_raft_is_leader{tenant="default"} 1', r.body)
        counts = [line for line in r.body.splitlines()
                  if line.startswith('queen_raft_commit_latency_seconds_count{tenant="default"}')]
        self.assertEqual(len(counts), 1, r.body)
        self.assertGreater(float(counts[0].split()[-1]), 0)
        for i in cluster.nodes:
            if i != leader_id:
                self.assertIn(f'queen_raft_follower_lag_entries{{tenant="default",peer="{i}"}}', r.body)

        # The leader dies; the other two elect a new one in a later term, which has it all.
        killed_at = time.monotonic()
        c.close()
        leader.kill()
        new_id, new_term = cluster.leader()
        self.assertNotEqual(new_id, leader_id)
        self.assertGreater(new_term, term)
        new_leader = cluster.nodes[new_id]
        c = new_leader.client()
        r = c.post("/api/v1/push", {"items": [
            {"queue": "replicated", "partition": "p", "transactionId": "after", "payload": {}}]})
        self.assertEqual(r.status, 201, r.body)
        print(f"failover: first acknowledged write {time.monotonic() - killed_at:.2f} s after "
              f"SIGKILL of node {leader_id}", flush=True)
        delivered = []
        while True:
            r = c.get("/api/v1/pop/queue/replicated?batch=50&wait=false&autoAck=true")
            if r.status == 204:
                break
            self.assertEqual(r.status, 200, r.body)
            delivered += [m["transactionId"] for m in r.json()["messages"]]
        self.assertEqual(delivered, ids + ["after"])
        c.close()

        # The old leader restarts as a follower and catches up.
        leader.start()
        again_id, _ = cluster.leader()
        self.assertEqual(again_id, new_id)
        cluster.wait_applied(new_id, [leader_id])  # the restarted node catches up
        self.assertEqual(cluster.tenant_health(leader_id)["role"], "follower")

    def test_a_node_that_lost_log_records_rejoins_without_a_vote_until_it_caught_up(self):
        # The marker an earlier recovery left (a log whose tail was cut) makes the node restart
        # as a recovering member: it votes for nobody until the leader re-replicated everything
        # it may have acknowledged, then removes the marker.
        cluster = self.cluster
        leader_id, _ = cluster.leader()
        follower_id = next(i for i in cluster.nodes if i != leader_id)
        follower = cluster.nodes[follower_id]
        c = cluster.nodes[leader_id].client()
        r = c.post("/api/v1/push", {"items": [{"queue": "q", "payload": {"n": n}} for n in range(10)]})
        self.assertEqual(r.status, 201, r.body)
        self.assertEqual(follower.stop(), 0)
        marker = os.path.join(follower.data_dir, "tenants", "default", "raft_recovering")
        with open(marker, "w") as f:
            f.write("recovering\n")
        r = c.post("/api/v1/push", {"items": [{"queue": "q", "payload": {"n": n}} for n in range(10)]})
        self.assertEqual(r.status, 201, r.body)
        c.close()
        # While it cannot reach the leader it stays recovering: /health says so, /ready is 503.
        cluster.nodes[leader_id].process.send_signal(signal.SIGSTOP)
        try:
            follower.start()
            health = cluster.tenant_health(follower_id)
            self.assertIn("recovering", health["catchingUp"] or "", health)
            f = follower.client()
            self.assertEqual(f.get("/ready").status, 503)
            f.close()
        finally:
            cluster.nodes[leader_id].process.send_signal(signal.SIGCONT)
        wait_until(lambda: not os.path.exists(marker), what="the recovering marker removed")
        wait_until(lambda: (cluster.tenant_health(follower_id) or {}).get("catchingUp") is None,
                   what="the node no longer catching up")
        cluster.wait_applied(leader_id, [follower_id])
        log = follower.output()
        self.assertIn("tenant.raft_recovering", log)
        self.assertIn("raft.recovered", log)

    def test_a_node_whose_log_was_damaged_repairs_it_from_its_peers(self):
        # A bit flipped in a synced record of a follower's log (issue 27): alone it would refuse
        # to start; as a member of a tenant with other replicas it cuts the damaged record and
        # everything after, rejoins recovering and gets them back from the leader.
        cluster = self.cluster
        leader_id, _ = cluster.leader()
        follower_id = next(i for i in cluster.nodes if i != leader_id)
        follower = cluster.nodes[follower_id]
        marker = "DAMAGE-MARKER-0123456789abcdefghijklmnop"
        c = cluster.nodes[leader_id].client()
        for n in range(3):
            r = c.post("/api/v1/push", {"items": [
                {"queue": "dq", "transactionId": f"t{n}", "payload": {"m": marker, "n": n}}]})
            self.assertEqual(r.status, 201, r.body)
        cluster.wait_applied(leader_id, [follower_id])
        self.assertEqual(follower.stop(), 0)
        log_dir = os.path.join(follower.data_dir, "tenants", "default", "log")
        segment = os.path.join(log_dir, sorted(n for n in os.listdir(log_dir) if n.endswith(".seg"))[-1])
        with open(segment, "r+b") as f:
            data = bytearray(f.read())
            at = data.rfind(marker.encode())
            self.assertGreater(at, 0)
            data[at + 5] ^= 0x01
            f.seek(0)
            f.write(data)
        verify = subprocess.run([QUEEN_BIN, "inspect", "log", log_dir, "--verify"],
                                capture_output=True, text=True)
        self.assertEqual(verify.returncode, 4, verify.stdout + verify.stderr)

        follower.start()
        recovering = os.path.join(follower.data_dir, "tenants", "default", "raft_recovering")
        wait_until(lambda: not os.path.exists(recovering), what="the recovering marker removed")
        cluster.wait_applied(leader_id, [follower_id])
        out = follower.output()
        self.assertIn("tenant.log_damage_repaired", out)
        self.assertIn("raft.recovered", out)
        # Everything is there, read through the repaired node.
        f = follower.client()
        r = f.get("/api/v1/pop/queue/dq?batch=10&wait=false&autoAck=true")
        self.assertEqual(r.status, 200, r.body)
        self.assertEqual([m["transactionId"] for m in r.json()["messages"]], ["t0", "t1", "t2"])
        f.close()
        c.close()
        self.assertEqual(follower.stop(), 0)
        clean = subprocess.run([QUEEN_BIN, "inspect", "log", log_dir, "--verify"],
                               capture_output=True, text=True)
        self.assertEqual(clean.returncode, 0, clean.stdout + clean.stderr)

    def test_a_long_poll_on_a_follower_is_woken_by_a_push_to_the_leader(self):
        cluster = self.cluster
        leader_id, _ = cluster.leader()
        follower_id = next(i for i in cluster.nodes if i != leader_id)
        result = {}

        def poll():
            c = cluster.nodes[follower_id].client(timeout=60)
            started = time.monotonic()
            result["r"] = c.pop("woken", batch=1, wait=True, timeout=30000)
            result["seconds"] = time.monotonic() - started
            c.close()
        poller = threading.Thread(target=poll)
        poller.start()

        def parked():  # the follower holds the long poll (it forwarded the empty pop)
            c = cluster.nodes[follower_id].client(timeout=5)
            r = c.get("/metrics/prometheus")
            c.close()
            return "queen_long_polls_waiting 1" in r.body
        wait_until(parked, what="the pop parked on the follower")
        c = cluster.nodes[leader_id].client()
        r = c.post("/api/v1/push", {"items": [{"queue": "woken", "transactionId": "w1", "payload": {}}]})
        c.close()
        self.assertEqual(r.status, 201, r.body)
        poller.join(60)
        self.assertEqual(result["r"].status, 200, result["r"].body)
        self.assertEqual(result["r"].json()["messages"][0]["transactionId"], "w1")
        self.assertLess(result["seconds"], 25, "woken by the push, not by the poll's timeout")

    def test_a_write_during_an_election_waits_for_the_new_leader_or_fails_with_retry_after(self):
        cluster = self.cluster
        leader_id, _ = cluster.leader()
        alone = next(i for i in cluster.nodes if i != leader_id)
        others = [i for i in cluster.nodes if i != alone]
        for i in others:
            cluster.nodes[i].process.send_signal(signal.SIGSTOP)
        try:
            # Without a majority the node soon knows no leader.
            wait_until(lambda: (cluster.tenant_health(alone) or {}).get("leaderId") == 0,
                       what=f"node {alone} without a leader")
            # A write now waits for an election's outcome; when one comes in time, it commits.
            result = {}

            def push():
                c = cluster.nodes[alone].client(timeout=30)
                result["r"] = c.post("/api/v1/push", {"items": [
                    {"queue": "elections", "transactionId": "waited", "payload": {}}]})
                c.close()
            writer = threading.Thread(target=push)
            writer.start()
            def parked():
                c = cluster.nodes[alone].client(timeout=5)
                r = c.get("/metrics/prometheus")
                c.close()
                return 'queen_requests_waiting_for_leader{tenant="default"} 1' in r.body
            wait_until(parked, what="the write waits for a leader")
            for i in others:
                cluster.nodes[i].process.send_signal(signal.SIGCONT)
            writer.join(30)
            self.assertEqual(result["r"].status, 201, result["r"].body)
            self.assertEqual(result["r"].json()[0]["status"], "queued")
            # With no majority for longer than cluster.leader_wait_ms, a clear retryable 503.
            for i in others:
                cluster.nodes[i].process.send_signal(signal.SIGSTOP)
            wait_until(lambda: (cluster.tenant_health(alone) or {}).get("leaderId") == 0,
                       what=f"node {alone} without a leader again")
            c = cluster.nodes[alone].client(timeout=30)
            r = c.post("/api/v1/push", {"items": [{"queue": "elections", "payload": {}}]})
            c.close()
            self.assertEqual(r.status, 503, r.body)
            self.assertEqual(r.headers.get("retry-after"), "1")
            self.assertIn("no leader", r.body)
        finally:
            for i in others:
                cluster.nodes[i].process.send_signal(signal.SIGCONT)



class LongPollFailover(ClusterTestCase):
    # A write waits at most 300 ms for a leader: a pop that finds none fails fast, so the poll
    # below meets that error several times while no leader can be elected.
    settings = {"cluster.leader_wait_ms": "300"}

    def test_a_long_poll_parked_on_a_follower_gets_a_push_made_after_the_leader_was_killed(self):
        leader, _ = self.cluster.leader()
        poller, other = [i for i in self.cluster.nodes if i != leader]
        # A message of another partition of the queue that becomes visible 2 s after its push
        # (the pop that finds it delayed has every replica schedule that): then the follower
        # wakes the pops parked on the queue by its own clock, with no leader, and the poll
        # below, which pops partition "main" only, pops again and finds no leader.
        r = self.request(leader, "POST", "/api/v1/configure",
                         body={"queue": "ride", "options": {"delayedProcessing": 2}})
        self.assertEqual(r.status, 200, r)
        r = self.request(leader, "POST", "/api/v1/push",
                         body={"items": [{"queue": "ride", "partition": "late", "payload": {}}]})
        self.assertEqual(r.status, 201, r)
        self.assertEqual(self.request(leader, "GET", "/api/v1/pop/queue/ride/partition/late").status, 204)
        result = {}

        def poll():
            client = self.cluster.nodes[poller].client(timeout=60)
            try:
                result["r"] = client.pop("ride", partition="main", wait=True, timeout=30000)
            except Exception as error:  # reported below
                result["r"] = error
            finally:
                client.close()

        poller_thread = threading.Thread(target=poll)
        poller_thread.start()
        wait_until(lambda: metric(self.metrics(poller), "queen_long_polls_waiting") >= 1,
                   timeout=10, what="the pop parked on the follower")
        self.cluster.wait_applied(leader, nodes=[poller])
        # No leader can be elected meanwhile: the leader dies and the third node is stopped.
        self.cluster.nodes[other].process.send_signal(signal.SIGSTOP)
        try:
            self.cluster.nodes[leader].kill()
            # Each try waits 300 ms for a leader and fails; the poll pauses and tries again
            # (before the long-poll driver, it answered that 503).
            wait_until(lambda: "r" in result or
                       metric(self.metrics(poller), "queen_long_poll_retries_total") >= 2,
                       timeout=15, what="the woken pop to try again without a leader")
        finally:
            self.cluster.nodes[other].process.send_signal(signal.SIGCONT)
        self.assertNotIn("r", result, "the long poll ended while no leader could be elected")

        self.cluster.leader(among=[poller, other])
        r = self.request(other, "POST", "/api/v1/push", body={"items": [
            {"queue": "ride", "partition": "main", "transactionId": "after-kill", "payload": {"n": 1}}]})
        self.assertEqual(r.status, 201, r)
        poller_thread.join(30)
        answer = result.get("r")
        self.assertIsNotNone(answer, "the long poll did not end")
        self.assertNotIsInstance(answer, Exception)
        self.assertEqual(answer.status, 200, answer)
        self.assertEqual([m["transactionId"] for m in answer.json()["messages"]], ["after-kill"])


class RaftSnapshots(unittest.TestCase):
    def test_nodes_behind_the_leaders_memory_catch_up_by_snapshot(self):
        # The leader keeps at most cluster.raft_memory_bytes_max of applied entries for lagging
        # peers. A node further behind gets the leader's state (an LMDB copy pulled in chunks)
        # and then the log from there: a replaced node (data directory wiped) and a node that
        # was down while the log moved on both catch up, and serve the same state.
        cluster = ClusterProcesses(settings={"cluster.raft_memory_bytes_max": "20000"}).start()
        try:
            leader_id, _ = cluster.leader()
            wiped, down = [i for i in cluster.nodes if i != leader_id]
            c = cluster.nodes[leader_id].client()
            r = c.post("/api/v1/push", {"items": [{"queue": "big", "partition": "leased", "transactionId": "first",
                                                   "payload": {"n": "first"}}]})
            self.assertEqual(r.status, 201, r.body)
            cluster.wait_applied(leader_id)  # every node holds the first push

            # Phase 1: a replaced node needs everything from index 1: a snapshot (the leader
            # never replays its whole log from index 1 to a peer with an empty one).
            cluster.nodes[wiped].stop()
            shutil.rmtree(cluster.nodes[wiped].data_dir)
            sent = [f"m{n}" for n in range(20)]
            for t in sent:
                r = c.post("/api/v1/push", {"items": [{"queue": "big", "partition": "p", "transactionId": t,
                                                       "payload": {"pad": "x" * 4000}}]})
                self.assertEqual(r.status, 201, r.body)
            # A lease taken before the snapshot is part of the state the new node receives.
            r = c.pop("big", consumerGroup="g", batch=1, wait=False)
            self.assertEqual(r.json()["messages"][0]["transactionId"], "first", r.body)
            cluster.nodes[wiped].start()
            cluster.wait_applied(leader_id, [wiped])  # the replaced node catches up
            self.assertFalse(cluster.tenant_health(wiped)["poisoned"])
            self.assertIsNone(cluster.tenant_health(wiped)["catchingUp"])
            w = cluster.nodes[wiped].client()
            self.assertEqual(w.get("/ready").status, 200)
            self.assertEqual(metric(w.get("/metrics/prometheus").body, 'queen_raft_snapshots_installed_total{tenant="default"}'), 1)
            self.assertGreaterEqual(metric(c.get("/metrics/prometheus").body, 'queen_raft_snapshots_sent_total{tenant="default"}'), 1)
            # Its local state answers reads like the leader's (no copies left behind either).
            r = w.get("/api/v1/resources/queues/big")
            self.assertEqual(r.json()["totals"]["total"], 21, r.body)
            tenant_dir = os.path.join(cluster.nodes[wiped].data_dir, "tenants", "default")
            self.assertFalse(os.path.exists(os.path.join(tenant_dir, "snapshot.install")))
            self.assertFalse(os.path.exists(os.path.join(tenant_dir, "snapshot.incoming")))
            w.close()

            # Phase 2: a node that was down while the log moved on.
            cluster.nodes[down].stop()
            more = [f"n{n}" for n in range(20)]
            for t in more:
                r = c.post("/api/v1/push", {"items": [{"queue": "big", "partition": "p", "transactionId": t,
                                                       "payload": {"pad": "y" * 4000}}]})
                self.assertEqual(r.status, 201, r.body)
            cluster.nodes[down].start()
            cluster.wait_applied(leader_id, [down])  # the node that was down catches up
            # (By appends the leader reads back from its log, or by those its transport queued
            # while the node was away; RaftLogCatchUp checks that no snapshot is needed then.)
            self.assertFalse(cluster.tenant_health(down)["poisoned"])

            # The leader dies: the two nodes that caught up by snapshot elect one of them, which
            # knows every message and the lease (partition "leased" stays leased to group g: its
            # message is not delivered again while the lease runs).
            c.close()
            cluster.nodes[leader_id].kill()
            new_id, _ = cluster.leader()
            self.assertIn(new_id, (wiped, down))
            n = cluster.nodes[new_id].client()
            r = n.pop("big", consumerGroup="g", batch=100, wait=False)
            self.assertEqual(r.status, 200, r.body)
            self.assertEqual([m["transactionId"] for m in r.json()["messages"]], sent + more)
            r = n.pop("big", consumerGroup="g", batch=100, wait=False)
            self.assertEqual(r.status, 204, r.body)
            n.close()

            # A restart of the replaced node (its state may lead its log) comes back and follows.
            cluster.nodes[leader_id].start()
            cluster.nodes[wiped].stop()
            cluster.nodes[wiped].start()
            leader_now, _ = cluster.leader()
            x = cluster.nodes[leader_now].client()
            r = x.post("/api/v1/push", {"items": [{"queue": "big", "partition": "p", "transactionId": "last",
                                                   "payload": {}}]})
            self.assertEqual(r.status, 201, r.body)
            x.close()
            cluster.wait_applied(leader_now)  # every node applies the last push
            for i in cluster.nodes:
                self.assertFalse(cluster.tenant_health(i)["poisoned"])
        finally:
            cluster.cleanup()


class RaftLogCatchUp(ClusterTestCase):
    # Raft keeps few applied entries in memory (20 kB), the tenant's log keeps them all (its
    # checkpoint keeps tenant.log_retain_entries, 100,000 by default).
    settings = {"cluster.raft_memory_bytes_max": "20000"}

    def test_a_follower_behind_the_leaders_memory_catches_up_from_its_log(self):
        # A follower that was down while the leader took ~200 kB of writes is behind the
        # leader's memory but not its log: the leader reads the entries back from disk and the
        # follower catches up by appends, without a snapshot of the state.
        leader_id, _ = self.cluster.leader()
        down = next(i for i in self.cluster.nodes if i != leader_id)
        r = self.request(leader_id, "POST", "/api/v1/push", body={"items": [
            {"queue": "lag", "partition": "p", "transactionId": "first", "payload": {}}]})
        self.assertEqual(r.status, 201, r)
        self.cluster.wait_applied(leader_id)
        leader_metrics = self.metrics(leader_id)
        sent_before = metric(leader_metrics, 'queen_raft_snapshots_sent_total{tenant="default"}')
        from_log_before = metric(leader_metrics, 'queen_raft_entries_from_log_total{tenant="default"}')
        self.assertEqual(from_log_before, 0)

        self.cluster.nodes[down].stop()
        # One proposal each, more than the leader's 64 appends in flight to the stopped node
        # (the transport holds those for it): the rest must come from the leader's raft memory,
        # which holds about ten of them, or its log.
        client = self.cluster.nodes[leader_id].client()
        sent = ["first"] + [f"m{n}" for n in range(100)]
        for t in sent[1:]:
            r = client.post("/api/v1/push", {"items": [
                {"queue": "lag", "partition": "p", "transactionId": t, "payload": {"pad": "x" * 2000}}]})
            self.assertEqual(r.status, 201, r.body)
        client.close()

        self.cluster.nodes[down].start()
        self.cluster.wait_applied(leader_id, [down])
        health = self.cluster.tenant_health(down)
        self.assertFalse(health["poisoned"])
        leader_metrics = self.metrics(leader_id)
        self.assertEqual(metric(leader_metrics, 'queen_raft_snapshots_sent_total{tenant="default"}'), sent_before)
        self.assertGreater(metric(leader_metrics, 'queen_raft_entries_from_log_total{tenant="default"}'), 0)
        self.assertGreater(metric(leader_metrics, 'queen_raft_entry_bytes_from_log_total{tenant="default"}'), 2000)
        follower_metrics = self.metrics(down)
        self.assertEqual(metric(follower_metrics, 'queen_raft_snapshots_installed_total{tenant="default"}'), 0)
        # Its own state holds every message (a read on a follower is served from its state at
        # the leader's read index); with the leader gone, the group it now forms with the third
        # node still pops every message, in order.
        r = self.request(down, "GET", "/api/v1/resources/queues/lag")
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json()["totals"]["total"], len(sent), r.body)
        self.cluster.nodes[leader_id].kill()
        self.cluster.leader()
        r = self.request(down, "GET", "/api/v1/pop/queue/lag?batch=200&wait=false&consumerGroup=g")
        self.assertEqual(r.status, 200, r)
        self.assertEqual([m["transactionId"] for m in r.json()["messages"]], sent)


if __name__ == "__main__":
    unittest.main()
