"""tests/integration/test_cluster_members.py — membership changes of a cluster of real `queen serve`
processes under load: a fourth node joins (`cluster.join`) and becomes a voter of the groups it is
placed in, then a founding node is removed and replaced in its tenants. A writer pushes to two
tenants all along; afterwards every acknowledged push is delivered, and the groups' membership is
proved by what still commits when only the new members are up."""
import os
import signal
import threading
import time
import unittest

from harness import ClusterTestCase, Server, free_port, wait_until

MEMBERS = "/api/v1/system/cluster/members"


class Writer(threading.Thread):
    """Pushes one message at a time to each tenant in turn through `node`, retrying 503s, and
    records the payloads acknowledged (201 queued)."""

    def __init__(self, cluster, node, tenants):
        super().__init__(daemon=True)
        self.cluster, self.node, self.tenants = cluster, node, tenants
        self.acked = {t: [] for t in tenants}
        self.stop = threading.Event()
        self.errors = []

    def run(self):
        n = 0
        client = self.cluster.nodes[self.node].client(timeout=15)
        while not self.stop.is_set():
            tenant = self.tenants[n % len(self.tenants)]
            value = f"{tenant}-{n}"
            body = {"items": [{"queue": "load", "partition": "p", "payload": {"v": value},
                               "transactionId": value}]}
            try:
                r = client.request("POST", "/api/v1/push", body=body, headers={"X-Queen-Tenant": tenant})
            except OSError as e:
                self.errors.append(repr(e))
                client.close()
                time.sleep(0.05)
                continue
            if r.status == 201 and r.json()[0]["status"] in ("queued", "duplicate"):
                self.acked[tenant].append(value)
                n += 1
            elif r.status == 503:
                time.sleep(0.05)  # Retry-After, shortened: the same item is pushed again
            else:
                self.errors.append(f"{r.status} {r.body}")
                n += 1
        client.close()


