"""tests/integration/test_cluster_admin.py — `queen admin cluster transfer-leader` on three real
`queen serve` processes: the leadership of a tenant moves to each node in turn (asked of the
leader, of a follower that is not the target, and of the target itself), writes keep working after
every move, and bad requests get clear errors (HTTP and exit codes). Then `queen admin cluster
members|add|remove` on three nodes: a node announced (never started) is listed, refused twice and
removed again."""
import json
import signal
import subprocess
import threading
import time
import unittest

from harness import QUEEN_BIN, ClusterTestCase, free_port, wait_until

ROUTE = "/api/v1/system/cluster/transfer-leader"


class TransferLeader(ClusterTestCase):
    settings = {"cluster.leader_wait_ms": "2000"}

    def setUp(self):
        super().setUp()
        self.pushed = []

    def url(self, i):
        node = self.cluster.nodes[i]
        return f"http://{node.host}:{node.port}"

    def admin(self, via, *args, timeout=60):
        return subprocess.run([QUEEN_BIN, "admin", "--url", self.url(via), *args],
                              capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)

    def push_through(self, i, tag):
        """A push through node i must be acknowledged (forwarded when i follows)."""
        c = self.cluster.nodes[i].client()
        ids = [f"{tag}-{n}" for n in range(3)]
        r = c.push("moved", [{"n": n} for n in range(3)], partition="p", transaction_ids=ids)
        c.close()
        self.assertEqual(r.status, 201, r.body)
        self.assertTrue(all(x["status"] == "queued" for x in r.json()), r.body)
        self.pushed += ids

    def test_writes_to_the_old_leader_during_a_transfer_wait_for_it_and_succeed(self):
        # A client keeps writing to the leader while it hands the leadership to a node that is
        # paused (SIGSTOP), so the transfer runs until it is abandoned (one election timeout):
        # the writes that come meanwhile wait for the outcome, like during an election, and are
        # then committed by whichever node leads; none is refused.
        cluster = self.cluster
        leader, _ = cluster.leader()
        target = next(i for i in cluster.nodes if i != leader)
        statuses = []
        stop = threading.Event()

        def writer():
            c = cluster.nodes[leader].client()
            n = 0
            while not stop.is_set():
                r = c.push("during", [{"n": n}], partition="p", transaction_ids=[f"w{n}"])
                statuses.append((n, r.status, r.body if r.status != 201 else ""))
                n += 1
            c.close()

        cluster.nodes[target].process.send_signal(signal.SIGSTOP)
        try:
            thread = threading.Thread(target=writer)
            thread.start()
            wait_until(lambda: len(statuses) >= 5, what="the writer runs")
            c = cluster.nodes[leader].client()
            r = c.post(ROUTE, {"to": target})
            c.close()
            self.assertEqual(r.status, 202, r.body)
            started = len(statuses)
            # The transfer is abandoned after an election timeout; writes then go on.
            wait_until(lambda: len(statuses) >= started + 30, what="writes after the transfer window")
            stop.set()
            thread.join(60)
        finally:
            cluster.nodes[target].process.send_signal(signal.SIGCONT)
        self.assertEqual([s for s in statuses if s[1] != 201], [])

    def test_the_leadership_moves_to_each_node_in_turn_and_writes_keep_working(self):
        cluster = self.cluster
        first, term = cluster.leader()
        for i in cluster.nodes:
            self.push_through(i, f"start-{i}")
        others = [i for i in cluster.nodes if i != first]
        # Asked of the leader, of the follower that is not the target (raft forwards the request
        # to the leader), then of the target itself (a follower asking for itself).
        leader = first
        for n, target in enumerate([others[0], others[1], first]):
            if n == 0:
                via = leader
            elif n == 1:
                via = next(i for i in cluster.nodes if i not in (leader, target))
            else:
                via = target
            out = self.admin(via, "--json", "cluster", "transfer-leader", "--to", str(target))
            self.assertEqual(out.returncode, 0, f"to {target} via {via}: {out.stdout}{out.stderr}")
            answer = json.loads(out.stdout)
            self.assertEqual(answer["tenant"], "default")
            self.assertEqual(answer["leader"], target)
            self.assertEqual(answer["previousLeader"], leader)
            self.assertTrue(answer["moved"])
            self.assertGreater(answer["term"], term)
            print(f"transfer {leader} -> {target} asked of node {via}: {answer['elapsedMs']} ms", flush=True)
            new_leader, new_term = cluster.leader()
            self.assertEqual(new_leader, target)
            self.assertGreater(new_term, term)
            leader, term = new_leader, new_term
            # Writes through every node, the former leader included, are committed.
            for i in cluster.nodes:
                self.push_through(i, f"after-{n}-{i}")

        # Asking for the node that leads changes nothing (human output this time).
        out = self.admin(others[0], "cluster", "transfer-leader", "--to", str(leader))
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        self.assertIn(f"node {leader} leads already", out.stdout)
        self.assertEqual(cluster.leader(), (leader, term))
        out = self.admin(leader, "cluster", "transfer-leader", "--tenant", "default", "--to", str(others[1]))
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        self.assertIn(f"tenant default: node {others[1]} leads now", out.stdout)
        self.assertIn(f"was node {leader}", out.stdout)
        leader, term = cluster.leader()
        self.assertEqual(leader, others[1])
        self.push_through(first, "last")

        # Every acknowledged push is there, once, in order.
        c = cluster.nodes[leader].client()
        delivered = []
        while True:
            r = c.get("/api/v1/pop/queue/moved?batch=100&wait=false&autoAck=true")
            if r.status == 204:
                break
            self.assertEqual(r.status, 200, r.body)
            delivered += [m["transactionId"] for m in r.json()["messages"]]
        c.close()
        self.assertEqual(delivered, self.pushed)

    def test_bad_requests_get_clear_errors(self):
        cluster = self.cluster
        leader, _ = cluster.leader()
        follower = next(i for i in cluster.nodes if i != leader)
        c = cluster.nodes[follower].client()
        for body, status, words in (
                ({"to": 0}, 400, "positive integer"),
                ({"to": "2"}, 400, "positive integer"),
                ({"to": -1}, 400, "positive integer"),
                ({}, 400, "to"),
                ({"tenant": "bad name!", "to": leader}, 400, "tenant"),
                ({"to": 9}, 409, "node 9 is not a voter of tenant 'default'"),
                ({"tenant": "nosuch", "to": leader}, 404, "nosuch")):
            r = c.post(ROUTE, body)
            self.assertEqual(r.status, status, f"{body}: {r.body}")
            self.assertIn(words, r.json()["error"], body)
        r = c.post(ROUTE, raw_body=b"{", headers={"Content-Type": "application/json"})
        self.assertEqual(r.status, 400, r.body)
        r = c.post(ROUTE, {"tenant": "default", "to": leader}, headers={"X-Queen-Tenant": "other"})
        self.assertEqual(r.status, 400, r.body)
        r = c.post(ROUTE, {"to": leader})
        self.assertEqual(r.status, 200, r.body)
        self.assertFalse(r.json()["transferring"])
        c.close()

        # The CLI: flags it can check itself are usage errors (2), refusals are failures (1).
        for args in (["--to", "0"], ["--to", "abc"], [], ["--to", "2", "--wait", "0"]):
            out = self.admin(follower, "cluster", "transfer-leader", *args)
            self.assertEqual(out.returncode, 2, f"{args}: {out.stdout}{out.stderr}")
        out = self.admin(follower, "cluster", "transfer-leader", "--to", "9")
        self.assertEqual(out.returncode, 1, out.stdout + out.stderr)
        self.assertIn("node 9 is not a voter", out.stderr)
        out = self.admin(follower, "cluster", "transfer-leader", "--tenant", "nosuch", "--to", str(leader))
        self.assertEqual(out.returncode, 1, out.stdout + out.stderr)
        self.assertIn("nosuch", out.stderr)
        self.assertEqual(cluster.leader()[0], leader)

    def test_a_target_that_cannot_lead_fails_within_the_wait_and_writes_go_on(self):
        cluster = self.cluster
        leader, term = cluster.leader()
        target = next(i for i in cluster.nodes if i != leader)
        cluster.nodes[target].process.send_signal(signal.SIGSTOP)
        try:
            started = time.monotonic()
            out = self.admin(leader, "cluster", "transfer-leader", "--to", str(target), "--wait", "1")
            self.assertEqual(out.returncode, 3, out.stdout + out.stderr)
            self.assertLess(time.monotonic() - started, 10)
            self.assertIn(f"node {target} did not take the leadership within 1.0 s", out.stderr)
            # The leader abandoned the transfer (one election timeout): it commits again.
            self.push_through(leader, "after-abandoned")
        finally:
            cluster.nodes[target].process.send_signal(signal.SIGCONT)
        # The leader's timeout_now may still wait in the socket of the paused node, which then
        # campaigns when it wakes up: it wins, or (behind the push above) it costs one election.
        # Either way the nodes agree on a leader again, and it commits.
        cluster.leader()
        self.push_through(target, "after-resumed")

    def test_without_a_leader_the_request_answers_503_with_retry_after(self):
        cluster = self.cluster
        leader, _ = cluster.leader()
        alone = next(i for i in cluster.nodes if i != leader)
        others = [i for i in cluster.nodes if i != alone]
        for i in others:
            cluster.nodes[i].process.send_signal(signal.SIGSTOP)
        try:
            wait_until(lambda: (cluster.tenant_health(alone) or {}).get("leaderId") == 0,
                       what=f"node {alone} without a leader")
            c = cluster.nodes[alone].client()
            r = c.post(ROUTE, {"to": alone})
            c.close()
            self.assertEqual(r.status, 503, r.body)
            self.assertEqual(r.headers.get("retry-after"), "1")
            self.assertIn("no leader", r.json()["error"])
            out = self.admin(alone, "cluster", "transfer-leader", "--to", str(alone))
            self.assertEqual(out.returncode, 3, out.stdout + out.stderr)
            self.assertIn("no leader", out.stderr)
        finally:
            for i in others:
                cluster.nodes[i].process.send_signal(signal.SIGCONT)
        cluster.leader()


