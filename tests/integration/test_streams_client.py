"""The C++ streams runner (modules/client, queen/client/streams.hpp) against a real `queen serve`:
the hidden client_tests cases "[.streams-e2e]" (tumbling sums of two partitions with a runner
thrown away and one that dies before its cycle, every result once; late corrections, sessions and
the idle flush; the 409 of a changed chain and the reset's fence), and the two stream examples
with known input and asserted output.

QUEEN_CLIENT_TESTS names the client_tests binary, QUEEN_EXAMPLES_DIR the examples' directory
(tests/CMakeLists.txt sets both)."""
import json
import os
import subprocess
import unittest

from harness import QUEEN_BIN, ServerTestCase, seed_from_env

CLIENT_TESTS = os.environ.get("QUEEN_CLIENT_TESTS",
                              os.path.join(os.path.dirname(QUEEN_BIN), "../modules/client/client_tests"))
EXAMPLES_DIR = os.environ.get("QUEEN_EXAMPLES_DIR", os.path.join(os.path.dirname(QUEEN_BIN), "../examples"))


class StreamsClient(ServerTestCase):
    def test_streams_e2e_cases_pass_against_a_real_broker(self):
        if not os.access(CLIENT_TESTS, os.X_OK):
            raise AssertionError(f"{CLIENT_TESTS} is missing: build client_tests (or set QUEEN_CLIENT_TESTS)")
        seed = seed_from_env()
        env = dict(os.environ, QUEEN_E2E_URL=f"http://127.0.0.1:{self.server.port}", QUEEN_SEED=str(seed))
        out = subprocess.run([CLIENT_TESTS, "[.streams-e2e]"], capture_output=True, text=True, timeout=300, env=env)
        self.assertEqual(out.returncode, 0, f"seed {seed}\n{out.stdout[-4000:]}\n{out.stderr[-2000:]}")
        self.assertNotIn("QUEEN_E2E_URL is not set", out.stdout)
        self.assertIn("All tests passed", out.stdout)
        self.assertRegex(out.stdout, r"in 3 test cases")

    # ---- the examples ----

    BASE = 1_767_225_600_000  # 2026-01-01T00:00:00Z: event times long past, closed by the clock

    def run_example(self, name, *args, code=0, timeout=120):
        path = os.path.join(EXAMPLES_DIR, "example_" + name)
        if not os.access(path, os.X_OK):
            raise AssertionError(f"{path} is missing: build the example_{name} target (or set QUEEN_EXAMPLES_DIR)")
        out = subprocess.run([path, "--url", f"http://127.0.0.1:{self.server.port}", "--quiet-ms", "500"] + list(args),
                             capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
        self.assertEqual(out.returncode, code, f"example_{name} {' '.join(args)}:\n{out.stdout[-2000:]}\n{out.stderr}")
        return out.stdout

    def sink(self, queue, partitions):
        """Every payload pushed to `queue`, per partition, in order."""
        out = {}
        for partition in partitions:
            r = self.client.pop(queue, partition=partition, batch=1000, wait="false")
            out[partition] = [m["data"] for m in r.json()["messages"]] if r.status == 200 else []
        return out

    def test_stream_totals_example_sums_each_user_per_minute_once_across_runs(self):
        events = {"east": [("ann", 1_000, 5), ("bob", 2_000, 1), ("ann", 59_999, 7), ("ann", 60_000, 2),
                           ("bob", 150_000, 4)],
                  "west": [("ann", 30_000, 100), ("cid", 61_000, 3)]}
        for partition, rows in events.items():
            self.client.push("clicks", [{"user": u, "ts": self.BASE + t, "amount": a} for u, t, a in rows],
                             partition=partition)
        out = self.run_example("stream_totals")
        expected = {("east", "ann", 0): 12, ("east", "bob", 0): 1, ("east", "ann", 60_000): 2,
                    ("east", "bob", 120_000): 4, ("west", "ann", 0): 100, ("west", "cid", 60_000): 3}
        printed = sorted(line for line in out.splitlines() if line.startswith("total "))
        self.assertEqual(len(printed), len(expected), out)
        self.assertIn("stream user-totals: 7 messages, 6 totals, 0 dropped late", out)
        sink = self.sink("user-totals", ["east", "west"])
        got = {(p, m["key"], m["windowStart"] - self.BASE): m["value"] for p in sink for m in sink[p]}
        self.assertEqual(got, expected)
        self.assertEqual(sum(len(v) for v in sink.values()), len(expected))
        for line in printed:
            self.assertRegex(line, r"^total user=\w+ minute=\d+ sum=\d+ events=\d$")
        # A second run resumes from the committed state: the first run's final flush raised the
        # partitions' watermark to the clock (today), so events of 2026-01-01 are now late and
        # dropped, even in a minute never seen; nothing the first run wrote is written again.
        self.client.push("clicks", [{"user": "ann", "ts": self.BASE + 200_000, "amount": 9},
                                    {"user": "ann", "ts": self.BASE + 10_000, "amount": 50}], partition="east")
        out = self.run_example("stream_totals")
        self.assertIn("stream user-totals: 2 messages, 0 totals, 2 dropped late, 1 cycles", out)
        # (The first read still leases the earlier results: a pop shows only new ones.)
        self.assertEqual(self.sink("user-totals", ["east", "west"]), {"east": [], "west": []})

    def test_stream_sessions_example_counts_each_users_sessions(self):
        views = [("ann", 0), ("bob", 5_000), ("ann", 10_000), ("ann", 20_000), ("ann", 100_000), ("ann", 110_000)]
        self.client.push("views", [{"user": u, "ts": self.BASE + t} for u, t in views], partition="site")
        out = self.run_example("stream_sessions", "--gap-ms", "30000")
        expected = [("ann", 0, 50_000, 3), ("ann", 100_000, 140_000, 2), ("bob", 5_000, 35_000, 1)]
        printed = sorted(line for line in out.splitlines() if line.startswith("session "))
        self.assertEqual(printed, sorted(f"session user={u} start={self.BASE + s} end={self.BASE + e} views={n}"
                                         for u, s, e, n in expected), out)
        self.assertIn("stream sessions: 6 views, 3 sessions", out)
        sink = self.sink("sessions", ["site"])["site"]
        self.assertEqual(sorted((m["key"], m["windowStart"] - self.BASE, m["windowEnd"] - self.BASE, m["count"])
                                for m in sink), expected)
        self.run_example("stream_sessions", "--gap-ms", "0", code=2)
        self.run_example("stream_sessions", "--gap-ms", "soon", code=2)


if __name__ == "__main__":
    unittest.main()
