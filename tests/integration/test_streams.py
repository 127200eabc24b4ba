"""tests/integration/test_streams.py — the Queen v1 streams endpoints against a real `queen serve`.

POST /streams/v1/queries, /streams/v1/cycle and /streams/v1/state/get (docs/http-api.md, section
10): registration states, every cycle field, the state/get filters, bad input refused with
nothing changed, a cycle applied all or nothing, and a cycle answered before a SIGKILL still
there after the restart."""
import json
import signal
import unittest

from harness import ServerTestCase, metric, wait_until

CONFLICT = ("config_hash mismatch: operator chain changed for queryId '{}'. Pass reset:true to "
            "wipe existing state, or use a new queryId.")
FOREIGN_LEASE = "00000000-0000-8400-0000-0000000000ff"  # shaped like ours, never granted


class StreamsTestCase(ServerTestCase):
    def register(self, name, source="src", sink="sink", config_hash="h1", **extra):
        body = {"name": name, "source_queue": source, "config_hash": config_hash, **extra}
        if sink is not None:
            body["sink_queue"] = sink
        return self.client.post("/streams/v1/queries", body)

    def query_id(self, name="q", **kw):
        r = self.register(name, **kw)
        self.assertEqual(r.status, 200, r)
        return r.json()["query_id"]

    def cycle(self, body, status=200):
        r = self.client.post("/streams/v1/cycle", body)
        self.assertEqual(r.status, status, r)
        return r.json()

    def rows(self, query_id, partition_id, **filters):
        r = self.client.post("/streams/v1/state/get",
                             {"query_id": query_id, "partition_id": partition_id, **filters})
        self.assertEqual(r.status, 200, r)
        return [(row["key"], row["value"]) for row in r.json()["rows"]]

    def push_source(self, count, queue="src", partition="p"):
        """Pushes messages {"i": 0..count-1}; returns their partition id."""
        r = self.client.push(queue, [{"i": i} for i in range(count)], partition=partition)
        self.assertEqual(r.status, 201, r)
        return r.json()[0]["partition_id"]

    def pop(self, queue, **params):
        """The popped batch (status 200) or None (204)."""
        r = self.client.pop(queue, wait=False, **params)
        self.assertIn(r.status, (200, 204), r)
        return r.json() if r.status == 200 else None

    def payloads(self, batch):
        return [m["data"] for m in batch["messages"]] if batch else []


