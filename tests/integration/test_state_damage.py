"""tests/integration/test_state_damage.py — a flipped byte in LMDB's data file (data.mdb) inside a
stored message: `queen inspect state --verify` finds it (exit 4, the block named), and the node
never serves the damaged bytes: the message's detail answers 500 naming the damage, and a pop of
it stops the tenant's writes (503) instead of delivering it. The same inside another record (a KV
value, checked by the store's value checksum): --verify names the table and key, a read answers
500 and the neighbouring keys are served."""

import json
import os
import subprocess

from harness import QUEEN_BIN, Server, ServerTestCase

MARKER = b"MARKER-0123456789abcdefghijklmnopqrstuvwxyz"


def flip_marker(data_dir, marker=MARKER):
    """Flips one bit in every copy of `marker` in the default tenant's data.mdb; returns how
    many."""
    path = os.path.join(data_dir, "tenants", "default", "state", "data.mdb")
    with open(path, "r+b") as f:
        data = bytearray(f.read())
        count = 0
        at = data.find(marker)
        while at >= 0:
            data[at + len(marker) // 2] ^= 0x04
            count += 1
            at = data.find(marker, at + 1)
        f.seek(0)
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    return count


def inspect_verify(data_dir):
    return subprocess.run([QUEEN_BIN, "inspect", "state", data_dir, "--tenant", "default",
                           "--verify", "--json"], capture_output=True, text=True)


class StateDamage(ServerTestCase):
    def test_a_flipped_byte_in_a_message_is_found_and_never_served(self):
        items = [{"queue": "q", "partition": "p", "transactionId": f"t{i}",
                  "payload": {"text": MARKER.decode(), "i": i}} for i in range(3)]
        r = self.client.post("/api/v1/push", {"items": items})
        self.assertEqual(r.status, 201, r)
        partition_id = r.json()[0]["partition_id"]
        self.client.close()
        self.assertEqual(self.server.stop(), 0)  # SIGTERM: the state is checkpointed

        clean = inspect_verify(self.server.data_dir)
        self.assertEqual(clean.returncode, 0, clean.stdout + clean.stderr)
        report = json.loads(clean.stdout)
        self.assertEqual(report["verify"]["damaged"], 0)
        self.assertGreaterEqual(report["verify"]["blocks"], 1)

        self.assertGreaterEqual(flip_marker(self.server.data_dir), 1)
        damaged = inspect_verify(self.server.data_dir)
        self.assertEqual(damaged.returncode, 4, damaged.stdout + damaged.stderr)
        report = json.loads(damaged.stdout)
        self.assertEqual(report["verify"]["damaged"], 1, report["verify"])
        self.assertIn("fails its checksum", report["verify"]["damage"][0])

        self.server = Server(data_dir=self.server.data_dir)
        self.server.start()
        self.client = self.server.client()
        r = self.client.get(f"/api/v1/messages/{partition_id}/t1")
        self.assertEqual(r.status, 500, r)
        self.assertIn("fails its checksum", r.json()["error"])
        self.assertNotIn(MARKER.decode()[:20], r.body)
        r = self.client.get("/api/v1/pop/queue/q?batch=10&wait=false")
        self.assertEqual(r.status, 503, r)
        self.assertIn("fails its checksum", r.json()["error"])
        self.assertNotIn(MARKER.decode()[:20], r.body)

    def test_a_flipped_byte_in_a_kv_value_is_found_and_never_served(self):
        marker = b"KV-MARKER-0123456789abcdefghijklmnopqrstuvwxyz"
        for key, value in (("a", "first"), ("b", marker.decode()), ("c", "third")):
            r = self.client.put(f"/api/v1/kv/orders/{key}", {"v": value})
            self.assertEqual(r.status, 200, r)
        self.client.close()
        self.assertEqual(self.server.stop(), 0)
        self.assertEqual(inspect_verify(self.server.data_dir).returncode, 0)

        self.assertGreaterEqual(flip_marker(self.server.data_dir, marker), 1)
        damaged = inspect_verify(self.server.data_dir)
        self.assertEqual(damaged.returncode, 4, damaged.stdout + damaged.stderr)
        report = json.loads(damaged.stdout)["verify"]
        self.assertEqual(report["damaged"], 1, report)
        self.assertIn("kv.entries", report["damage"][0])
        self.assertIn("fails its checksum", report["damage"][0])

        self.server = Server(data_dir=self.server.data_dir)
        self.server.start()
        self.client = self.server.client()
        r = self.client.get("/api/v1/kv/orders/b")
        self.assertEqual(r.status, 500, r)
        self.assertIn("damaged data", r.json()["error"])
        self.assertNotIn(marker.decode()[:20], r.body)
        self.assertEqual(self.client.get("/api/v1/kv/orders/a").json()["value"], {"v": "first"})
        self.assertEqual(self.client.get("/api/v1/kv/orders/c").json()["value"], {"v": "third"})
        text = self.client.get("/metrics/prometheus").body
        self.assertIn("queen_damaged_reads_total 1", text)
