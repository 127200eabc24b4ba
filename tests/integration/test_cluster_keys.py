"""tests/integration/test_cluster_keys.py — a cluster runs with one payload key: a fresh
three-node cluster creates it once (node 1, after every node answered that it has none) and hands
it to the others over the peer link, so payloads sealed through one node open through any other,
after a failover too; a node whose data directory was wiped gets the same key back; a node waiting
for the key stops on SIGTERM; nodes given different keys say so (docs/security.md, "Clusters")."""
import hashlib
import os
import re
import shutil
import signal
import stat
import unittest

from harness import ClusterProcesses, wait_until

NO_ENV_KEY = {"QUEEN_ENCRYPTION_KEY": ""}
KEY_A = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
KEY_B = "ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100"


def fingerprint_of(key_hex):
    return hashlib.sha256(bytes.fromhex(key_hex)).hexdigest()[:16]


def key_file(node):
    return os.path.join(node.data_dir, "keys", "payload.key")


def read_key(node):
    with open(key_file(node), "rb") as f:
        return f.read()


def cluster_without_env_key(settings=None, per_node=None):
    cluster = ClusterProcesses(settings=settings)
    for i, node in cluster.nodes.items():
        node.env.update(NO_ENV_KEY)
        node.settings.update((per_node or {}).get(i, {}))
    return cluster


def pop_one(node, queue):
    c = node.client()
    try:
        r = c.pop(queue, wait=False, autoAck=True)
    finally:
        c.close()
    assert r.status == 200, r
    return [m["data"] for m in r.json()["messages"]]


class ClusterKey(unittest.TestCase):
    def tearDown(self):
        self.cluster.cleanup()

    def test_one_key_created_once_handed_to_every_node_and_back_to_a_wiped_one(self):
        self.cluster = cluster = cluster_without_env_key({"cluster.leader_wait_ms": "2000"}).start()
        nodes = cluster.nodes

        # The same key file on every node: 64 hex digits and a newline, owner only.
        key = read_key(nodes[1])
        self.assertRegex(key.decode(), r"^[0-9a-f]{64}\n$")
        for i, node in nodes.items():
            self.assertEqual(read_key(node), key, f"node {i}")
            self.assertEqual(stat.S_IMODE(os.stat(key_file(node)).st_mode), 0o600)
        fingerprint = fingerprint_of(key.decode().strip())
        # Node 1 (the smallest id) created it once every peer answered it has none; the others
        # received it; every node logs the same fingerprint.
        self.assertIn("cluster.key_created", nodes[1].output())
        for i in (2, 3):
            self.assertNotIn("cluster.key_created", nodes[i].output())
            self.assertRegex(nodes[i].output(), r"cluster\.key_received peer=\d")
            self.assertRegex(nodes[i].output(), r"node\.encryption_key source=data_dir .* created=true received_from=\d")
        for node in nodes.values():
            self.assertEqual(re.findall(r"node\.encryption_key .*fingerprint=([0-9a-f]{16})", node.output()),
                             [fingerprint])
            self.assertNotIn("cluster.key_mismatch", node.output())

        # Sealed through a follower, opened through another node.
        leader_id, _ = cluster.leader()
        followers = [i for i in nodes if i != leader_id]
        c = nodes[followers[0]].client()
        r = c.post("/api/v1/configure", {"queue": "secret", "options": {"encryptionEnabled": True}})
        self.assertEqual(r.status, 200, r.body)
        r = c.push("secret", [{"card": "first-4111111111111111"}])
        self.assertEqual(r.status, 201, r.body)
        c.close()
        self.assertEqual(pop_one(nodes[followers[1]], "secret"), [{"card": "first-4111111111111111"}])
        # The state holds ciphertext only.
        c = nodes[leader_id].client()
        r = c.push("secret", [{"card": "second-5500005555555559"}])
        self.assertEqual(r.status, 201, r.body)
        c.close()

        # The leader that sealed them dies; a survivor opens them.
        nodes[leader_id].kill()
        new_leader, _ = cluster.leader()
        survivor = next(i for i in followers if i != new_leader)
        self.assertEqual(pop_one(nodes[survivor], "secret"), [{"card": "second-5500005555555559"}])

        # A surviving follower loses its data directory: it gets the same key back from the
        # leader (node `leader_id` is still down). (Whether its tenant catches up is raft's
        # business: test_cluster.py.)
        self.assertEqual(nodes[survivor].stop(), 0)
        shutil.rmtree(nodes[survivor].data_dir)
        earlier = len(nodes[survivor].log_lines)  # the output of this start only (it may be node 1)
        nodes[survivor].start()
        restarted = "".join(nodes[survivor].log_lines[earlier:])
        self.assertEqual(read_key(nodes[survivor]), key)
        self.assertRegex(restarted, rf"cluster\.key_received peer={new_leader} fingerprint={fingerprint}")
        self.assertNotIn("cluster.key_created", restarted)

    def test_a_node_waiting_for_the_key_stops_on_sigterm(self):
        # Alone, a fresh node can get the key from nobody and must not create one: it waits
        # (start-up blocks) and still stops cleanly on SIGTERM.
        self.cluster = cluster = cluster_without_env_key()
        node = cluster.nodes[1]
        node.spawn()
        wait_until(lambda: "cluster.key_asking" in node.output(), what="node 1 asks its peers for the key")
        self.assertEqual(node.stop(signal.SIGTERM, timeout=10), 0)
        self.assertIn("node.stopped", node.output())
        self.assertNotIn("node.listening", node.output())
        self.assertFalse(os.path.exists(key_file(node)))

    def test_nodes_given_different_keys_log_both_fingerprints(self):
        # Explicit keys are used as given; a node without one takes the first peer's and every
        # node that sees another fingerprint says so.
        self.cluster = cluster = cluster_without_env_key(per_node={
            2: {"security.encryption_key": KEY_A},
            3: {"security.encryption_key": KEY_B}}).start()
        for i in (2, 3):
            wait_until(lambda: "cluster.key_mismatch" in cluster.nodes[i].output(),
                       what=f"node {i} reports the other key")
            line = next(l for l in cluster.nodes[i].output().splitlines() if "cluster.key_mismatch" in l)
            self.assertIn(fingerprint_of(KEY_A), line)
            self.assertIn(fingerprint_of(KEY_B), line)
        self.assertIn(read_key(cluster.nodes[1]).decode().strip(), (KEY_A, KEY_B))


if __name__ == "__main__":
    unittest.main()
