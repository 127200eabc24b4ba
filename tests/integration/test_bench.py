"""tests/integration/test_bench.py — `queen bench` workloads against a real `queen serve`: a few
hundred messages each, checking counts (never timings): every produced message is consumed exactly
once in e2e, consume and partitions; the JSON has the documented fields."""
import json
import os
import re
import subprocess
import tempfile
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
        self.assertEqual(report["error_samples"], [])
        for key in ("msgs_per_s", "mb_per_s", "elapsed_s"):
            self.assertGreaterEqual(report[key], 0)
        latency = report["latency_ms"]
        for key in ("p50", "p90", "p99", "p999", "max"):
            self.assertIn(key, latency)
        self.assertLessEqual(latency["p50"], latency["p99"])
        self.assertLessEqual(latency["p99"], latency["max"])
        # CPU per message over the measured phase: the server's from /proc/<pid>/stat (in clock
        # ticks, so a short run may show 0), the bench's own from getrusage.
        metrics = report["metrics"]
        self.assertGreaterEqual(metrics["server_cpu_us_per_msg"], 0)
        self.assertGreater(metrics["bench_cpu_us_per_msg"], 0)
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

    def test_paced_e2e_stamps_due_times_and_reports_target_and_lag(self):
        # 2,000 msgs/s for 300 messages: about 0.15 s of schedule; counts only, no timings.
        report = self.bench("e2e", "--queue", "b-e2e-paced", "--producers", "2", "--consumers", "2",
                            "--batch", "10", "--messages", "300", "--partitions", "3", "--rate", "2000")
        self.check_common(report, "e2e")
        self.assertEqual(report["produced"], 300)
        self.assertEqual(report["consumed"], 300)
        self.assertEqual(report["duplicates"], 0)
        self.assertEqual(report["missing"], 0)
        self.assertEqual(report["target_msgs_per_s"], 2000)
        self.assertGreater(report["produce_msgs_per_s"], 0)
        self.assertIn("due time", report["latency_ms"]["of"])
        for key in ("consumer_lag_msgs_at_produce_end", "drain_after_produce_s", "behind_schedule_ms_max"):
            self.assertIn(key, report["metrics"])
        self.assertLessEqual(report["metrics"]["consumer_lag_msgs_at_produce_end"], 300)
        # Paced produce: every message is still pushed exactly once.
        report = self.bench("produce", "--queue", "b-produce-paced", "--producers", "2", "--batch", "10",
                            "--messages", "200", "--rate", "5000")
        self.check_common(report, "produce")
        self.assertEqual(report["produced"], 200)
        self.assertEqual(report["latency_ms"]["count"], 20)
        self.assertEqual(report["target_msgs_per_s"], 5000)
        # A rate only makes sense where producers run.
        out = self.bench("transaction", "--rate", "100", expect_code=2)
        self.assertIn("rate applies to the produce, e2e, lanes and stream workloads only", out.stderr)

    def test_unpaced_e2e_says_its_latency_includes_the_backlog(self):
        report = self.bench("e2e", "--queue", "b-e2e-unpaced", "--messages", "100", "--batch", "10")
        self.assertEqual(report["consumed"], 100)
        self.assertEqual(report["target_msgs_per_s"], 0)
        self.assertIn("backlog", report["latency_ms"]["of"])

    def test_consume_drains_the_prefilled_queue(self):
        report = self.bench("consume", "--queue", "b-consume", "--producers", "2", "--consumers", "2",
                            "--batch", "25", "--messages", "300", "--partitions", "3")
        self.check_common(report, "consume")
        self.assertEqual(report["produced"], 300)
        self.assertEqual(report["consumed"], 300)
        self.assertEqual(report["duplicates"], 0)
        self.assertEqual(report["missing"], 0)
        self.assertIn("fill_msgs_per_s", report["metrics"])

    def check_transaction_counts(self, queue_name, workers, batch, transactions, pipelined=False, steps=None,
                                 extra=()):
        report = self.bench("transaction", "--queue", queue_name, "--consumers", str(workers), "--batch",
                            str(batch), "--messages", str(transactions), *(["--pipeline"] if pipelined else []),
                            *(["--steps", steps] if steps else []), *extra)
        self.check_common(report, "transaction")
        self.assertEqual(report["conditions"]["pipelined"], pipelined)
        # Workers claim a transaction after their pop, so the count is exact at any concurrency.
        self.assertEqual(report["metrics"]["transactions"], transactions)
        self.assertEqual(report["consumed"], batch * transactions)
        self.assertEqual(report["produced"], batch * transactions)
        # The loop keeps one batch per worker in flight: workers x batch messages are not done
        # (pending, or still leased by a worker that popped after the count was reached), and
        # every message a transaction acked is completed.
        queue = self.get_json(f"/api/v1/resources/queues/{queue_name}")
        partitions = [p for p in queue["partitions"] if p["name"] != "Default"]
        self.assertEqual(len(partitions), workers)
        if "--consumer-group" in extra:
            # The group's own cursor: it consumed every acked message, workers x batch are left.
            group = extra[list(extra).index("--consumer-group") + 1]
            found = [g for g in self.get_json("/api/v1/consumer-groups")
                     if g["name"] == group and g["queueName"] == queue_name]
            self.assertEqual(len(found), 1, found)
            self.assertEqual(found[0]["totalLag"], workers * batch, found)
            self.assertEqual(sum(p["stats"]["total"] for p in partitions), batch * (transactions + workers))
            return report
        for p in partitions:
            stats = p["stats"]
            self.assertEqual(stats["total"] - stats["completed"], batch, p)
        completed = sum(p["stats"].get("completed", 0) for p in partitions)
        self.assertEqual(completed, batch * transactions, queue)
        return report

    def prometheus_counter(self, name):
        client = self.server.client()
        try:
            text = client.get("/metrics/prometheus").body
        finally:
            client.close()
        m = re.search(rf"^{name} ([0-9.e+]+)$", text, re.M)
        self.assertIsNotNone(m, f"{name} not in /metrics/prometheus")
        return float(m.group(1))

    def test_transaction_loop_moves_messages_atomically(self):
        self.check_transaction_counts("b-tx", workers=2, batch=2, transactions=100)

    def test_transaction_loop_stays_exact_with_64_workers(self):
        self.check_transaction_counts("b-tx-64", workers=64, batch=1, transactions=500)

    def test_pipelined_transaction_loop_stays_exact(self):
        # Each pop travels right behind the transaction that pushed what it pops.
        self.check_transaction_counts("b-tx-pipe", workers=2, batch=3, transactions=100, pipelined=True)
        self.check_transaction_counts("b-tx-pipe-64", workers=64, batch=1, transactions=500, pipelined=True)
        out = self.bench("e2e", "--pipeline", expect_code=2)
        self.assertIn("pipelining applies to the transaction workload only", out.stderr)

    def test_one_call_and_four_requests_loops_stay_exact(self):
        report = self.check_transaction_counts("b-tx-one", workers=2, batch=2, transactions=50, steps="one-call")
        self.assertEqual(report["latency_ms"]["of"], "pop + transaction (ack, kv.set, push, timer.set)")
        # With a consumer group named, the workers pop as that group and each ack carries the
        # group its message was popped for (a batch-wide group once made every ack fail its
        # lease, and the run ended at its time bound with no error counted).
        report = self.check_transaction_counts("b-tx-four", workers=2, batch=2, transactions=30,
                                               steps="four-requests", extra=("--consumer-group", "g"))
        self.assertIn("(five requests)", report["latency_ms"]["of"])

    def test_one_call_next_loop_is_one_request_and_stays_exact(self):
        # The transaction pops the worker's next batch itself (its "next", in the same entry as the
        # push of that batch): after each worker's first waiting pop, a loop is one request.
        for queue_name, workers, batch, transactions in (("b-tx-next", 2, 3, 100), ("b-tx-next-64", 64, 1, 500)):
            pops = self.prometheus_counter("queen_pop_requests_total")
            committed = self.prometheus_counter("queen_transactions_total")
            state_version = self.get_json("/api/v1/kv/bench/t0").get("version", 0)  # 0: absent (404)
            report = self.check_transaction_counts(queue_name, workers, batch, transactions, steps="one-call-next")
            self.assertIn("one request a loop", report["latency_ms"]["of"])
            self.assertEqual(report["latency_ms"]["count"], transactions)
            # Every next pop found the batch its own transaction pushed: no worker fell back.
            self.assertEqual(report["metrics"]["empty_next_pops"], 0)
            self.assertEqual(report["metrics"]["empty_pops"], 0)
            self.assertLessEqual(self.prometheus_counter("queen_pop_requests_total") - pops, workers)
            self.assertEqual(self.prometheus_counter("queen_transactions_total") - committed, transactions)
            # The four steps ran: each worker's state key and its reminder timer exist.
            state = self.get_json("/api/v1/kv/bench/t0")
            self.assertGreater(state["version"], state_version)
            self.assertIn("seq", state["value"])
            self.assertEqual(self.get_json("/api/v1/timers/bench-t0")["queue"], f"{queue_name}-reminders")
        # The next pop replaces the pipelined one; four requests have no transaction to follow.
        for steps in ("one-call-next", "four-requests"):
            out = self.bench("transaction", "--steps", steps, "--pipeline", expect_code=2)
            self.assertIn(f"pipelining applies to the steps ack-push and one-call only, not {steps}", out.stderr)
        out = self.bench("e2e", "--steps", "one-call-next", expect_code=2)
        self.assertIn("steps apply to the transaction workload only", out.stderr)
        out = self.bench("transaction", "--steps", "one-call-after", expect_code=2)
        self.assertIn("unknown steps 'one-call-after' (ack-push, one-call, four-requests, one-call-next, stream-cycle, "
                      "ack-kv-push)", out.stderr)

    def test_several_steps_run_in_turn_and_compare(self):
        # The one call against four requests in one run: each steps' own report, then the ratio.
        cmd = [QUEEN_BIN, "bench", "transaction", "--steps", "one-call-next,four-requests", "--queue", "b-cmp",
               "--consumers", "2", "--messages", "40", "--url", self.url, "--json",
               "--server-pid", str(self.server.process.pid)]
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        self.assertEqual(out.returncode, 0, out.stderr)
        lines = out.stdout.strip().split("\n")
        self.assertEqual(len(lines), 3, out.stdout)
        runs = [json.loads(line) for line in lines[:2]]
        for report, of in zip(runs, ("one request a loop", "(five requests)")):
            self.check_common(report, "transaction")
            self.assertEqual(report["metrics"]["transactions"], 40)
            self.assertIn(of, report["latency_ms"]["of"])
        compare = json.loads(lines[2])
        self.assertEqual([r["name"] for r in compare["compare"]], ["one-call-next", "four-requests"])
        rates = [r["metrics"]["transactions_per_s"] for r in runs]
        self.assertEqual([r["per_s"] for r in compare["compare"]], rates)
        self.assertAlmostEqual(compare["ratios"]["one-call-next/four-requests"], rates[0] / rates[1])
        # Every name is checked before anything runs.
        out = self.bench("transaction", "--steps", "one-call-next,four-request", "--queue", "b-cmp-bad",
                         expect_code=2)
        self.assertIn("unknown steps 'four-request'", out.stderr)
        self.assertEqual(self.server.client().get("/api/v1/resources/queues/b-cmp-bad").status, 404)
        out = self.bench("e2e", "--steps", "one-call,ack-push", expect_code=2)
        self.assertIn("several --steps apply to the transaction workload only", out.stderr)

    def test_stream_cycle_and_its_transaction_run_in_turn_and_compare(self):
        # A streams cycle (ack + state upsert + push in one POST /streams/v1/cycle) against the
        # transaction of the same three effects, in one run.
        cmd = [QUEEN_BIN, "bench", "transaction", "--steps", "stream-cycle,ack-kv-push", "--queue", "b-cyc",
               "--consumers", "2", "--batch", "3", "--messages", "40", "--url", self.url, "--json",
               "--server-pid", str(self.server.process.pid)]
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        self.assertEqual(out.returncode, 0, out.stderr)
        lines = out.stdout.strip().split("\n")
        self.assertEqual(len(lines), 3, out.stdout)
        runs = [json.loads(line) for line in lines[:2]]
        for report, of in zip(runs, ("streams cycle (ack of the last message, state upsert, push)",
                                     "transaction (ack, kv.set, push)")):
            self.check_common(report, "transaction")
            self.assertEqual(report["metrics"]["transactions"], 40)
            self.assertEqual(report["consumed"], 3 * 40)
            self.assertEqual(report["produced"], 3 * 40)
            self.assertIn(of, report["latency_ms"]["of"])
        compare = json.loads(lines[2])
        self.assertEqual([r["name"] for r in compare["compare"]], ["stream-cycle", "ack-kv-push"])
        self.assertIn("stream-cycle/ack-kv-push", compare["ratios"])
        # The cycles wrote one state row per worker (its partition) under the query the run
        # registered; the transactions the same 64-byte value as a KV key per worker.
        query = self.get_json("/api/v1/streams/queries/b-cyc-cycle")
        self.assertEqual(query["source_queue"], "b-cyc")
        self.assertEqual(query["rows"], 2)
        self.assertEqual(len(query["partitions"]), 2)
        state = self.get_json("/api/v1/kv/bench/t0")
        self.assertEqual(len(json.dumps(state["value"], separators=(",", ":"))), 64)
        # Both popped as the default group: the last run's cursor has each worker's batch left
        # (a cycle's one ack of the batch's last message moved it past the whole batch).
        found = [g for g in self.get_json("/api/v1/consumer-groups")
                 if g["name"] == "bench-streams" and g["queueName"] == "b-cyc"]
        self.assertEqual(len(found), 1, found)
        self.assertEqual(found[0]["totalLag"], 2 * 3)
        for steps in ("stream-cycle", "ack-kv-push"):
            out = self.bench("transaction", "--steps", steps, "--pipeline", expect_code=2)
            self.assertIn(f"pipelining applies to the steps ack-push and one-call only, not {steps}", out.stderr)

    def check_stream(self, report, runners):
        self.check_common(report, "stream")
        metrics = report["metrics"]
        self.assertGreater(report["produced"], 0)
        # Every event pushed was acked by a committed cycle, and the broker agrees (lag 0).
        self.assertEqual(report["consumed"], report["produced"])
        self.assertEqual(report["messages"], report["produced"])
        self.assertEqual(metrics["lag_after_drain"], 0)
        self.assertTrue(report["check"]["passed"], report["check"])
        self.assertGreater(metrics["cycles"], 0)
        self.assertGreater(metrics["events_per_cycle"], 0)
        self.assertLessEqual(metrics["events_per_cycle"], report["conditions"]["batch"])
        self.assertEqual(metrics["late_dropped"], 0)  # event time never goes back in a partition
        self.assertEqual(report["conditions"]["consumers"], runners)
        for key in ("cycles_per_s", "window_results", "cycles_failed", "retries", "produce_msgs_per_s"):
            self.assertIn(key, metrics)

    def test_stream_run_with_verify_counts_every_event_in_a_window(self):
        report = self.bench("stream", "--queue", "b-stream", "--partitions", "20", "--producers", "2",
                            "--consumers", "1", "--batch", "10", "--duration", "2", "--window-ms", "200",
                            "--rate", "5000", "--verify")  # paced: one runner keeps up, no long drain
        self.check_stream(report, runners=1)
        metrics = report["metrics"]
        # Each event is counted once: in a window the runner emitted or in an open window's row.
        self.assertEqual(metrics["verify_emitted_count"] + metrics["verify_open_count"], report["produced"])
        self.assertIn("== " + str(report["produced"]) + " events pushed", report["check"]["what"])
        # The runner's query, under its SDK group, with the open windows in the rows.
        query = self.get_json("/api/v1/streams/queries/b-stream-windows")
        self.assertEqual(query["lag"], 0)
        self.assertEqual(query["sink_queue"], "b-stream-windows")
        self.assertGreater(query["rows"], 0)

    def test_stream_run_with_several_runners_acks_every_event(self):
        # Runners share the partitions through their consumer group (no --verify here: see
        # docs/benchmarks.md, a partition moving between runners loses window counts).
        report = self.bench("stream", "--queue", "b-stream-3", "--partitions", "6", "--producers", "3",
                            "--consumers", "3", "--batch", "5", "--messages", "600")
        self.check_stream(report, runners=3)
        self.assertEqual(report["produced"], 600)
        self.assertNotIn("verify_emitted_count", report["metrics"])
        # Bad input is a usage error before anything runs.
        out = self.bench("stream", "--queue", "b-stream-bad", "--partitions", "2", "--producers", "3", expect_code=2)
        self.assertIn("producers must not exceed partitions", out.stderr)
        out = self.bench("e2e", "--verify", expect_code=2)
        self.assertIn("verify applies to the stream workload only", out.stderr)
        out = self.bench("e2e", "--window-ms", "5", expect_code=2)
        self.assertIn("--window-ms applies to the stream workload only", out.stderr)
        client = self.server.client()
        try:
            self.assertEqual(client.get("/api/v1/resources/queues/b-stream-bad").status, 404)
        finally:
            client.close()

    def check_lanes(self, report, lanes, producers, consumers, messages, pop_partitions, seed):
        self.check_common(report, "lanes")
        self.assertEqual(report["produced"], messages)
        self.assertEqual(report["consumed"], messages)
        self.assertEqual(report["messages"], messages)
        self.assertEqual(report["latency_ms"]["count"], messages)  # one sample per delivery
        # Per-lane order, checked by the readers on every delivery: nothing out of order, no
        # sequence skipped, nothing left undelivered.
        self.assertEqual(report["metrics"]["order_violations"], 0)
        self.assertEqual(report["metrics"]["gaps"], 0)
        self.assertEqual(report["missing"], 0)
        self.assertTrue(report["check"]["passed"], report["check"])
        self.assertIn(f"over {lanes} lanes: 0 order violations, 0 gaps, 0 missing of {messages} produced",
                      report["check"]["what"])
        for key in ("consumer_lag_msgs_at_produce_end", "drain_after_produce_s", "produce_msgs_per_s"):
            self.assertIn(key, report["metrics"])
        conditions = report["conditions"]
        self.assertEqual(conditions["partitions"], lanes)
        self.assertEqual(conditions["producers"], producers)
        self.assertEqual(conditions["consumers"], consumers)
        self.assertEqual(conditions["pop_partitions"], pop_partitions)
        self.assertEqual(conditions["seed"], seed)

    def lane_partitions(self, queue_name):
        queue = self.get_json(f"/api/v1/resources/queues/{queue_name}")
        return {p["name"] for p in queue["partitions"]} - {"Default"}

    def test_lanes_deliver_every_message_once_in_each_lanes_order(self):
        # 200 lanes over 2 producers (lanes 0-99 and 100-199), 3 consumers popping one
        # partition at a time (the default), as the peers' one-reader-per-lane runs.
        report = self.bench("lanes", "--queue", "b-lanes", "--partitions", "200", "--producers", "2",
                            "--consumers", "3", "--batch", "10", "--messages", "3000", "--seed", "42")
        self.check_lanes(report, lanes=200, producers=2, consumers=3, messages=3000, pop_partitions=1,
                         seed=42)
        self.assertIn("backlog", report["latency_ms"]["of"])  # unpaced
        # Every message went to a lane's partition l<index>.
        names = self.lane_partitions("b-lanes")
        self.assertTrue(names)
        self.assertLessEqual(names, {f"l{i}" for i in range(200)})

    def test_paced_lanes_with_multi_partition_pops_on_two_driver_threads(self):
        # Pops claiming up to 8 lanes under one lease, consumers on two event-loop threads (the
        # checker is shared between them); paced, so latency counts from the due time.
        report = self.bench("lanes", "--queue", "b-lanes-paced", "--partitions", "50", "--producers", "3",
                            "--consumers", "4", "--batch", "20", "--messages", "2000", "--rate", "20000",
                            "--pop-partitions", "8", "--driver-threads", "2")
        self.check_lanes(report, lanes=50, producers=3, consumers=4, messages=2000, pop_partitions=8,
                         seed=report["conditions"]["seed"])  # drawn: printed, any value
        self.assertIsInstance(report["conditions"]["seed"], int)
        self.assertEqual(report["target_msgs_per_s"], 20000)
        self.assertIn("due time", report["latency_ms"]["of"])
        self.assertLessEqual(self.lane_partitions("b-lanes-paced"), {f"l{i}" for i in range(50)})

    def test_lanes_flags_are_checked(self):
        out = self.bench("lanes", "--queue", "b-lanes-bad", "--partitions", "2", "--producers", "3", expect_code=2)
        self.assertIn("lanes: producers must not exceed partitions", out.stderr)
        out = self.bench("e2e", "--queue", "b-lanes-bad", "--seed", "1", expect_code=2)
        self.assertIn("--seed applies to the lanes workload only", out.stderr)
        client = self.server.client()
        try:
            self.assertEqual(client.get("/api/v1/resources/queues/b-lanes-bad").status, 404)
        finally:
            client.close()

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

    def test_progress_line_shows_the_largest_latency_of_its_second(self):
        cmd = [QUEEN_BIN, "bench", "produce", "--url", self.url, "--queue", "b-progress", "--duration", "1.6",
               "--batch", "10", "--producers", "2"]
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        self.assertEqual(out.returncode, 0, out.stderr)
        lines = [line for line in out.stderr.splitlines() if "] run " in line]
        self.assertTrue(lines, out.stderr)  # the run lasts past the first progress line
        maxima = [float(m.group(1)) for m in (re.search(r"max latency ([0-9.]+) ms$", line) for line in lines) if m]
        self.assertEqual(len(maxima), len(lines), out.stderr)
        self.assertGreater(maxima[0], 0.0, out.stderr)  # pushes completed in that second


