"""tests/integration/test_examples.py — the programs of examples/ (producer, consumer, transactional
pipeline) against a real `queen serve`, checking their counts against the broker's own.

QUEEN_EXAMPLES_DIR names the directory of the example binaries (tests/CMakeLists.txt sets it)."""
import json
import os
import subprocess
import threading
import unittest

from harness import QUEEN_BIN, ServerTestCase

EXAMPLES_DIR = os.environ.get("QUEEN_EXAMPLES_DIR", os.path.join(os.path.dirname(QUEEN_BIN), "../examples"))


def example_path(name):
    path = os.path.join(EXAMPLES_DIR, "example_" + name)
    if not os.access(path, os.X_OK):
        raise AssertionError(f"{path} is missing: build the example_{name} target (or set QUEEN_EXAMPLES_DIR)")
    return path


def consumed_lines(stdout):
    """The consumer's lines `<createdAt> <queue>/<partition> <payload>` as (partition, payload)."""
    rows = []
    for line in stdout.splitlines():
        _, path, payload = line.split(" ", 2)
        rows.append((path.split("/", 1)[1], json.loads(payload)))
    return rows


class Examples(ServerTestCase):
    def run_example(self, name, *args, code=0, timeout=180):
        out = subprocess.run([example_path(name), "--url", f"http://127.0.0.1:{self.server.port}"] + list(args),
                             capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
        self.assertEqual(out.returncode, code, f"example_{name} {' '.join(args)}:\n{out.stdout[-2000:]}\n{out.stderr}")
        return out

    def queue_detail(self, queue):
        r = self.client.get(f"/api/v1/resources/queues/{queue}")
        self.assertEqual(r.status, 200, r)
        return r.json()

    def test_producer_pushes_count_messages_across_partitions(self):
        out = self.run_example("producer", "--queue", "demo", "--count", "1000", "--batch", "64", "--partitions", "4")
        self.assertIn("queue demo: 1000 queued, 0 duplicates, 0 failed", out.stdout)
        detail = self.queue_detail("demo")
        self.assertEqual({p["name"]: p["stats"]["total"] for p in detail["partitions"]},
                         {"p-0": 250, "p-1": 250, "p-2": 250, "p-3": 250})
        self.assertEqual(detail["totals"]["pending"], 1000)
        self.run_example("producer", "--batch", "0", code=2)
        self.run_example("producer", "--count", "many", code=2)
        self.run_example("producer", "--count", code=2)
        self.assertIn("usage", self.run_example("producer", "--help").stdout)

    def test_consumer_gets_every_message_once_in_order_per_partition(self):
        self.run_example("producer", "--queue", "demo", "--count", "1000", "--batch", "100", "--partitions", "4")
        out = self.run_example("consumer", "--queue", "demo", "--batch", "10", "--limit", "1000")
        rows = consumed_lines(out.stdout)
        self.assertEqual(len(rows), 1000)
        self.assertEqual(sorted(payload["sequence"] for _, payload in rows), list(range(1000)))
        last = {}
        for partition, payload in rows:
            sequence = payload["sequence"]
            self.assertEqual(partition, f"p-{sequence % 4}")
            self.assertGreater(sequence, last.get(partition, -1), "FIFO within a partition")
            last[partition] = sequence
        self.assertIn("1000 messages (0 failed)", out.stderr)
        # Every message was acked: nothing pending or leased, nothing left to pop.
        totals = self.queue_detail("demo")["totals"]
        self.assertEqual((totals["pending"], totals["processing"], totals["completed"]), (0, 0, 1000))
        self.assertEqual(self.client.pop("demo", wait=False).status, 204)

    def test_consumer_group_and_a_failing_message_that_ends_in_the_dlq(self):
        self.client.post("/api/v1/configure", {"queue": "jobs", "options": {"retryLimit": 1, "retryDelay": 0}})
        self.client.push("jobs", [{"n": i} for i in range(5)], partition="ok")
        self.client.push("jobs", [{"n": 99, "fail": True}], partition="bad")
        # 5 good messages once, the bad one delivered retryLimit + 1 = 2 times, then dead-lettered.
        out = self.run_example("consumer", "--queue", "jobs", "--group", "workers", "--batch", "10", "--limit", "7")
        rows = consumed_lines(out.stdout)
        self.assertEqual(sorted(p["n"] for _, p in rows), [0, 1, 2, 3, 4, 99, 99])
        self.assertIn("7 messages (2 failed)", out.stderr)
        dlq = self.client.get("/api/v1/dlq?queue=jobs").json()["messages"]
        self.assertEqual([m["data"] for m in dlq], [{"n": 99, "fail": True}])
        self.assertEqual(dlq[0]["consumerGroup"], "workers")
        self.assertIn("refused message", dlq[0]["errorMessage"])
        # A consumer group does not consume for the queue mode: all 6 are still there for it.
        r = self.client.pop("jobs", batch=10, wait=False, partition="ok")
        self.assertEqual(len(r.json()["messages"]), 5)

    def test_two_pipeline_workers_move_each_input_exactly_once(self):
        self.run_example("producer", "--queue", "in", "--count", "200", "--batch", "50", "--partitions", "4")
        outputs = {}

        def worker(name):
            outputs[name] = self.run_example("pipeline", "--from", "in", "--to", "out", "--group", "stage1",
                                             "--batch", "10", "--limit", "100")

        threads = [threading.Thread(target=worker, args=(name,)) for name in ("a", "b")]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(set(outputs), {"a", "b"}, "a pipeline worker failed (see above)")
        moved = 0
        for out in outputs.values():
            for line in out.stdout.splitlines():
                self.assertTrue(line.startswith("moved "), line)
                moved += int(line.split()[1])
        self.assertEqual(moved, 200)
        # The inputs are acked for the group, and each produced exactly one output, on the same partition.
        self.assertEqual(self.client.pop("in", consumerGroup="stage1", wait=False).status, 204)
        detail = self.queue_detail("out")
        self.assertEqual({p["name"]: p["stats"]["total"] for p in detail["partitions"]},
                         {"p-0": 50, "p-1": 50, "p-2": 50, "p-3": 50})
        out = self.run_example("consumer", "--queue", "out", "--batch", "50", "--limit", "200")
        rows = consumed_lines(out.stdout)
        self.assertEqual(sorted(p["source"]["sequence"] for _, p in rows), list(range(200)))
        for partition, payload in rows:
            self.assertEqual(payload["stage"], "enriched")
            self.assertEqual(partition, f"p-{payload['source']['sequence'] % 4}")


if __name__ == "__main__":
    unittest.main()