class Registration(StreamsTestCase):
    def test_fresh_reused_conflict_and_reset(self):
        first = self.register("q", source="src", sink="sink")
        self.assertEqual(first.status, 200, first)
        body = first.json()
        self.assertEqual(set(body), {"success", "query_id", "name", "config_hash", "fresh", "reset", "epoch"})
        self.assertEqual((body["success"], body["name"], body["config_hash"], body["fresh"], body["reset"]),
                         (True, "q", "h1", True, False))
        qid = body["query_id"]
        self.assertRegex(qid, r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
        self.assertNotEqual(self.query_id("other"), qid)  # a fresh id per query

        # Same hash: the same query, its source and sink replaced, its state kept.
        pid = self.push_source(1, queue="src2")
        self.cycle({"query_id": qid, "partition_id": pid,
                    "state_ops": [{"type": "upsert", "key": "k", "value": 1}]})
        again = self.register("q", source="src2", sink="sink2")
        self.assertEqual(again.status, 200, again)
        self.assertEqual(again.json(), {"success": True, "query_id": qid, "name": "q", "config_hash": "h1",
                                        "fresh": False, "reset": False, "epoch": body["epoch"]})
        done = self.cycle({"query_id": qid, "partition_id": pid})
        self.assertEqual(done["queueName"], "src2")
        self.assertEqual(self.rows(qid, pid), [("k", 1)])

        # Another hash without reset: 409 with the module's words, nothing changed.
        conflict = self.register("q", config_hash="h2")
        self.assertEqual(conflict.status, 409, conflict)
        self.assertEqual(conflict.json(), {"success": False, "query_id": qid, "name": "q",
                                           "error": CONFLICT.format("q")})
        self.assertEqual(self.rows(qid, pid), [("k", 1)])

        # With reset: the state is gone, the new hash stored, the id kept.
        reset = self.register("q", config_hash="h2", reset=True)
        self.assertEqual(reset.status, 200, reset)
        self.assertEqual(reset.json(), {"success": True, "query_id": qid, "name": "q", "config_hash": "h2",
                                        "fresh": False, "reset": True, "epoch": body["epoch"] + 1})
        self.assertEqual(self.rows(qid, pid), [])
        # Our extension: a runner whose state was read before the reset is fenced off by its epoch.
        stale = self.cycle({"query_id": qid, "partition_id": pid, "epoch": body["epoch"],
                            "state_ops": [{"type": "upsert", "key": "old", "value": 1}]})
        self.assertFalse(stale["success"])
        self.assertIn("epoch mismatch", stale["error"])
        self.assertEqual(self.rows(qid, pid), [])
        fenced_ok = self.cycle({"query_id": qid, "partition_id": pid, "epoch": body["epoch"] + 1,
                                "state_ops": [{"type": "upsert", "key": "new", "value": 2}]})
        self.assertTrue(fenced_ok["success"], fenced_ok)
        self.assertEqual(self.rows(qid, pid), [("new", 2)])

        prom = self.client.get("/metrics/prometheus").body
        self.assertEqual(metric(prom, "queen_stream_registrations_total"), 5)  # the 409 included
        self.assertEqual(metric(prom, "queen_stream_cycles_total"), 4)
        self.assertEqual(metric(prom, "queen_stream_cycles_failed_total"), 1)

    def test_required_fields_and_types(self):
        for missing, body in (("name", {"source_queue": "s", "config_hash": "h"}),
                              ("name", {"name": "", "source_queue": "s", "config_hash": "h"}),
                              ("source_queue", {"name": "n", "config_hash": "h"}),
                              ("config_hash", {"name": "n", "source_queue": "s", "config_hash": None})):
            r = self.client.post("/streams/v1/queries", body)
            self.assertEqual((r.status, r.json()), (400, {"error": f"{missing} is required"}), body)
        for body, words in (({"name": 5, "source_queue": "s", "config_hash": "h"}, "name must be a string"),
                            ({"name": "n", "source_queue": "s", "config_hash": "h", "reset": "yes"},
                             "reset must be a boolean"),
                            ({"name": "n", "source_queue": "s", "config_hash": "h", "sink_queue": []},
                             "sink_queue must be a string"),
                            ({"name": "n" * 257, "source_queue": "s", "config_hash": "h"},
                             "name is longer than 256 bytes")):
            r = self.client.post("/streams/v1/queries", body)
            self.assertEqual((r.status, r.json()), (400, {"error": words}), body)
        self.assertEqual(self.client.post("/streams/v1/queries", [1]).status, 400)
        # Nothing was registered: the name is still fresh.
        self.assertTrue(self.register("n").json()["fresh"])


class Cycle(StreamsTestCase):
    def test_state_ops_and_sink_pushes_with_partition_and_dedup(self):
        qid = self.query_id()
        pid = self.push_source(1)
        done = self.cycle({
            "query_id": qid, "partition_id": pid,
            "state_ops": [{"type": "upsert", "key": "a", "value": {"n": 1, "list": [1, 2]}},
                          {"type": "upsert", "key": "b", "value": "text"},
                          {"type": "upsert", "key": "c", "value": None}],
            "push_items": [{"queue": "sink", "partition": "out-1", "payload": {"total": 3}, "transactionId": "r1"},
                           {"queue": "sink", "payload": {"total": 4}}]})
        self.assertTrue(done["success"], done)
        self.assertEqual(set(done), {"success", "query_id", "partition_id", "queueName", "state_ops_applied",
                                     "push_results", "ack_result"})
        self.assertEqual((done["query_id"], done["partition_id"], done["queueName"], done["state_ops_applied"],
                          done["ack_result"]), (qid, pid, "src", 3, None))
        results = done["push_results"]
        self.assertEqual([(r["index"], r["status"], r["queueName"]) for r in results],
                         [(0, "queued", "sink"), (1, "queued", "sink")])
        self.assertEqual(results[0]["transaction_id"], "r1")
        self.assertEqual(self.rows(qid, pid), [("a", {"list": [1, 2], "n": 1}), ("b", "text"), ("c", None)])

        # Upsert replaces, delete removes (a missing key too), the same transactionId is a duplicate.
        again = self.cycle({
            "query_id": qid, "partition_id": pid,
            "state_ops": [{"type": "upsert", "key": "a", "value": 2}, {"type": "delete", "key": "b"},
                          {"type": "delete", "key": "never"}],
            "push_items": [{"queue": "sink", "partition": "out-1", "payload": {"total": 99}, "transactionId": "r1"}]})
        self.assertTrue(again["success"], again)
        self.assertEqual(again["state_ops_applied"], 3)
        self.assertEqual(again["push_results"][0]["status"], "duplicate")
        self.assertEqual(again["push_results"][0]["message_id"], results[0]["message_id"])
        self.assertEqual(self.rows(qid, pid), [("a", 2), ("c", None)])

        self.assertEqual(self.payloads(self.pop("sink", partition="out-1")), [{"total": 3}])
        self.assertIsNone(self.pop("sink", partition="out-1"))
        self.assertEqual(self.payloads(self.pop("sink", partition="Default")), [{"total": 4}])

    def test_check_ops_fence_a_cycle_on_a_row_and_write_nothing(self):
        qid = self.query_id()
        pid = self.push_source(1)
        self.assertTrue(self.cycle({"query_id": qid, "partition_id": pid, "state_ops": [
            {"type": "check", "key": "v"},  # absent: passes
            {"type": "upsert", "key": "v", "value": {"b": 1, "a": 2}}]})["success"])
        # The same JSON in another member order holds; the checks count as no write.
        ok = self.cycle({"query_id": qid, "partition_id": pid, "state_ops": [
            {"type": "check", "key": "v", "value": {"a": 2, "b": 1}},
            {"type": "upsert", "key": "w", "value": 1}]})
        self.assertTrue(ok["success"], ok)
        self.assertEqual(ok["state_ops_applied"], 1)
        for check, words in (({"type": "check", "key": "v", "value": {"a": 3, "b": 1}}, "the row holds another value"),
                             ({"type": "check", "key": "v"}, "the row holds another value"),
                             ({"type": "check", "key": "nope", "value": 1}, "the row is absent")):
            refused = self.cycle({"query_id": qid, "partition_id": pid,
                                  "state_ops": [{"type": "upsert", "key": "x", "value": 1}, check],
                                  "push_items": [{"queue": "sink", "payload": 1}]})
            self.assertFalse(refused["success"], refused)
            self.assertEqual(refused["error"], f"state check failed on '{check['key']}': {words}")
        self.assertEqual(self.rows(qid, pid), [("v", {"a": 2, "b": 1}), ("w", 1)])
        self.assertIsNone(self.pop("sink"))

    def test_ack_completed_releases_the_lease_and_the_rest_of_the_batch_comes_at_once(self):
        qid = self.query_id()
        self.push_source(4)
        batch = self.pop("src", batch=2)
        self.assertEqual(self.payloads(batch), [{"i": 0}, {"i": 1}])
        last = batch["messages"][1]
        done = self.cycle({"query_id": qid, "partition_id": batch["partitionId"],
                           "ack": {"transactionId": last["transactionId"], "leaseId": batch["leaseId"],
                                   "status": "success", "count": 2}})
        self.assertTrue(done["success"], done)
        self.assertEqual(done["ack_result"], {"success": True, "count": 2, "lease_released": True, "dlq": False})
        self.assertEqual(self.payloads(self.pop("src", batch=10)), [{"i": 2}, {"i": 3}])

    def test_release_lease_false_keeps_the_lease_until_it_expires(self):
        self.client.post("/api/v1/configure", {"queue": "src", "options": {"leaseTime": 1}})
        qid = self.query_id()
        self.push_source(3)
        batch = self.pop("src", batch=1)
        first = batch["messages"][0]
        done = self.cycle({"query_id": qid, "partition_id": batch["partitionId"], "release_lease": False,
                           "ack": {"transactionId": first["transactionId"], "leaseId": batch["leaseId"]}})
        self.assertTrue(done["success"], done)
        self.assertEqual(done["ack_result"], {"success": True, "count": 1, "lease_released": False, "dlq": False})
        self.assertIsNone(self.pop("src"))  # the partition is still leased
        rest = wait_until(lambda: self.pop("src", batch=10), timeout=15, what="the lease to expire")
        self.assertEqual(self.payloads(rest), [{"i": 1}, {"i": 2}])  # the acked one is not redelivered

    def test_failed_and_dlq_acks_dead_letter_with_the_default_error_in_a_consumer_group(self):
        qid = self.query_id()
        self.push_source(3)
        batch = self.pop("src", batch=1, consumerGroup="g1")
        failed = batch["messages"][0]
        done = self.cycle({"query_id": qid, "partition_id": batch["partitionId"], "consumer_group": "g1",
                           "ack": {"transactionId": failed["transactionId"], "leaseId": batch["leaseId"],
                                   "status": "failed"}})
        self.assertTrue(done["success"], done)
        self.assertEqual(done["ack_result"], {"success": True, "count": 1, "lease_released": True, "dlq": True})
        second = self.pop("src", batch=1, consumerGroup="g1")
        self.assertEqual(self.payloads(second), [{"i": 1}])
        done = self.cycle({"query_id": qid, "partition_id": batch["partitionId"], "consumer_group": "g1",
                           "ack": {"transactionId": second["messages"][0]["transactionId"],
                                   "leaseId": second["leaseId"], "status": "dlq", "error": "bad event"}})
        self.assertTrue(done["ack_result"]["dlq"], done)

        dlq = self.client.get("/api/v1/dlq?queue=src").json()["messages"]
        errors = {json.dumps(m["data"]): m["errorMessage"] for m in dlq}
        self.assertEqual(errors, {'{"i": 0}': "Streaming cycle reported failure", '{"i": 1}': "bad event"})
        # Only group g1 moved: queue mode still starts at the first message.
        self.assertEqual(self.payloads(self.pop("src", batch=1)), [{"i": 0}])
        self.assertEqual(self.payloads(self.pop("src", batch=1, consumerGroup="g1")), [{"i": 2}])


class StateGet(StreamsTestCase):
    def test_keys_prefix_and_ripe_filters_are_anded_and_ordered_by_key(self):
        qid = self.query_id()
        pid = self.push_source(1)
        other_pid = self.push_source(1, partition="other")
        rows = {"w:b:1": {"windowEnd": 5}, "w:a:2": {"windowEnd": 20.5}, "w:a:1": {"windowEnd": 10, "sum": 3},
                "m": {"watermark": 3}, "x": 7, "w:c:1": {"windowEnd": "1"}}
        self.cycle({"query_id": qid, "partition_id": pid,
                    "state_ops": [{"type": "upsert", "key": k, "value": v} for k, v in rows.items()]})
        self.cycle({"query_id": qid, "partition_id": other_pid,
                    "state_ops": [{"type": "upsert", "key": "w:a:1", "value": {"windowEnd": 0}}]})
        everything = self.rows(qid, pid)
        self.assertEqual([k for k, _ in everything], ["m", "w:a:1", "w:a:2", "w:b:1", "w:c:1", "x"])
        self.assertEqual(dict(everything), rows)
        self.assertEqual(self.rows(qid, pid, keys=[]), everything)
        self.assertEqual(self.rows(qid, other_pid), [("w:a:1", {"windowEnd": 0})])  # its own shard

        self.assertEqual(self.rows(qid, pid, keys=["x", "m", "nope", "x"]), [("m", {"watermark": 3}), ("x", 7)])
        self.assertEqual([k for k, _ in self.rows(qid, pid, key_prefix="w:a")], ["w:a:1", "w:a:2"])
        # windowEnd must be a number: "1" (a string) never ripens; 20.5 does at 20.5.
        self.assertEqual([k for k, _ in self.rows(qid, pid, ripe_at_or_before=10)], ["w:a:1", "w:b:1"])
        self.assertEqual([k for k, _ in self.rows(qid, pid, ripe_at_or_before=20.5)], ["w:a:1", "w:a:2", "w:b:1"])
        self.assertEqual([k for k, _ in self.rows(qid, pid, key_prefix="w:a", ripe_at_or_before=10)], ["w:a:1"])
        self.assertEqual([k for k, _ in self.rows(qid, pid, keys=["w:b:1", "w:a:2", "m"], key_prefix="w:",
                                                  ripe_at_or_before=6)], ["w:b:1"])

        r = self.client.post("/streams/v1/state/get", {"query_id": qid, "partition_id": pid})
        row = r.json()["rows"][0]
        self.assertEqual(set(row), {"key", "value", "updated_at"})
        self.assertRegex(row["updated_at"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")

    def test_bad_requests(self):
        qid = self.query_id()
        pid = self.push_source(1)
        for body, words in (({"partition_id": pid}, "query_id is required"),
                            ({"query_id": qid}, "partition_id is required"),
                            ({"query_id": qid, "partition_id": "p"}, "partition_id must be a UUID"),
                            ({"query_id": qid, "partition_id": pid, "keys": "a"}, "keys must be an array of strings"),
                            ({"query_id": qid, "partition_id": pid, "keys": ["a", 1]}, "keys[1] must be a string"),
                            ({"query_id": qid, "partition_id": pid, "ripe_at_or_before": "5"},
                             "ripe_at_or_before must be a number"),
                            ({"query_id": "no-such-query", "partition_id": pid}, "Unknown query_id no-such-query")):
            r = self.client.post("/streams/v1/state/get", body)
            self.assertEqual((r.status, r.json()), (400, {"error": words}), body)


class BadInput(StreamsTestCase):
    def test_bad_cycles_are_refused_and_change_nothing(self):
        qid = self.query_id()
        pid = self.push_source(2)
        src = self.client.pop("src", wait=False, batch=2)  # to learn the transactionIds, then give back
        tid = src.json()["messages"][0]["transactionId"]
        lease = src.json()["leaseId"]
        good = {"query_id": qid, "partition_id": pid,
                "state_ops": [{"type": "upsert", "key": "k", "value": 1}],
                "push_items": [{"queue": "sink", "payload": 1}],
                "ack": {"transactionId": tid, "leaseId": lease}}

        def but(**changes):
            body = json.loads(json.dumps(good))
            for key, value in changes.items():
                if value is None:
                    body.pop(key)
                else:
                    body[key] = value
            return body

        cases = (
            (but(query_id=None), "query_id is required"),
            (but(query_id=""), "query_id is required"),
            (but(partition_id=None), "partition_id is required"),
            (but(partition_id="not-a-uuid"), "partition_id must be a UUID"),
            (but(partition_id="0a1b2c3d-0000-4000-8000-000000000000"), None),  # a UUID, not ours
            (but(state_ops=[{"type": "upsert", "key": "k", "value": 1}, {"type": "merge", "key": "k"}]),
             'state_ops[1].type must be "upsert", "delete" or "check", not "merge"'),
            (but(state_ops={"type": "upsert"}), "state_ops must be an array"),
            (but(state_ops=[{"type": "upsert", "key": 5, "value": 1}]), "state_ops[0].key must be a string"),
            (but(state_ops=[{"type": "upsert", "key": "k"}]), "state_ops[0].value is required"),
            (but(state_ops=[{"type": "upsert", "key": "k" * 257, "value": 1}]),
             "state_ops[0].key is longer than 256 bytes"),
            (but(state_ops=[{"type": "upsert", "key": "k", "value": "v" * (1 << 20)}]),
             "state_ops[0].value is 1048578 bytes, more than the limit of 1048576"),
            (but(push_items={"queue": "sink"}), "push_items must be an array"),
            (but(push_items=[{"queue": 1, "payload": 1}]), "push_items: Queue must be a string"),
            (but(ack=[tid]), "ack must be an object or null"),
            (but(ack={"leaseId": lease}), "ack.transactionId is required"),
            (but(ack={"transactionId": tid, "status": "retry"}),
             'ack.status must be completed, success, failed or dlq, not "retry"'),
            (but(ack={"transactionId": tid, "count": "two"}), "ack.count must be an integer"),
            (but(release_lease="no"), "release_lease must be a boolean"),
            (but(consumer_group=7), "consumer_group must be a string"),
            (but(epoch="1"), "epoch must be an integer"),
            (but(epoch=-1), None),
        )
        for body, words in cases:
            r = self.client.post("/streams/v1/cycle", body)
            self.assertEqual(r.status, 400, (body if len(json.dumps(body)) < 500 else words, r))
            if words is not None:
                self.assertEqual(r.json(), {"error": words})
        for raw in (b"", b"{", b"[]"):
            self.assertEqual(self.client.post("/streams/v1/cycle", raw_body=raw).status, 400, raw)

        # Nothing changed: no row, no sink message, the source batch still leased and not acked.
        self.assertEqual(self.rows(qid, pid), [])
        self.assertIsNone(self.pop("sink"))
        prom = self.client.get("/metrics/prometheus").body
        self.assertEqual(metric(prom, "queen_stream_cycles_total"), 0)
        done = self.cycle(good)  # the lease is still the batch's: the good cycle goes through
        self.assertTrue(done["success"], done)
        self.assertEqual(self.payloads(self.pop("src")), [{"i": 1}])


class Atomicity(StreamsTestCase):
    def test_a_cycle_whose_ack_fails_writes_nothing(self):
        qid = self.query_id()
        self.push_source(2)
        batch = self.pop("src", batch=1)
        pid, tid = batch["partitionId"], batch["messages"][0]["transactionId"]
        body = {"query_id": qid, "partition_id": pid,
                "state_ops": [{"type": "upsert", "key": "k", "value": {"n": 1}}],
                "push_items": [{"queue": "sink", "payload": {"out": 1}, "transactionId": "o1"}]}
        for ack, words in (({"transactionId": tid, "leaseId": FOREIGN_LEASE}, "Invalid or expired lease"),
                           ({"transactionId": "no-such-message", "leaseId": batch["leaseId"]}, "Message not found")):
            failed = self.cycle(dict(body, ack=ack))
            self.assertEqual((failed["success"], failed["state_ops_applied"], failed["push_results"],
                              failed["ack_result"], failed["queueName"]), (False, 0, [], None, "src"), failed)
            self.assertTrue(failed["error"].startswith(words), failed)
            self.assertEqual(self.rows(qid, pid), [])
            self.assertIsNone(self.pop("sink"))
        unknown = self.cycle(dict(body, query_id="no-such-query"))
        self.assertEqual((unknown["success"], unknown["error"], unknown["queueName"]),
                         (False, "Unknown query_id no-such-query", None))

        good = self.cycle(dict(body, ack={"transactionId": tid, "leaseId": batch["leaseId"]}))
        self.assertTrue(good["success"], good)
        self.assertEqual(self.rows(qid, pid), [("k", {"n": 1})])
        self.assertEqual(self.payloads(self.pop("sink")), [{"out": 1}])
        self.assertEqual(self.payloads(self.pop("src")), [{"i": 1}])
        prom = self.client.get("/metrics/prometheus").body
        self.assertEqual(metric(prom, "queen_stream_cycles_failed_total"), 3)

    def test_a_cycle_answered_before_a_sigkill_is_there_after_the_restart(self):
        qid = self.query_id()
        self.push_source(3)
        batch = self.pop("src", batch=2)
        done = self.cycle({"query_id": qid, "partition_id": batch["partitionId"],
                           "state_ops": [{"type": "upsert", "key": "k", "value": [1, 2, 3]}],
                           "push_items": [{"queue": "sink", "payload": "result"}],
                           "ack": {"transactionId": batch["messages"][1]["transactionId"],
                                   "leaseId": batch["leaseId"]}})
        self.assertTrue(done["success"], done)
        self.client.close()
        self.server.stop(signal.SIGKILL)
        self.server.start()
        self.client = self.server.client()
        self.assertEqual(self.rows(qid, batch["partitionId"]), [("k", [1, 2, 3])])
        self.assertEqual(self.payloads(self.pop("sink")), ["result"])
        self.assertEqual(self.payloads(self.pop("src", batch=10)), [{"i": 2}])  # the ack held


if __name__ == "__main__":
    unittest.main()