class BenchErrorTest(unittest.TestCase):
    """A run whose requests fail says why: each kind of error with its count, in the JSON and the
    table (a server that refuses bodies over 4 KiB, so pushes of 10 x 1,000 bytes get 413)."""

    @classmethod
    def setUpClass(cls):
        cls.server = Server(settings={"http.body_size_bytes_max": "4096"}).start()
        cls.url = f"http://127.0.0.1:{cls.server.port}"

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()
        cls.server.cleanup()

    def run_bench(self, *args):
        cmd = [QUEEN_BIN, "bench", "produce", "--url", self.url, "--queue", "b-errors", *args]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=300)

    def test_errors_are_counted_and_described(self):
        out = self.run_bench("--messages", "50", "--batch", "10", "--size", "1000", "--producers", "2", "--json")
        self.assertEqual(out.returncode, 1, out.stderr)  # a run with errors fails
        report = json.loads(out.stdout)
        self.assertEqual(report["produced"], 0)
        self.assertGreater(report["errors"], 0)
        samples = report["error_samples"]
        self.assertEqual(len(samples), 1, samples)  # one kind: every push was refused the same way
        self.assertEqual(samples[0]["count"], report["errors"])
        self.assertTrue(samples[0]["error"].startswith("push: "), samples)
        self.assertIn("413", samples[0]["error"])
        self.assertIn("4096", samples[0]["error"])
        out = self.run_bench("--messages", "50", "--batch", "10", "--size", "1000", "--producers", "2")
        self.assertEqual(out.returncode, 1, out.stderr)
        self.assertRegex(out.stdout, r"\n {20,}\d+ x push: .*413")
        # Small pushes to the same server go through: the errors came from the size alone.
        out = self.run_bench("--messages", "50", "--batch", "10", "--size", "100", "--json")
        self.assertEqual(out.returncode, 0, out.stderr)
        report = json.loads(out.stdout)
        self.assertEqual((report["produced"], report["errors"], report["error_samples"]), (50, 0, []))