class Members(ClusterTestCase):
    def admin(self, via, *args, code=0):
        node = self.cluster.nodes[via]
        out = subprocess.run([QUEEN_BIN, "admin", "--url", f"http://{node.host}:{node.port}", *args],
                             capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
        self.assertEqual(out.returncode, code, f"{args}: {out.stdout}{out.stderr}")
        return out

    def members(self, via):
        return json.loads(self.admin(via, "cluster", "members", "--json").stdout)["members"]

    def test_members_listed_added_and_removed_through_the_cli(self):
        peers = {int(p.split("@")[0]): p.split("@")[1] for p in self.cluster.nodes[1].settings["cluster.peers"].split(",")}
        wait_until(lambda: all(m["connected"] for m in self.members(2)), timeout=30, what="node 2 connected to all")
        listed = self.members(2)
        self.assertEqual([(m["id"], m["peerAddress"], m["self"]) for m in listed],
                         [(i, peers[i], i == 2) for i in (1, 2, 3)])
        self.assertTrue(all(m["tenants"] == 1 for m in listed), listed)  # the default tenant
        rows = [line.split() for line in self.admin(3, "cluster", "members").stdout.splitlines()]
        self.assertEqual(rows[0], ["ID", "PEER_ADDRESS", "SELF", "CONNECTED", "TENANTS"])
        self.assertEqual([r[0] for r in rows[1:]], ["1", "2", "3"])
        self.assertEqual([r[2] for r in rows[1:]], ["no", "no", "yes"])

        address = f"127.0.0.4:{free_port('127.0.0.4')}"
        out = self.admin(1, "cluster", "add", "4", address)
        self.assertEqual(out.stdout, f"added node 4 (peer {address}): start it with cluster.join = true and "
                                     "cluster.peers listing it and a running member\n")
        four = next(m for m in self.members(3) if m["id"] == 4)  # any node lists it at once
        self.assertEqual((four["peerAddress"], four["self"], four["connected"]), (address, False, False))
        out = self.admin(2, "cluster", "add", "4", "127.0.0.5:7005", code=1)
        self.assertIn("node 4 is a member already", out.stderr)
        out = self.admin(2, "cluster", "add", "5", address, code=1)
        self.assertIn("HTTP 400", out.stderr)

        out = self.admin(3, "cluster", "remove", "4", "--yes")
        self.assertTrue(out.stdout.startswith("removed node 4 from the cluster (members now: 1, 2, 3)"), out.stdout)
        self.assertEqual([m["id"] for m in self.members(1)], [1, 2, 3])
        out = self.admin(1, "cluster", "remove", "4", "--yes", code=1)
        self.assertIn("node 4 is not a member", out.stderr)


if __name__ == "__main__":
    unittest.main()
