"""tests/integration/test_disk_full.py — disk full is a pause, not a failure, on a real (small,
tmpfs) file system: under node.disk_reserve_bytes pushes answer 507 while reads, pops and acks go
on; writes resume by themselves once space is freed; a start on a full disk says how much to
free and, once freed, carries on with nothing acknowledged lost. With the check off
(node.disk_reserve_bytes = 0) the log meets ENOSPC: every request is still answered."""

import json
import os
import subprocess
import tempfile
import unittest

from harness import Server

MIB = 1 << 20
RESERVE = 24 * MIB
PAYLOAD = "x" * 1000
ITEMS = 500  # ~0.5 MiB per push


def push_body():
    return json.dumps({"items": [{"queue": "q", "payload": PAYLOAD} for _ in range(ITEMS)]})


def free_bytes(path):
    info = os.statvfs(path)
    return info.f_bavail * info.f_frsize


class DiskFull(unittest.TestCase):
    def setUp(self):
        self.mount = tempfile.mkdtemp(prefix="queen-diskfull-")
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", self.mount],
                              capture_output=True, text=True)
        if done.returncode != 0:
            self.skipTest("cannot mount a tmpfs here (needs root): " + done.stderr.strip())
        self.data_dir = os.path.join(self.mount, "data")
        self.filler = os.path.join(self.mount, "filler")
        self.server = None
        self.client = None

    def tearDown(self):
        if self.client is not None:
            self.client.close()
        if self.server is not None:
            self.server.stop()
        subprocess.run(["umount", "-l", self.mount], capture_output=True)
        os.rmdir(self.mount)

    def start(self, reserve=RESERVE):
        self.server = Server(data_dir=self.data_dir,
                             settings={"node.disk_reserve_bytes": str(reserve)})
        self.server.start()
        if self.client is not None:
            self.client.close()
        self.client = self.server.client()
        return self.client

    def fill(self, leave):
        """Writes a filler file so that about `leave` bytes stay free."""
        size = max(0, free_bytes(self.mount) - leave)
        with open(self.filler, "ab") as f:
            f.write(b"\0" * size)

    def test_pushes_pause_reads_and_consumers_go_on_and_pushes_resume(self):
        client = self.start()
        self.fill(RESERVE + 8 * MIB)
        accepted = 0
        refused = None
        for _ in range(200):
            r = client.post("/api/v1/push", raw_body=push_body().encode(),
                             headers={"Content-Type": "application/json"})
            if r.status != 201:
                refused = r
                break
            accepted += ITEMS
        self.assertIsNotNone(refused, "pushes never paused")
        self.assertEqual(refused.status, 507, refused)
        self.assertIn("disk full", refused.json()["error"])
        self.assertEqual(refused.headers.get("retry-after"), "1")
        self.assertGreater(accepted, 0)
        # Reads, pops and acks go on: consumers can drain.
        r = client.get("/api/v1/resources/queues")
        self.assertEqual(r.status, 200, r)
        r = client.get("/api/v1/pop/queue/q?batch=10&wait=false")
        self.assertEqual(r.status, 200, r)
        message = r.json()["messages"][0]
        r = client.post("/api/v1/ack", {"transactionId": message["transactionId"],
                                        "partitionId": message["partitionId"],
                                        "leaseId": message["leaseId"], "status": "completed"})
        self.assertEqual(r.status, 200, r)
        metrics = client.get("/metrics/prometheus").body
        self.assertIn("queen_disk_full_refusals_total", metrics)
        # Space returns: the next push goes through, no restart.
        os.remove(self.filler)
        r = client.post("/api/v1/push", raw_body=push_body().encode(),
                        headers={"Content-Type": "application/json"})
        self.assertEqual(r.status, 201, r)
        accepted += ITEMS
        status = client.get("/api/v1/status/queues/q").json()
        self.assertEqual(status["totals"]["total"], accepted, status["totals"])

    def test_a_start_on_a_full_disk_says_what_to_free_and_loses_nothing(self):
        client = self.start()
        for _ in range(4):
            r = client.post("/api/v1/push", raw_body=push_body().encode(),
                            headers={"Content-Type": "application/json"})
            self.assertEqual(r.status, 201, r)
        client.close()
        self.assertEqual(self.server.stop(), 0)
        self.fill(0)
        self.server = Server(data_dir=self.data_dir,
                             settings={"node.disk_reserve_bytes": str(RESERVE)})
        self.server.spawn()
        code = self.server.process.wait(timeout=60)
        output = self.server.output()
        if code == 0 or "disk full" not in output:
            self.fail(f"exit {code}: {output[-2000:]}")
        self.assertIn("node.disk_reserve_bytes", output)
        self.assertIn("nothing acknowledged is lost", output)
        self.server.stop()
        self.server = None
        os.remove(self.filler)
        client = self.start()
        status = client.get("/api/v1/status/queues/q").json()
        self.assertEqual(status["totals"]["total"], 4 * ITEMS, status["totals"])

    def test_with_the_check_off_the_log_fails_but_every_request_is_answered(self):
        client = self.start(reserve=0)
        self.fill(4 * MIB)
        statuses = []
        for _ in range(40):  # far more than the space left
            r = client.post("/api/v1/push", raw_body=push_body().encode(),
                            headers={"Content-Type": "application/json"})
            statuses.append(r.status)
            if r.status != 201:
                break
        self.assertEqual(statuses[-1], 503, statuses)
        self.assertIn("storage failure", r.json()["error"])