if __name__ == "__main__":
    unittest.main()


class BenchScriptTest(unittest.TestCase):
    """tools/bench.sh (`make bench`): each profile runs once per round against its own fresh
    `queen serve`; the JSON keeps every run and the table shows each profile's median run."""

    PROFILES = """
[profiles.tiny-push]
description = "pushes of 10, two producers"
workload = "produce"
producers = 2
batch = 10
size = 64
partitions = 2
messages = 200
duration = 30
standard = true
goal_msgs_per_s = 1

[profiles.tiny-e2e]
description = "push, pop, ack"
workload = "e2e"
producers = 1
consumers = 1
batch = 10
size = 64
partitions = 1
messages = 100
duration = 30
standard = true

[profiles.not-standard]
description = "left out unless named"
workload = "produce"
producers = 1
batch = 1
size = 8
partitions = 1
messages = 10
duration = 30
"""

    def run_script(self, work, rounds, **extra_env):
        profiles = os.path.join(work, "bench.toml")
        with open(profiles, "w") as f:
            f.write(self.PROFILES)
        results = os.path.join(work, "results")
        env = dict(os.environ, QUEEN_BENCH_PROFILES=profiles, QUEEN_BENCH_ROUNDS=rounds,
                   QUEEN_BENCH_RESULTS=results, QUEEN_BENCH_DIR=work, **extra_env)
        out = subprocess.run([os.path.join(SOURCE_DIR, "tools/bench.sh"), QUEEN_BIN], env=env,
                             capture_output=True, text=True, timeout=300)
        return out, results

    def test_rounds_keep_every_run_and_the_table_shows_the_median(self):
        with tempfile.TemporaryDirectory(dir=os.environ.get("QUEEN_TEST_DIR")) as work:
            out, results = self.run_script(work, "3")
            self.assertEqual(out.returncode, 0, out.stderr)
            names = sorted(os.listdir(results))
            self.assertEqual(len(names), 2, names)  # <date>.json and <date>.md
            with open(os.path.join(results, names[0])) as f:
                doc = json.load(f)
            self.assertEqual(doc["rounds"], 3)
            # Round by round, in profile order; the non-standard profile never ran.
            self.assertEqual([(r["round"], r["profile"]) for r in doc["results"]],
                             [(n, p) for n in (1, 2, 3) for p in ("tiny-push", "tiny-e2e")])
            for r in doc["results"]:
                self.assertEqual(r["errors"], 0)
                expected = 200 if r["profile"] == "tiny-push" else 100
                self.assertEqual(r["produced"], expected)
            for s in doc["summary"]:
                runs = sorted(r["msgs_per_s"] for r in doc["results"] if r["profile"] == s["profile"])
                self.assertEqual(s["runs"], 3)
                self.assertEqual(s["msgs_per_s_median"], runs[1])
                self.assertEqual((s["msgs_per_s_min"], s["msgs_per_s_max"]), (runs[0], runs[2]))
                median_run = [r for r in doc["results"]
                              if r["profile"] == s["profile"] and r["round"] == s["median_round"]]
                self.assertEqual(median_run[0]["msgs_per_s"], runs[1])
            by_name = {s["profile"]: s for s in doc["summary"]}
            self.assertEqual(by_name["tiny-push"]["goal_met_runs"], 3)
            self.assertIsNone(by_name["tiny-e2e"]["goal_met_runs"])
            with open(os.path.join(results, names[1])) as f:
                table = f.read()
            push_row = [line for line in table.splitlines() if line.startswith("| tiny-push |")]
            self.assertEqual(len(push_row), 1, table)
            self.assertIn(f"{by_name['tiny-push']['msgs_per_s_median']:,.0f}", push_row[0])
            self.assertIn("(3 runs)", push_row[0])
            self.assertIn("met in 3 of 3", push_row[0])
            self.assertNotIn("not-standard", table)
            # Every server stopped and its data directory went with it.
            self.assertEqual([n for n in os.listdir(work) if n.startswith("queen-bench")], [])

    def test_a_bad_round_count_is_refused(self):
        with tempfile.TemporaryDirectory(dir=os.environ.get("QUEEN_TEST_DIR")) as work:
            out, results = self.run_script(work, "0")
            self.assertEqual(out.returncode, 2)
            self.assertIn("QUEEN_BENCH_ROUNDS must be a positive integer", out.stderr)
            self.assertFalse(os.path.exists(results))

    def test_a_bad_settle_bound_is_refused(self):
        with tempfile.TemporaryDirectory(dir=os.environ.get("QUEEN_TEST_DIR")) as work:
            out, results = self.run_script(work, "1", QUEEN_BENCH_SETTLE_MAX="soon")
            self.assertEqual(out.returncode, 2)
            self.assertIn("QUEEN_BENCH_SETTLE_MAX must be a whole number of seconds", out.stderr)
            self.assertFalse(os.path.exists(results))
