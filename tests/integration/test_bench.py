"""tests/integration/test_bench.py — `queen bench` workloads against a real `queen serve`: a few
hundred messages each, checking counts (never timings): every produced message is consumed exactly
once in e2e, consume and partitions; the JSON has the documented fields."""
import json
import os
import subprocess
import unittest

from harness import QUEEN_BIN, SOURCE_DIR, Server


class BenchTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = Server().start()
        cls.url = f"http://127.0.0.1:{cls.server.port}"

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()
        cls.server.cleanup()

    def bench(self, *args, expect_code=0):
        cmd = [QUEEN_BIN, "bench", *args, "--url", self.url, "--json", "--server-pid", str(self.server.process.pid)]
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        self.assertEqual(out.returncode, expect_code, f"{cmd}\nstdout: {out.stdout}\nstderr: {out.stderr}")
        if expect_code != 0:
            return out
        return json.loads(out.stdout)

    def get_json(self, path):
        client = self.server.client()
        try:
            return client.get(path).json()
        finally:
            client.close()

    def check_common(self, report, workload):
        self.assertEqual(report["workload"], workload)
        self.assertEqual(report["errors"], 0)
        for key in ("msgs_per_s", "mb_per_s", "elapsed_s"):
            self.assertGreaterEqual(report[key], 0)
        latency = report["latency_ms"]
        for key in ("p50", "p90", "p99", "p999", "max"):
            self.assertIn(key, latency)
        self.assertLessEqual(latency["p50"], latency["p99"])
        self.assertLessEqual(latency["p99"], latency["max"])
        conditions = report["conditions"]
        self.assertTrue(conditions["server_version"])
        self.assertGreaterEqual(conditions["cores"], 1)
        self.assertGreater(conditions["server_rss_bytes"], 0)

    def test_produce_pushes_exactly_the_messages_asked(self):
        report = self.bench("produce", "--queue", "b-produce", "--producers", "3", "--batch", "7",
                            "--messages", "300", "--partitions", "5", "--size", "100")
        self.check_common(report, "produce")
        self.assertEqual(report["produced"], 300)
        self.assertEqual(report["messages"], 300)
        self.assertEqual(report["bytes"], 300 * 100)
        self.assertEqual(report["latency_ms"]["count"], 43)  # ceil(300 / 7) pushes
        self.assertEqual(report["conditions"]["batch"], 7)
        self.assertEqual(report["conditions"]["partitions"], 5)
        queue = self.get_json("/api/v1/resources/queues/b-produce")
        names = {p["name"] for p in queue["partitions"]}
        self.assertEqual(names - {"Default"}, {f"p{i}" for i in range(5)})  # Default: from configure

    def test_e2e_consumes_every_produced_message_exactly_once(self):
        report = self.bench("e2e", "--queue", "b-e2e", "--producers", "2", "--consumers", "3", "--batch", "10",
                            "--messages", "400", "--partitions", "4")
        self.check_common(report, "e2e")
        self.assertEqual(report["produced"], 400)
        self.assertEqual(report["consumed"], 400)
        self.assertEqual(report["duplicates"], 0)
        self.assertEqual(report["missing"], 0)
        self.assertEqual(report["latency_ms"]["count"], 400)  # one sample per delivered message

    def test_consume_drains_the_prefilled_queue(self):
        report = self.bench("consume", "--queue", "b-consume", "--producers", "2", "--consumers", "2",
                            "--batch", "25", "--messages", "300", "--partitions", "3")
        self.check_common(report, "consume")
        self.assertEqual(report["produced"], 300)
        self.assertEqual(report["consumed"], 300)
        self.assertEqual(report["duplicates"], 0)
        self.assertEqual(report["missing"], 0)
        self.assertIn("fill_msgs_per_s", report["metrics"])

    def test_transaction_loop_moves_messages_atomically(self):
        report = self.bench("transaction", "--queue", "b-tx", "--consumers", "2", "--batch", "2",
                            "--messages", "100")
        self.check_common(report, "transaction")
        transactions = report["metrics"]["transactions"]
        self.assertGreaterEqual(transactions, 100)
        self.assertLessEqual(transactions, 101)  # each worker checks the count before its next
        self.assertEqual(report["consumed"], 2 * transactions)
        self.assertEqual(report["produced"], 2 * transactions)
        # The loop keeps one batch per worker in flight: 2 workers x 2 messages are pending.
        queue = self.get_json("/api/v1/resources/queues/b-tx")
        pending = sum(p["stats"]["pending"] + p["stats"].get("processing", 0) for p in queue["partitions"])
        self.assertEqual(pending, 4, queue)

    def test_partitions_fills_and_drains_one_message_per_partition(self):
        report = self.bench("partitions", "--queue", "b-parts", "--producers", "2", "--consumers", "2",
                            "--batch", "50", "--pop-partitions", "20", "--partitions", "300")
        self.check_common(report, "partitions")
        self.assertEqual(report["produced"], 300)
        self.assertEqual(report["consumed"], 300)
        self.assertEqual(report["missing"], 0)
        self.assertEqual(report["duplicates"], 0)
        for key in ("fill_msgs_per_s", "server_rss_after_fill_bytes", "server_rss_after_drain_bytes"):
            self.assertGreater(report["metrics"][key], 0)

    def test_profiles_run_with_overrides_and_bad_input_is_a_usage_error(self):
        profiles = os.path.join(SOURCE_DIR, "conf/bench.toml")
        report = self.bench("--profile", "push-100", "--profiles-file", profiles, "--queue", "b-profile",
                            "--messages", "200", "--producers", "2")
        self.check_common(report, "produce")
        self.assertEqual(report["profile"], "push-100")
        self.assertEqual(report["produced"], 200)
        self.assertEqual(report["conditions"]["batch"], 100)  # from the profile
        self.assertEqual(report["conditions"]["producers"], 2)  # the flag wins
        out = self.bench("--profile", "no-such", "--profiles-file", profiles, expect_code=2)
        self.assertIn("no bench profile 'no-such'", out.stderr)
        out = self.bench("e2e", "--profile", "push-100", "--profiles-file", profiles, expect_code=2)
        self.assertIn("is a produce workload", out.stderr)
        out = self.bench("produce", "--batch", "0", expect_code=2)

    def test_table_output_and_plain_progress_lines(self):
        cmd = [QUEEN_BIN, "bench", "produce", "--url", self.url, "--queue", "b-table", "--messages", "100",
               "--batch", "10"]
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("queen bench produce", out.stdout)
        self.assertIn("msgs/s", out.stdout)
        self.assertIn("p99.9", out.stdout)
        self.assertNotIn("\r", out.stderr)  # not a terminal: plain lines only


if __name__ == "__main__":
    unittest.main()
