"""tests/integration/test_inspect.py — `queen inspect` reads a real node's files, read-only."""
import glob
import json
import os
import subprocess
import unittest

from harness import QUEEN_BIN, Server


def run(*args):
    return subprocess.run([QUEEN_BIN, *args], capture_output=True, text=True)


class Inspect(unittest.TestCase):
    def setUp(self):
        self.server = Server()
        self.server.start()
        c = self.server.client()
        for i in range(20):
            c.push("inspected", [{"i": i, "pad": "x" * 200}], partition=f"p{i % 3}")
        c.close()
        self.server.stop()
        self.log_dir = os.path.join(self.server.data_dir, "tenants/default/log")
        self.state_dir = os.path.join(self.server.data_dir, "tenants/default/state")

    def tearDown(self):
        self.server.cleanup()

    def test_log_verify_passes_then_finds_a_flipped_byte(self):
        ok = run("inspect", "log", self.log_dir, "--verify", "--json")
        self.assertEqual(ok.returncode, 0, ok.stderr)
        report = json.loads(ok.stdout)
        self.assertTrue(report)
        # The writer keeps zeros ahead of its records: a clean end, neither damage nor a torn tail.
        self.assertIsNone(report["torn_tail"])
        self.assertIsNone(report["corruption"])
        last = report["segments"][-1]
        self.assertGreater(last["zero_tail_bytes"], 0)
        self.assertEqual(report["records"], sum(s["records"] for s in report["segments"]))
        segment = sorted(glob.glob(os.path.join(self.log_dir, "*.seg")))[0]
        first = report["segments"][0]
        records_end = first["size_bytes"] - first["zero_tail_bytes"]
        with open(segment, "rb") as f:
            before = f.read()
        with open(segment, "r+b") as f:
            f.seek(records_end // 2)
            b = f.read(1)
            f.seek(records_end // 2)
            f.write(bytes([b[0] ^ 0xFF]))
        bad = run("inspect", "log", self.log_dir, "--verify")
        self.assertEqual(bad.returncode, 4, bad.stdout + bad.stderr)
        self.assertIn(os.path.basename(segment), bad.stdout + bad.stderr)
        self.assertEqual(os.path.getsize(segment), len(before), "inspect must not repair")

    def test_state_lists_tables_with_counts(self):
        human = run("inspect", "state", self.state_dir)
        self.assertEqual(human.returncode, 0, human.stderr)
        out = run("inspect", "state", self.state_dir, "--json")
        self.assertEqual(out.returncode, 0, out.stderr)
        data = json.loads(out.stdout)
        self.assertIn("tables", data)
        self.assertGreater(sum(t["entries"] for t in data["tables"]), 0)

    def test_bad_paths_fail_cleanly(self):
        self.assertEqual(run("inspect", "state", "/nonexistent").returncode, 1)
        self.assertEqual(run("inspect", "log", "/nonexistent").returncode, 1)
        self.assertEqual(run("inspect").returncode, 2)


if __name__ == "__main__":
    unittest.main()
