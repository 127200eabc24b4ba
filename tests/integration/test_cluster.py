"""tests/integration/test_cluster.py — three real `queen serve` processes form a cluster: the
default tenant is one raft group over them, one leader commits writes (a follower forwards them
to it and relays the answer), followers apply the same entries, and after a SIGKILL of the
leader a new one holds every acknowledged push.

Each node binds its peer listener on its own loopback address (127.0.0.1-3); the HTTP listeners
pick free ports."""
import random
import socket
import time
import unittest

from harness import Server, seed_from_env, wait_until

SECRET = "integration-test-cluster-secret"


def free_port(host):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def tenant_health(server):
    client = server.client(timeout=5)
    try:
        r = client.get("/health")
    except OSError:
        return None
    finally:
        client.close()
    if r.status != 200:
        return None
    for tenant in r.json()["tenants"]:
        if tenant["name"] == "default":
            return tenant
    return None


class Cluster:
    def __init__(self, size=3):
        hosts = [f"127.0.0.{i}" for i in range(1, size + 1)]
        peers = ",".join(f"{i}@{host}:{free_port(host)}" for i, host in enumerate(hosts, start=1))
        self.nodes = {}
        for i in range(1, size + 1):
            self.nodes[i] = Server(settings={
                "node.id": str(i),
                "cluster.peers": peers,
                "cluster.secret": SECRET,
                "cluster.tick_ms": "20",
                "cluster.election_ticks": "10",
                "cluster.heartbeat_ticks": "2",
            })

    def start(self):
        for node in self.nodes.values():
            node.start()
        return self

    def cleanup(self):
        for node in self.nodes.values():
            node.cleanup()

    def running(self):
        return {i: n for i, n in self.nodes.items() if n.process is not None}

    def leader(self, timeout=30):
        """Waits until every running node names the same leader, which says it leads."""
        found = {}

        def agreed():
            views = {i: tenant_health(n) for i, n in self.running().items()}
            if any(v is None for v in views.values()):
                return False
            leaders = {v["leaderId"] for v in views.values()}
            if len(leaders) != 1 or 0 in leaders:
                return False
            leader = leaders.pop()
            if leader not in views or views[leader]["role"] != "leader":
                return False
            found["id"] = leader
            found["term"] = views[leader]["term"]
            return True

        wait_until(agreed, timeout=timeout, what="one leader every running node agrees on")
        return found["id"], found["term"]


class ClusterReplication(unittest.TestCase):
    def setUp(self):
        self.seed = seed_from_env()
        self.rng = random.Random(self.seed)
        self.cluster = Cluster().start()

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

        # Every follower applies the same entries.
        committed = tenant_health(leader)["committedIndex"]
        for i, node in cluster.nodes.items():
            wait_until(lambda: (tenant_health(node) or {}).get("appliedIndex", 0) >= committed,
                       what=f"node {i} applies through {committed}")

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
        committed = tenant_health(new_leader)["committedIndex"]
        wait_until(lambda: (tenant_health(leader) or {}).get("appliedIndex", 0) >= committed,
                   what="the restarted node catches up")
        self.assertEqual(tenant_health(leader)["role"], "follower")


if __name__ == "__main__":
    unittest.main()
