"""tests/integration/test_cluster_quiesce.py — idle tenants of a three-node cluster of real `queen
serve` processes go quiet (their raft groups exchange no messages; the nodes keep one node
heartbeat per peer), and when the node leading quiet tenants is killed, every one of them gets a
new leader on the surviving nodes and takes writes."""
import signal
import unittest

from harness import ClusterTestCase, metric, wait_until

TENANTS = "/api/v1/system/tenants"
NAMES = [f"q{n}" for n in range(9)]


class ClusterQuiesce(ClusterTestCase):
    # Quiet after 5 idle ticks (100 ms) rather than the default election timeout. A leader
    # proposes a sweep every tenant.sweep_interval_ms only while one of its queues has options a
    # sweep acts on (retention, TTL, max wait): these queues have none, so a sweep every 200 ms
    # must not wake the groups.
    settings = {"cluster.quiesce_ticks": "5", "tenant.sweep_interval_ms": "200"}

    def all_quiet(self, nodes, groups):
        for i in nodes:
            body = self.metrics(i)
            if metric(body, "queen_raft_groups") != groups or metric(body, "queen_raft_quiet_groups") != groups:
                return False
        return True

    def leaders(self, nodes):
        """{tenant: the node leading it} when every tenant has one leader the nodes agree on."""
        found = {}
        for name in NAMES:
            views = [self.cluster.tenant_health(i, tenant=name) for i in nodes]
            if any(v is None for v in views):
                return None
            ids = {v["leaderId"] for v in views}
            if len(ids) != 1 or 0 in ids or ids & set(nodes) != ids:
                return None
            leader = ids.pop()
            if self.cluster.tenant_health(leader, tenant=name)["role"] != "leader":
                return None
            found[name] = leader
        return found

    def push(self, via, tenant, value):
        items = [{"queue": "work", "partition": "p", "payload": {"v": value}}]
        r = self.request(via, "POST", "/api/v1/push", tenant=tenant, body={"items": items})
        return r.status == 201 and all(x["status"] == "queued" for x in r.json())

    def test_idle_tenants_go_quiet_and_fail_over(self):
        for n, name in enumerate(NAMES):
            r = self.request(1 + n % 3, "POST", TENANTS, body={"name": name, "replication": 3})
            self.assertEqual(r.status, 201, r)
        for name in NAMES:  # a replica that is still opening the tenant answers 503: retry
            wait_until(lambda: self.push(1, name, "before"), timeout=30, what=f"a write to {name}")
        everyone = list(self.cluster.nodes)
        groups = len(NAMES) + 1  # and the default tenant
        wait_until(lambda: self.leaders(everyone), timeout=30, what="every tenant led")
        wait_until(lambda: self.all_quiet(everyone, groups), timeout=60,
                   what="every group quiet on every node")

        # Quiet: while the nodes exchange node heartbeats, the groups send no raft message.
        before = {i: self.metrics(i) for i in everyone}
        beats = {i: metric(before[i], "queen_cluster_node_heartbeats_sent_total") for i in everyone}
        wait_until(lambda: all(metric(self.metrics(i), "queen_cluster_node_heartbeats_sent_total")
                               >= beats[i] + 20 for i in everyone),
                   timeout=60, what="20 node heartbeats from each node")
        for i in everyone:
            after = self.metrics(i)
            self.assertEqual(metric(after, "queen_raft_messages_sent_total"),
                             metric(before[i], "queen_raft_messages_sent_total"), f"node {i}")
            self.assertEqual(metric(after, "queen_raft_quiet_groups"), groups, f"node {i}")
            self.assertEqual(metric(after, "queen_cluster_peers_gone"), 0, f"node {i}")

        # The node leading the most quiet tenants dies: the others notice (connection closed),
        # wake the groups, and elect new leaders among themselves; writes go through.
        led = self.leaders(everyone)
        victim = max(everyone, key=lambda i: list(led.values()).count(i))
        self.assertGreater(list(led.values()).count(victim), 0)
        self.cluster.nodes[victim].stop(signal.SIGKILL)
        survivors = [i for i in everyone if i != victim]
        new = wait_until(lambda: self.leaders(survivors), timeout=60,
                         what="a leader for every tenant among the survivors")
        self.assertNotIn(victim, new.values())
        for name in NAMES:
            wait_until(lambda: self.push(survivors[0], name, "after"), timeout=30,
                       what=f"a write to {name}")
        for i in survivors:
            body = self.metrics(i)
            self.assertGreater(metric(body, "queen_raft_groups_woken_total"), 0, f"node {i}")
            self.assertEqual(metric(body, "queen_cluster_peers_gone"), 1, f"node {i}")


if __name__ == "__main__":
    unittest.main()