class ClusterMembers(ClusterTestCase):
    def health(self, i, tenant):
        return self.cluster.tenant_health(i, tenant=tenant) or {}

    def membership_is(self, tenant, voters, among):
        """Every node of `among` applied a membership of exactly `voters`, without learners."""
        for i in among:
            h = self.health(i, tenant)
            if sorted(h.get("voters", [])) != sorted(voters) or h.get("learners"):
                return False
        return True

    def drain(self, via, tenant):
        got = []
        while True:
            r = self.request(via, "GET", "/api/v1/pop/queue/load?batch=1000&autoAck=true&wait=false", tenant=tenant)
            self.assertIn(r.status, (200, 204), r)
            if r.status == 204:
                return got
            got += [m["data"]["v"] for m in r.json()["messages"]]

    def test_a_node_joins_and_a_node_leaves_under_load_and_nothing_acknowledged_is_lost(self):
        r = self.request(1, "POST", "/api/v1/system/tenants", body={"name": "t3", "replication": 3})
        self.assertEqual(r.status, 201, r)
        for i in self.cluster.nodes:
            wait_until(lambda: self.health(i, "t3").get("leaderId"), timeout=20, what=f"t3 led, seen by node {i}")
        # Two one-replica tenants: the placement puts s1 on node 1 and s2 on node 2 (the fewest
        # tenants, then the smallest id). s2 must move off node 2 when it leaves, data included.
        for name in ("s1", "s2"):
            r = self.request(1, "POST", "/api/v1/system/tenants", body={"name": name, "replication": 1})
            self.assertEqual(r.status, 201, r)
        self.assertEqual(r.json()["replicas"], [2], r.body)
        wait_until(lambda: self.health(2, "s2").get("leaderId") == 2, timeout=20, what="s2 led by node 2")
        kept = [f"s2-{n}" for n in range(50)]
        r = self.request(2, "POST", "/api/v1/push", tenant="s2",
                         body={"items": [{"queue": "load", "partition": "p", "payload": {"v": v}} for v in kept]})
        self.assertEqual(r.status, 201, r)
        writer = Writer(self.cluster, 1, ["default", "t3"])
        writer.start()
        wait_until(lambda: all(len(v) >= 20 for v in writer.acked.values()), timeout=30, what="writes flow")

        # Node 4 is announced, then started with cluster.join: it takes the cluster's key and
        # becomes a voter of the default tenant (which spans every member).
        port4 = free_port("127.0.0.4")
        r = self.request(2, "POST", MEMBERS, body={"id": 4, "address": f"127.0.0.4:{port4}"})
        self.assertEqual(r.status, 201, r)
        self.assertEqual([m["id"] for m in r.json()["members"]], [1, 2, 3, 4])
        peers = self.cluster.nodes[1].settings["cluster.peers"] + f",4@127.0.0.4:{port4}"
        settings = dict(self.cluster.nodes[1].settings)
        settings.update({"node.id": "4", "http.address": "127.0.0.4", "cluster.peers": peers, "cluster.join": "true"})
        node4 = Server(settings=settings, host="127.0.0.4")
        self.cluster.nodes[4] = node4
        node4.start()
        wait_until(lambda: self.membership_is("default", [1, 2, 3, 4], [1, 2, 3, 4]), timeout=60,
                   what="node 4 a voter of the default tenant everywhere")
        r = self.request(4, "GET", MEMBERS)
        self.assertEqual(r.status, 200, r)
        self.assertTrue(all(m["connected"] for m in r.json()["members"]), r.body)

        # Node 2 leaves: t3 (on 1, 2, 3) takes node 4 in its place, the default tenant shrinks.
        r = self.request(3, "DELETE", MEMBERS + "/2")
        self.assertEqual(r.status, 200, r)
        self.assertEqual([m["id"] for m in r.json()["members"]], [1, 3, 4])
        wait_until(lambda: self.membership_is("default", [1, 3, 4], [1, 3, 4]), timeout=60,
                   what="node 2 out of the default tenant")
        wait_until(lambda: self.membership_is("t3", [1, 3, 4], [1, 3, 4]), timeout=60,
                   what="node 4 in t3 in place of node 2")
        self.assertTrue(os.path.isdir(os.path.join(node4.data_dir, "tenants", "t3")))
        r = self.request(1, "GET", "/api/v1/system/tenants")
        s2_home = {t["name"]: t for t in r.json()["tenants"]}["s2"]["replicas"]
        self.assertEqual(len(s2_home), 1, r.body)
        self.assertNotEqual(s2_home[0], 2)
        wait_until(lambda: self.membership_is("s2", s2_home, s2_home), timeout=60,
                   what=f"s2 moved from node 2 to node {s2_home[0]}")
        r = self.request(2, "GET", "/ready")
        self.assertEqual(r.status, 503, r)
        self.assertIn("removed", r.body)

        # Only nodes 1 and 4 up: in groups of {1, 3, 4} they are a majority, so writes to both
        # tenants still commit (with node 2 still a voter, or node 4 only a learner, they would not).
        self.cluster.nodes[2].stop()
        self.cluster.nodes[3].process.send_signal(signal.SIGSTOP)
        try:
            for tenant in ("default", "t3"):
                before = len(writer.acked[tenant])
                wait_until(lambda: len(writer.acked[tenant]) >= before + 5, timeout=30,
                           what=f"writes to {tenant} commit on nodes 1 and 4")
        finally:
            self.cluster.nodes[3].process.send_signal(signal.SIGCONT)
        writer.stop.set()
        writer.join(30)
        self.assertFalse(writer.is_alive())

        self.assertEqual(sorted(self.drain(1, "s2")), sorted(kept))
        for tenant in ("default", "t3"):
            got = self.drain(4, tenant)
            self.assertEqual(sorted(set(got)), sorted(set(writer.acked[tenant])),
                             f"{tenant}: delivered != acknowledged (writer errors: {writer.errors[-5:]})")


if __name__ == "__main__":
    unittest.main()
