"""tests/integration/test_examples.py — the programs of examples/ (producer, consumer, transactional
pipeline, and the one-call patterns: four-step worker, request/reply, single worker with fencing,
reminders, last-value cache, rate limit) against a real `queen serve`, checking what they print
against the broker's own reads (queue details, KV, locks, timers).

QUEEN_EXAMPLES_DIR names the directory of the example binaries (tests/CMakeLists.txt sets it)."""
import json
import os
import re
import subprocess
import threading
import unittest
from datetime import datetime, timedelta

from harness import QUEEN_BIN, ServerTestCase, seed_from_env, wait_until

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


def api_time(text):
    """An API time ("2026-12-03T10:00:01.067Z", or with six fraction digits) as a datetime."""
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


class Examples(ServerTestCase):
    def run_example(self, name, *args, code=0, timeout=180):
        out = subprocess.run([example_path(name), "--url", f"http://127.0.0.1:{self.server.port}"] + list(args),
                             capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
        self.assertEqual(out.returncode, code, f"example_{name} {' '.join(args)}:\n{out.stdout[-2000:]}\n{out.stderr}")
        return out

    def start_example(self, name, *args):
        """The example as a running process (stdout and stderr piped, as text)."""
        return subprocess.Popen([example_path(name), "--url", f"http://127.0.0.1:{self.server.port}"] + list(args),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)

    def finish_example(self, process, code=0, timeout=180):
        stdout, stderr = process.communicate(timeout=timeout)
        self.assertEqual(process.returncode, code, f"{' '.join(process.args)}:\n{stdout[-2000:]}\n{stderr}")
        return stdout

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

    def test_four_step_worker_acks_records_pushes_and_reminds_in_one_transaction(self):
        out = self.run_example("four_step_worker", "--count", "12", "--reminder-ms", "600000")
        self.assertIn("processed 12 orders", out.stdout)
        orders = [f"order-{i}" for i in range(1, 13)]
        # Step 1: every order message acked.
        totals = self.queue_detail("orders")["totals"]
        self.assertEqual((totals["pending"], totals["processing"], totals["completed"]), (0, 0, 12))
        # Step 3: one "shipped" event per order on the next queue.
        shipped = self.client.pop("shipping", batch=100, wait=False).json()["messages"]
        events = {m["transactionId"]: m for m in shipped}
        self.assertEqual(sorted(m["data"]["order"] for m in shipped), list(range(1, 13)))
        # Step 2: one KV record per order, naming its event.
        records = {k["key"]: k for k in self.client.get("/api/v1/kv/orders?limit=1000").json()["keys"]}
        self.assertEqual(sorted(records), sorted(orders))
        # Step 4: one pending reminder per order.
        timers = {t["id"]: t for t in self.client.get("/api/v1/timers?limit=1000").json()["timers"]}
        self.assertEqual(set(timers), {"remind-" + key for key in orders})
        for key, record in records.items():
            order = int(key.split("-")[1])
            self.assertEqual(record["value"]["order"], order)
            self.assertEqual(record["value"]["state"], "shipped")
            event = events[record["value"]["event"]]
            self.assertEqual(event["data"], {"order": order, "event": "shipped"})
            timer = self.client.get(f"/api/v1/timers/remind-{key}").json()
            self.assertEqual((timer["queue"], timer["payload"]), ("reminders", {"order": order, "remind": "delivery"}))
            # One transaction is one log entry with one time: the record, the event and the timer
            # were all made at that instant, and the reminder is due reminder-ms after it.
            self.assertEqual(api_time(timer["createdAt"]), api_time(record["updatedAt"]))
            self.assertEqual(api_time(event["createdAt"]), api_time(record["updatedAt"]))
            self.assertEqual(api_time(timer["dueAt"]) - api_time(timer["createdAt"]), timedelta(milliseconds=600000))

        # Orders 1-3 again, with reminders that fire: the records move on by compare-and-set
        # (newer versions), the reminders are replaced, fire, and are gone; the others stay.
        out = self.run_example("four_step_worker", "--count", "3", "--reminder-ms", "50")
        self.assertIn("processed 3 orders", out.stdout)
        for key in orders[:3]:
            record = self.client.get(f"/api/v1/kv/orders/{key}").json()
            self.assertGreater(record["version"], records[key]["version"])
        wait_until(lambda: self.client.get("/api/v1/resources/queues/reminders").status == 200
                   and self.queue_detail("reminders")["totals"]["total"] == 3, what="three reminders fired")
        fired = self.client.pop("reminders", batch=10, wait=False).json()["messages"]
        self.assertEqual(sorted(m["data"]["order"] for m in fired), [1, 2, 3])
        timers = {t["id"] for t in self.client.get("/api/v1/timers?limit=1000").json()["timers"]}
        self.assertEqual(timers, {"remind-" + key for key in orders[3:]})
        self.assertEqual(self.queue_detail("orders")["totals"]["completed"], 15)
        self.run_example("four_step_worker", "--count", "-1", code=2)
        self.assertIn("usage", self.run_example("four_step_worker", "--help").stdout)

    def test_request_reply_worker_answers_every_request_in_the_ack_transaction(self):
        worker = self.start_example("request_reply", "--role", "worker")
        try:
            out = self.run_example("request_reply", "--role", "requester", "--count", "20")
        finally:
            worker.terminate()  # SIGTERM: the worker stops its consumer and exits 0
        self.assertIn("served 20 requests", self.finish_example(worker, timeout=30))
        lines = out.stdout.splitlines()
        self.assertEqual(lines[-1], "20 requests: 20 replies, 0 wrong, 0 failed")
        replies = [re.fullmatch(r'request (\{.*\}) -> reply (\{.*\})', line) for line in lines[:-1]]
        self.assertEqual(len(replies), 20)
        for i, match in enumerate(replies, 1):
            self.assertIsNotNone(match, lines[i - 1])
            self.assertEqual(json.loads(match.group(1)), {"add": [i, i * i]})
            self.assertEqual(json.loads(match.group(2)), {"sum": i + i * i})
        # Every request acked; each got its own reply queue, whose one reply the broker took.
        totals = self.queue_detail("rpc.add")["totals"]
        self.assertEqual((totals["pending"], totals["processing"], totals["completed"]), (0, 0, 20))
        reply_queues = [q for q in self.client.get("/api/v1/resources/queues").json()["queues"]
                        if q["name"].startswith("reply.")]
        self.assertEqual(len(reply_queues), 20)
        for queue in reply_queues:
            self.assertEqual((queue["messages"]["total"], queue["messages"]["pending"]), (1, 0), queue)

    def test_request_reply_requester_without_a_worker_times_out(self):
        out = self.run_example("request_reply", "--role", "requester", "--count", "1", "--timeout-ms", "200", code=1)
        self.assertIn("0 replies, 0 wrong, 1 failed", out.stdout)
        self.assertIn("no reply to request", out.stdout)
        self.assertEqual(self.queue_detail("rpc.add")["totals"]["pending"], 1)  # still there for a worker
        self.run_example("request_reply", "--role", "server", code=2)
        self.run_example("request_reply", code=2)

    def ledger_events(self):
        r = self.client.get("/api/v1/kv/single_worker/ledger")
        self.assertEqual(r.status, 200, r)
        return r.json()["value"]["events"]

    def test_single_worker_instances_never_interleave_their_guarded_writes(self):
        workers = [self.start_example("single_worker", "--owner", name, "--rounds", "4", "--work-ms", "10")
                   for name in ("a", "b", "c")]
        for worker in workers:
            self.finish_example(worker)
        events = self.ledger_events()
        self.assertEqual(len(events), 24)
        # Each unit of work is a begin and an end of one grant, nothing of another between them,
        # and every grant's fencing token is larger than the one before.
        tokens = []
        for begin, end in zip(events[0::2], events[1::2]):
            self.assertEqual((begin["step"], end["step"]), ("begin", "end"), events)
            self.assertEqual((begin["token"], begin["owner"]), (end["token"], end["owner"]), events)
            tokens.append(begin["token"])
        self.assertEqual(tokens, sorted(set(tokens)), "tokens strictly increase")
        owners = [begin["owner"] for begin in events[0::2]]
        self.assertEqual({name: owners.count(name) for name in "abc"}, {"a": 4, "b": 4, "c": 4})
        self.assertEqual(self.client.get("/api/v1/locks/ledger").status, 404, "released with the last write")

    def test_single_worker_stale_token_write_is_refused(self):
        out = self.run_example("single_worker", "--owner", "w", "--stale-demo", "1")
        match = re.match(r"stale token (\d+) \(w-slow\): refused, .*conflict; current token (\d+) \(w-fast\)", out.stdout)
        self.assertIsNotNone(match, out.stdout)
        stale, current = int(match.group(1)), int(match.group(2))
        self.assertGreater(current, stale)
        # Only the current holder's writes are in the ledger; it released the lock with its last one.
        self.assertEqual([(e["token"], e["owner"], e["step"]) for e in self.ledger_events()],
                         [(current, "w-fast", "begin"), (current, "w-fast", "end")])
        self.assertEqual(self.client.get("/api/v1/locks/ledger").status, 404)

    def test_reminders_arrive_never_early_and_the_repeating_timer_is_cancelled(self):
        out = self.run_example("reminders", "--queue", "reminders", "--delay-ms", "400", "--interval-ms", "150",
                               "--repeats", "3")
        lines = out.stdout.splitlines()
        setup = re.fullmatch(r"run (\w+): delayed message due (\S+), once-\w+ due (\S+), every-\w+ from (\S+) every 150 ms",
                             lines[0])
        self.assertIsNotNone(setup, lines[0])
        tag, delayed_due, once_due, first_tick = setup.group(1), *(api_time(setup.group(i)) for i in (2, 3, 4))
        self.assertEqual(lines[-1], "delayed 1, one-shot 1, repeating 3 then cancelled, 0 early")
        # The program's own measurement: delivered and received at or after the due time.
        arrivals = [re.search(r"delivered ([-+][\d.]+) ms, received ([-+][\d.]+) ms", line) for line in lines[1:-1]]
        self.assertEqual(len(arrivals), 5, lines)
        for arrival in arrivals:
            self.assertGreaterEqual(min(float(arrival.group(1)), float(arrival.group(2))), 0.0)
        # The broker's own: every message it delivered is at or after its due time (createdAt is
        # the delivery's time), and the repeating timer fired at least the 3 times before it went.
        messages = self.client.get("/api/v1/messages?queue=reminders&limit=100").json()["messages"]
        ticks = 0
        for message in messages:
            created, tid = api_time(message["createdAt"]), message["transactionId"]
            if tid == f"once-{tag}#1":
                self.assertGreaterEqual(created, once_due)
            elif tid.startswith(f"every-{tag}#"):
                ticks += 1
                n = int(tid.split("#")[1])
                self.assertGreaterEqual(created, first_tick + (n - 1) * timedelta(milliseconds=150))
            else:
                self.assertGreaterEqual(created, delayed_due)
        self.assertGreaterEqual(ticks, 3)
        self.assertEqual(len(messages), ticks + 2)
        # Both timers are gone: the one-shot fired, the repeating one was cancelled.
        for timer in (f"once-{tag}", f"every-{tag}"):
            self.assertEqual(self.client.get(f"/api/v1/timers/{timer}").status, 404)
        self.assertEqual(self.client.get("/api/v1/timers").json()["timers"], [])
        self.run_example("reminders", "--interval-ms", "5", code=2)

    def test_last_value_cache_keeps_the_newest_tick_and_lists_every_key_once(self):
        seed = str(seed_from_env())
        # Two redundant producers replay one feed at the same time: compare-and-set keeps every
        # key at the newest tick, and no tick is written twice.
        producers = [self.start_example("last_value", "--role", "producer", "--symbols", "20", "--ticks", "300",
                                        "--seed", seed) for _ in range(2)]
        outputs = [self.finish_example(p) for p in producers]
        last = [{m.group(1): (int(m.group(2)), int(m.group(3)))
                 for m in re.finditer(r"^last (\S+) seq=(\d+) cents=(-?\d+)$", out, re.M)} for out in outputs]
        self.assertEqual(last[0], last[1], "the same feed")
        counts = [re.search(r"(\d+) written, \d+ skipped as older, (\d+) conflicts", out) for out in outputs]
        self.assertLessEqual(sum(int(c.group(1)) for c in counts), 300)
        self.assertGreaterEqual(sum(int(c.group(1)) for c in counts), len(last[0]))
        # Whichever producer created a key first, the other's first write of it expected the key
        # to be absent: at least one conflict per key.
        self.assertGreaterEqual(sum(int(c.group(2)) for c in counts), len(last[0]))
        self.client.put("/api/v1/kv/prices/OTHER", {"not": "listed"})  # outside the prefix
        for symbol, (seq, cents) in last[0].items():
            value = self.client.get(f"/api/v1/kv/prices/{symbol}").json()["value"]
            self.assertEqual(value, {"symbol": symbol, "seq": seq, "cents": cents})
        out = self.run_example("last_value", "--role", "reader", "--page", "7").stdout
        listed = re.findall(r"^page (\d+): (\S+) (\{.*\}) version \d+$", out, re.M)
        self.assertEqual([key for _, key, _ in listed], sorted(last[0]), "every key once, in order")
        for page, key, value in listed:
            self.assertEqual(json.loads(value)["seq"], last[0][key][0])
        pages = (len(last[0]) + 6) // 7
        self.assertEqual([int(page) for page, _, _ in listed], [i // 7 + 1 for i in range(len(listed))])
        self.assertIn(f"listed {len(last[0])} keys with prefix SYM in {pages} pages", out)
        self.run_example("last_value", "--role", "reader", "--page", "0", code=2)

    def test_rate_limit_allows_at_most_the_limit_per_window_and_its_keys_expire(self):
        limiters = [self.start_example("rate_limit", "--client", "alice", "--limit", "4", "--window-ms", "500",
                                       "--ttl-ms", "3000", "--attempts", "20", "--interval-ms", "30")
                    for _ in range(2)]
        outputs = [self.finish_example(p) for p in limiters]
        allowed, denied = {}, {}
        for out in outputs:
            for key, n, refused in re.findall(r"^window (\S+): (\d+) allowed, (\d+) denied$", out, re.M):
                allowed[key] = allowed.get(key, 0) + int(n)
                denied[key] = denied.get(key, 0) + int(refused)
            self.assertRegex(out, r"20 attempts: \d+ allowed, \d+ denied in \d+ windows \(limit 4 per 500 ms\)")
        self.assertTrue(allowed)
        for key, n in allowed.items():
            self.assertLessEqual(n, 4, f"window {key}: both instances together stay within the limit")
            if denied[key]:
                self.assertEqual(n, 4, f"window {key}: denied only once the limit was reached")
        # The counters the broker holds are the allowed attempts, and each carries a TTL.
        stored = {k["key"]: k for k in self.client.get("/api/v1/kv/ratelimit?limit=1000").json()["keys"]}
        self.assertTrue(stored, "the counters of the last windows still exist")
        for key, record in stored.items():
            self.assertEqual(record["value"], {"count": allowed[key]})
            self.assertIsNotNone(record["expiresAt"])
        wait_until(lambda: self.client.get("/api/v1/kv/ratelimit").json()["keys"] == [], timeout=30,
                   interval=0.1, what="the window counters expire")
        self.run_example("rate_limit", "--window-ms", "1000", "--ttl-ms", "500", code=2)


if __name__ == "__main__":
    unittest.main()
