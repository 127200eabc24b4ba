"""tests/integration/test_cluster_tenants.py — tenants of a three-node cluster of real `queen
serve` processes: a tenant on one node is served through every node (requests forwarded over the
peer link, long polls included), a tenant on three nodes is served by each, a delete removes the
tenant's data on every replica, and tenants' leaders spread over the nodes (rebalance)."""
import os
import threading
import unittest

from harness import ClusterTestCase, metric, wait_until

TENANTS = "/api/v1/system/tenants"


class ClusterTenants(ClusterTestCase):
    def create(self, via, name, replication):
        r = self.request(via, "POST", TENANTS, body={"name": name, "replication": replication})
        self.assertEqual(r.status, 201, r)
        return r.json()

    def listed(self, via):
        r = self.request(via, "GET", TENANTS)
        self.assertEqual(r.status, 200, r)
        return {t["name"]: t for t in r.json()["tenants"]}

    def answered(self, via, method, path, tenant, body=None):
        """The first answer that is not a 503 "not the leader": a new tenant's leadership moves to
        its preferred node once, and a command that arrives during the transfer is refused
        before it reaches the log (the client's retry, docs/http-api.md)."""
        answer = []

        def attempt():
            r = self.request(via, method, path, tenant=tenant, body=body)
            if r.status == 503 and "not the leader" in r.body:
                return False
            answer.append(r)
            return True

        wait_until(attempt, timeout=20, what=f"{method} {path} past a leadership transfer")
        return answer[0]

    def push(self, via, tenant, queue, values):
        items = [{"queue": queue, "partition": "p", "payload": {"v": v}} for v in values]
        r = self.answered(via, "POST", "/api/v1/push", tenant, body={"items": items})
        self.assertEqual(r.status, 201, r)
        self.assertTrue(all(x["status"] == "queued" for x in r.json()), r.body)

    def pop_values(self, via, tenant, queue, batch=100):
        r = self.answered(via, "GET", f"/api/v1/pop/queue/{queue}?batch={batch}&autoAck=true&wait=false",
                          tenant)
        self.assertIn(r.status, (200, 204), r)
        return [] if r.status == 204 else [m["data"]["v"] for m in r.json()["messages"]]

    def tenant_dir(self, i, name):
        return os.path.join(self.cluster.nodes[i].data_dir, "tenants", name)

    def test_a_tenant_on_one_node_is_served_through_every_node(self):
        solo = self.create(1, "solo", 1)
        self.assertEqual(solo["replication"], 1)
        [home] = solo["replicas"]
        others = [i for i in self.cluster.nodes if i != home]
        self.assertTrue(os.path.isdir(self.tenant_dir(home, "solo")))
        for i in others:
            self.assertFalse(os.path.exists(self.tenant_dir(i, "solo")), f"node {i} holds solo")

        # Every node takes pushes for it; the ones that do not host it forward them.
        for i in self.cluster.nodes:
            self.push(i, "solo", "work", [f"{i}-{n}" for n in range(5)])
        expected = sorted(f"{i}-{n}" for i in self.cluster.nodes for n in range(5))
        got = []
        for i in others + [home]:
            got += self.pop_values(i, "solo", "work", batch=5)
        self.assertEqual(sorted(got), expected)

        # A long poll through a node that does not host the tenant is parked on the replica and
        # woken by a push through the other such node.
        answer = {}

        def long_poll():
            answer["r"] = self.request(others[0], "GET", "/api/v1/pop/queue/late?wait=true&timeout=20000&autoAck=true",
                                       tenant="solo", timeout=40)

        poller = threading.Thread(target=long_poll)
        poller.start()
        wait_until(lambda: metric(self.metrics(home), "queen_longpoll_parked") >= 1, timeout=20,
                   what="the forwarded long poll parks on the replica")
        self.push(others[1], "solo", "late", ["wake"])
        poller.join(40)
        self.assertFalse(poller.is_alive())
        r = answer["r"]
        self.assertEqual(r.status, 200, r)
        self.assertEqual([m["data"]["v"] for m in r.json()["messages"]], ["wake"])

        # What was forwarded shows in the metrics of both sides.
        for i in others:
            self.assertGreaterEqual(metric(self.metrics(i), "queen_forward_answered_total"), 3)
        self.assertGreaterEqual(metric(self.metrics(home), "queen_forward_served_total"), 6)
        self.assertEqual(metric(self.metrics(home), "queen_forward_requests_total"), 0)

        # Node-wide routes and unknown tenants are answered by the node asked.
        for i in self.cluster.nodes:
            r = self.request(i, "GET", "/api/v1/resources/queues", tenant="nosuch")
            self.assertEqual(r.status, 404, r)
            self.assertEqual(sorted(self.listed(i)), ["default", "solo"])

    def test_a_tenant_on_three_nodes_is_served_by_each_and_deleted_everywhere(self):
        trio = self.create(2, "trio", 3)
        self.assertEqual(sorted(trio["replicas"]), [1, 2, 3])
        for i in self.cluster.nodes:
            wait_until(lambda: self.listed(i)["trio"]["hosted"], timeout=20, what=f"trio open on node {i}")
        for i in self.cluster.nodes:
            self.push(i, "trio", "jobs", [f"{i}-{n}" for n in range(3)])
        got = []
        for i in self.cluster.nodes:
            got += self.pop_values(i, "trio", "jobs", batch=3)
        self.assertEqual(sorted(got), sorted(f"{i}-{n}" for i in self.cluster.nodes for n in range(3)))
        # Every node hosts it: nothing was forwarded.
        for i in self.cluster.nodes:
            self.assertEqual(metric(self.metrics(i), "queen_forward_requests_total"), 0)

        solo = self.create(3, "solo", 1)
        [home] = solo["replicas"]
        # The create answered once the tenant opened on the node asked; its replica may open it a
        # moment later.
        wait_until(lambda: self.listed(home)["solo"]["hosted"], timeout=20, what=f"solo open on node {home}")
        self.push(home, "solo", "q", ["kept"])

        # Deleting through any node removes the data on every replica; the name is then unknown
        # on every node.
        r = self.request(1, "DELETE", TENANTS + "/trio")
        self.assertEqual(r.status, 200, r)
        r = self.request(2, "DELETE", TENANTS + "/solo")
        self.assertEqual(r.status, 200, r)
        for i in self.cluster.nodes:
            wait_until(lambda: not os.path.exists(self.tenant_dir(i, "trio")), timeout=20,
                       what=f"trio's directory removed on node {i}")
        wait_until(lambda: not os.path.exists(self.tenant_dir(home, "solo")), timeout=20,
                   what=f"solo's directory removed on node {home}")
        for i in self.cluster.nodes:
            for name in ("trio", "solo"):
                r = wait_until(lambda: (lambda r: r if r.status == 404 else None)(
                    self.request(i, "GET", "/api/v1/resources/queues", tenant=name)), timeout=20,
                    what=f"{name} unknown on node {i}")
                self.assertIn("no such tenant", r.json()["error"])
            self.assertEqual(sorted(self.listed(i)), ["default"])

        # The same name again is a new tenant: empty, whichever node it lands on.
        again = self.create(1, "solo", 1)
        self.assertEqual(self.pop_values(1, "solo", "q"), [])
        self.assertGreater(self.listed(again["replicas"][0])["solo"]["replication"], 0)

    def test_leaders_of_tenants_spread_over_the_nodes(self):
        names = ["t1", "t2", "t3"]
        for n, name in enumerate(names):
            self.create(1 + n % 3, name, 3)
        preferred = {name: self.listed(1)[name]["preferredLeader"] for name in names}
        # Tenants created through the API take their leader where the catalogue placed it:
        # one per node.
        self.assertEqual(sorted(preferred.values()), [1, 2, 3])

        def leaders_at_preferred():
            for name, node in preferred.items():
                health = self.cluster.tenant_health(node, tenant=name)
                if not health or health["role"] != "leader":
                    return False
            return True

        wait_until(leaders_at_preferred, timeout=30, what="each tenant led by its preferred leader")

        # A rebalance places the default tenant's leader too: four leaders over three nodes, at
        # most two on one node, every tenant led where the catalogue now says.
        r = self.request(2, "POST", "/api/v1/system/cluster/rebalance")
        self.assertEqual(r.status, 200, r)
        placed = {t["name"]: t["preferredLeader"] for t in r.json()["tenants"]}
        self.assertEqual(sorted(placed), ["default"] + names)
        counts = [list(placed.values()).count(i) for i in self.cluster.nodes]
        self.assertLessEqual(max(counts), 2, placed)
        self.assertGreaterEqual(min(counts), 1, placed)
        preferred = placed

        wait_until(leaders_at_preferred, timeout=30, what="each tenant led where the rebalance placed it")


if __name__ == "__main__":
    unittest.main()
