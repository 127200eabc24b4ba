"""tests/integration/test_broker.py — the Queen v1 API end to end against a real `queen serve`.

Each test starts its own server (fresh data directory) and drives it over real HTTP, checking
the data-plane endpoints, their semantics and the admin endpoints as docs/http-api.md states
them."""
import os
import threading
import time
import unittest

from harness import ServerTestCase, metric, wait_until


def names(resp):
    return [m["data"] for m in resp.json()["messages"]]


class PushPopAck(ServerTestCase):
    def test_push_returns_the_spec_shape_and_pop_sees_it_at_once(self):
        r = self.client.push("orders", [{"n": 1}, {"n": 2}], transaction_ids=["t1", "t2"])
        self.assertEqual(r.status, 201, r)
        items = r.json()
        self.assertEqual([i["index"] for i in items], [0, 1])
        self.assertEqual([i["status"] for i in items], ["queued", "queued"])
        self.assertEqual(items[0]["transaction_id"], "t1")
        for key in ("message_id", "partition_id", "queueName"):
            self.assertIn(key, items[0])
        self.assertIsNone(items[0]["trace_id"])
        p = self.client.pop("orders", batch=10, wait=False)
        self.assertEqual(p.status, 200, p)
        body = p.json()
        self.assertTrue(body["success"])
        self.assertEqual(body["queue"], "orders")
        self.assertEqual(body["partition"], "Default")
        self.assertEqual(body["consumerGroup"], "__QUEUE_MODE__")
        self.assertEqual(body["partitionsClaimed"], 1)
        self.assertNotEqual(body["leaseId"], "")
        self.assertEqual(names(p), [{"n": 1}, {"n": 2}])
        m = body["messages"][0]
        for key in ("id", "transactionId", "traceId", "data", "producerSub", "createdAt", "partitionId", "partition",
                    "leaseId", "consumerGroup"):
            self.assertIn(key, m)
        self.assertEqual(m["id"], items[0]["message_id"])
        self.assertEqual(m["partitionId"], items[0]["partition_id"])

    def test_payloads_of_every_json_type_round_trip(self):
        payloads = [{"a": [1, 2, {"b": None}]}, [1, "x"], "text", 42, 3.5, True, None, {}]
        self.client.push("types", payloads)
        p = self.client.pop("types", batch=100, wait=False)
        self.assertEqual(names(p), payloads)

    def test_empty_pop_is_204_without_a_body(self):
        r = self.client.pop("nothing-here", wait=False)
        self.assertEqual(r.status, 204)
        self.assertEqual(r.body, "")
        self.client.push("q", [1])
        self.assertEqual(self.client.pop("q", partition="nope", wait=False).status, 204)

    def test_fifo_per_partition_and_ack_advances(self):
        self.client.push("fifo", list(range(20)), partition="p")
        seen = []
        while True:
            p = self.client.pop("fifo", partition="p", batch=3, wait=False)
            if p.status == 204:
                break
            body = p.json()
            for m in body["messages"]:
                seen.append(m["data"])
                a = self.client.ack(m["transactionId"], m["partitionId"], lease_id=body["leaseId"])
                self.assertEqual(a.status, 200)
                item = a.json()[0]
                self.assertTrue(item["success"], item)
                self.assertEqual(item["queueName"], "fifo")
                self.assertEqual(item["partitionName"], "p")
        self.assertEqual(seen, list(range(20)))

    def test_duplicates_per_partition_including_within_a_batch(self):
        r = self.client.push("dup", ["a", "b", "c"], partition="x", transaction_ids=["1", "2", "1"]).json()
        self.assertEqual([i["status"] for i in r], ["queued", "queued", "duplicate"])
        self.assertEqual(r[2]["message_id"], r[0]["message_id"])
        again = self.client.push("dup", ["z"], partition="x", transaction_ids=["2"]).json()
        self.assertEqual(again[0]["status"], "duplicate")
        self.assertEqual(again[0]["message_id"], r[1]["message_id"])
        other = self.client.push("dup", ["a"], partition="y", transaction_ids=["1"]).json()
        self.assertEqual(other[0]["status"], "queued")
        p = self.client.pop("dup", partition="x", batch=10, wait=False)
        self.assertEqual(names(p), ["a", "b"])

    def test_concurrent_pushes_of_one_transaction_id_store_it_once(self):
        results = []

        def push():
            c = self.server.client()
            results.append(c.push("race", ["v"], transaction_ids=["same"]).json()[0])
            c.close()
        threads = [threading.Thread(target=push) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(sorted(r["status"] for r in results), ["duplicate"] * 7 + ["queued"])
        self.assertEqual(len({r["message_id"] for r in results}), 1)
        p = self.client.pop("race", batch=10, wait=False)
        self.assertEqual(len(p.json()["messages"]), 1)

    def test_empty_items_and_empty_ack_batch(self):
        r = self.client.post("/api/v1/push", {"items": []})
        self.assertEqual(r.status, 201)
        self.assertEqual(r.json(), [])
        r = self.client.post("/api/v1/ack/batch", {"acknowledgments": []})
        self.assertEqual(r.status, 200)
        self.assertEqual(r.json(), [])


class LongPoll(ServerTestCase):
    def test_a_waiting_pop_is_woken_by_a_push(self):
        result = {}

        def pop():
            c = self.server.client()
            start = time.monotonic()
            result["resp"] = c.pop("lp", wait=True, timeout=20000)
            result["elapsed"] = time.monotonic() - start
            c.close()
        t = threading.Thread(target=pop)
        t.start()
        # The pop is parked once the server reports it (an observable event, no guessing).
        from harness import wait_until
        wait_until(lambda: "queen_longpoll_parked 1" in self.client.get("/metrics/prometheus").body,
                   what="the pop to park")
        self.client.push("lp", ["hello"])
        t.join(30)
        self.assertEqual(result["resp"].status, 200)
        self.assertEqual(names(result["resp"]), ["hello"])
        self.assertLess(result["elapsed"], 19)

    def test_a_waiting_pop_times_out_with_204(self):
        start = time.monotonic()
        r = self.client.pop("empty-lp", wait=True, timeout=300)
        self.assertEqual(r.status, 204)
        self.assertGreaterEqual(time.monotonic() - start, 0.25)


    def test_a_due_partition_nobody_pops_does_not_spin_parked_pops(self):
        # A lease that expires on a queue nobody pops leaves that partition due; the parked pops
        # of the tenant are woken once for it, not again by every pop they make (which used to
        # write thousands of pop entries a second until the polls ended).
        from harness import metric
        self.client.post("/api/v1/configure", {"queue": "tick", "options": {"leaseTime": 1}})
        self.client.push("tick", ["t"])
        self.assertEqual(self.client.pop("tick", wait=False).status, 200)  # leased for 1 s
        applied = lambda: metric(self.client.get("/metrics/prometheus").body, "queen_entries_applied_total")
        before = applied()
        r = self.client.pop("ride", wait=True, timeout=2500)  # parked across the expiry
        self.assertEqual(r.status, 204)
        self.assertLess(applied() - before, 100)
        # A later due time of another queue still wakes its parked pop.
        self.client.post("/api/v1/configure", {"queue": "tock", "options": {"leaseTime": 1}})
        self.client.push("tock", ["k"])
        self.assertEqual(self.client.pop("tock", wait=False).status, 200)
        again = self.client.pop("tock", wait=True, timeout=20000)  # woken at the expiry
        self.assertEqual(again.status, 200)
        self.assertEqual(names(again), ["k"])


class Leases(ServerTestCase):
    def test_unacked_messages_are_redelivered_after_the_lease_expires(self):
        self.client.post("/api/v1/configure", {"queue": "lease", "options": {"leaseTime": 1}})
        self.client.push("lease", ["m"])
        first = self.client.pop("lease", wait=False)
        self.assertEqual(first.status, 200)
        self.assertEqual(self.client.pop("lease", wait=False).status, 204)  # leased
        again = self.client.pop("lease", wait=True, timeout=10000)  # woken at expiry
        self.assertEqual(again.status, 200)
        self.assertEqual(names(again), ["m"])
        self.assertNotEqual(again.json()["leaseId"], first.json()["leaseId"])
        m = first.json()["messages"][0]
        stale = self.client.ack(m["transactionId"], m["partitionId"], lease_id=first.json()["leaseId"]).json()[0]
        self.assertFalse(stale["success"])
        self.assertEqual(stale["error"], "Invalid or expired lease")

    def test_lease_extend(self):
        self.client.post("/api/v1/configure", {"queue": "ext", "options": {"leaseTime": 30}})
        self.client.push("ext", ["m"])
        lease = self.client.pop("ext", wait=False).json()["leaseId"]
        r = self.client.post(f"/api/v1/lease/{lease}/extend", {"seconds": 120})
        self.assertEqual(r.status, 200)
        item = r.json()[0]
        self.assertTrue(item["success"], item)
        self.assertEqual(item["leaseId"], lease)
        self.assertIsNotNone(item["expiresAt"])
        bad = self.client.post("/api/v1/lease/00000000-0000-8000-0000-000000000000/extend", {}).json()[0]
        self.assertFalse(bad["success"])


class RetriesAndDlq(ServerTestCase):
    def test_failed_acks_retry_then_go_to_the_dlq_with_real_paging(self):
        self.client.post("/api/v1/configure", {"queue": "flaky", "options": {"retryLimit": 1, "retryDelay": 0}})
        self.client.push("flaky", [{"k": i} for i in range(3)], partition="p")
        deliveries = 0
        while True:
            p = self.client.pop("flaky", batch=1, wait=False)
            if p.status == 204:
                break
            deliveries += 1
            m = p.json()["messages"][0]
            self.client.ack(m["transactionId"], m["partitionId"], status="failed", lease_id=m["leaseId"],
                            error="boom")
            self.assertLess(deliveries, 20)
        dlq = self.client.get("/api/v1/dlq?queue=flaky&limit=2&offset=0")
        self.assertEqual(dlq.status, 200)
        page1 = dlq.json()
        self.assertEqual(len(page1["messages"]), 2)
        self.assertEqual(page1["pagination"], {"limit": 2, "offset": 0})
        page2 = self.client.get("/api/v1/dlq?queue=flaky&limit=2&offset=2").json()
        self.assertEqual(len(page2["messages"]), 1)
        all_data = sorted(m["data"]["k"] for m in page1["messages"] + page2["messages"])
        self.assertEqual(all_data, [0, 1, 2])
        self.assertIn("boom", page1["messages"][0]["errorMessage"])

    def test_retry_limit_gives_limit_plus_one_deliveries(self):
        self.client.post("/api/v1/configure", {"queue": "r3", "options": {"retryLimit": 3, "retryDelay": 0}})
        self.client.push("r3", ["x"])
        attempts = 0
        while attempts < 10:
            p = self.client.pop("r3", wait=False)
            if p.status == 204:
                break
            attempts += 1
            m = p.json()["messages"][0]
            status = "failed" if attempts < 3 else "completed"
            self.client.ack(m["transactionId"], m["partitionId"], status=status, lease_id=m["leaseId"])
        self.assertEqual(attempts, 3)
        self.assertEqual(self.client.get("/api/v1/dlq?queue=r3").json()["messages"], [])


class Partitions(ServerTestCase):
    def test_one_pop_takes_one_partition_by_default_and_n_with_partitions(self):
        for p in ("a", "b", "c", "d"):
            self.client.push("multi", [p + "1", p + "2"], partition=p)
        one = self.client.pop("multi", batch=100, wait=False).json()
        self.assertEqual(one["partitionsClaimed"], 1)
        self.assertEqual(len(one["messages"]), 2)
        three = self.client.pop("multi", batch=100, partitions=3, wait=False).json()
        self.assertEqual(three["partitionsClaimed"], 3)
        self.assertEqual(len(three["messages"]), 6)
        self.assertEqual(len({m["leaseId"] for m in three["messages"]}), 1)
        self.assertEqual(len({m["partition"] for m in three["messages"]}), 3)

    def test_batch_caps_across_partitions(self):
        for i in range(5):
            self.client.push("cap", [i * 10 + j for j in range(5)], partition=f"p{i}")
        r = self.client.pop("cap", batch=10, partitions=5, wait=False).json()
        self.assertEqual(len(r["messages"]), 10)


class Groups(ServerTestCase):
    def test_groups_fan_out_and_are_exclusive_within(self):
        self.client.push("fan", ["m1", "m2"])
        g1 = self.client.pop("fan", batch=10, consumerGroup="g1", wait=False)
        g2 = self.client.pop("fan", batch=10, consumerGroup="g2", wait=False)
        self.assertEqual(names(g1), ["m1", "m2"])
        self.assertEqual(names(g2), ["m1", "m2"])
        self.assertEqual(self.client.pop("fan", consumerGroup="g1", wait=False).status, 204)

    def test_subscription_mode_new_skips_history(self):
        self.client.push("sub", [f"old{i}" for i in range(5)])
        self.assertEqual(self.client.pop("sub", consumerGroup="late", subscriptionMode="new", wait=False).status, 204)
        self.client.push("sub", ["new1", "new2", "new3"])
        r = self.client.pop("sub", consumerGroup="late", batch=10, wait=False)
        self.assertEqual(names(r), ["new1", "new2", "new3"])
        r2 = self.client.pop("sub", consumerGroup="late2", subscriptionMode="new-only", batch=10, wait=False)
        self.assertEqual(r2.status, 204)

    def test_seek_to_end_and_back_to_a_timestamp(self):
        self.client.push("seek", ["a", "b"])
        r = self.client.pop("seek", consumerGroup="g", batch=10, wait=False).json()
        for m in r["messages"]:
            self.client.ack(m["transactionId"], m["partitionId"], lease_id=r["leaseId"], consumer_group="g")
        s = self.client.post("/api/v1/consumer-groups/g/queues/seek/seek", {"timestamp": "2000-01-01T00:00:00Z"})
        self.assertEqual(s.status, 200, s)
        self.assertTrue(s.json()["success"])
        again = self.client.pop("seek", consumerGroup="g", batch=10, wait=False)
        self.assertEqual(names(again), ["a", "b"])
        end = self.client.post("/api/v1/consumer-groups/g/queues/seek/seek", {"toEnd": True})
        self.assertEqual(end.status, 200)
        self.client.push("seek", ["c"])
        after = self.client.pop("seek", consumerGroup="g", batch=10, wait=False)
        self.assertEqual(names(after), ["c"])
        bad = self.client.post("/api/v1/consumer-groups/g/queues/seek/seek", {})
        self.assertEqual(bad.status, 400)

    def test_delete_group_restarts_it(self):
        self.client.push("dg", ["a"])
        r = self.client.pop("dg", consumerGroup="g", wait=False).json()
        m = r["messages"][0]
        self.client.ack(m["transactionId"], m["partitionId"], lease_id=r["leaseId"], consumer_group="g")
        d = self.client.delete("/api/v1/consumer-groups/g")
        self.assertEqual(d.status, 200)
        self.assertTrue(d.json()["success"])
        self.assertEqual(names(self.client.pop("dg", consumerGroup="g", wait=False)), ["a"])
        listing = self.client.get("/api/v1/consumer-groups")
        self.assertEqual(listing.status, 200)
        self.assertIn("g", [g["name"] for g in listing.json()])


class Transactions(ServerTestCase):
    def test_ack_and_push_commit_together(self):
        self.client.push("in", ["job"])
        r = self.client.pop("in", wait=False).json()
        m = r["messages"][0]
        t = self.client.post("/api/v1/transaction", {"operations": [
            {"type": "ack", "transactionId": m["transactionId"], "partitionId": m["partitionId"], "status": "completed"},
            {"type": "push", "items": [{"queue": "out", "payload": {"from": "job"}}]},
        ]})
        self.assertEqual(t.status, 200, t)
        body = t.json()
        self.assertTrue(body["success"], body)
        self.assertEqual([x["type"] for x in body["results"]], ["ack", "push"])
        self.assertEqual(names(self.client.pop("out", wait=False)), [{"from": "job"}])

    def test_a_failing_operation_rolls_back_the_whole_transaction(self):
        self.client.post("/api/v1/configure", {"queue": "src", "options": {"leaseTime": 1}})
        self.client.push("src", ["job"])
        r = self.client.pop("src", wait=False).json()
        m = r["messages"][0]
        t = self.client.post("/api/v1/transaction", {"operations": [
            {"type": "push", "items": [{"queue": "dst", "payload": 1}]},
            {"type": "ack", "transactionId": m["transactionId"], "partitionId": m["partitionId"]},
            {"type": "ack", "transactionId": "missing", "partitionId": m["partitionId"]},
        ]})
        self.assertEqual(t.status, 200)
        self.assertFalse(t.json()["success"])
        self.assertTrue(t.json()["error"])
        self.assertEqual(self.client.pop("dst", wait=False).status, 204)
        redelivered = self.client.pop("src", wait=True, timeout=10000)
        self.assertEqual(names(redelivered), ["job"])

    def test_bad_transactions_are_400(self):
        self.assertEqual(self.client.post("/api/v1/transaction", {"operations": []}).status, 400)
        self.assertEqual(self.client.post("/api/v1/transaction", {}).status, 400)


class Maintenance(ServerTestCase):
    def test_pushes_during_push_maintenance_are_delivered_after_once(self):
        on = self.client.post("/api/v1/system/maintenance", {"enabled": True})
        self.assertEqual(on.status, 200)
        self.assertTrue(on.json()["maintenanceMode"])
        r = self.client.push("mq", ["a", "b"], transaction_ids=["x", "y"]).json()
        self.assertEqual([i["status"] for i in r], ["buffered", "buffered"])
        self.assertEqual(self.client.get("/api/v1/system/maintenance").json()["bufferedMessages"], 2)
        self.client.push("mq", ["a-again"], transaction_ids=["x"])  # same id: must not duplicate
        off = self.client.post("/api/v1/system/maintenance", {"enabled": False})
        self.assertFalse(off.json()["maintenanceMode"])
        p = self.client.pop("mq", batch=10, wait=False)
        self.assertEqual(names(p), ["a", "b"])

    def test_pop_maintenance_pauses_pops(self):
        self.client.push("pm", ["a"])
        self.client.post("/api/v1/system/maintenance/pop", {"enabled": True})
        self.assertEqual(self.client.pop("pm", wait=False).status, 204)
        self.client.post("/api/v1/system/maintenance/pop", {"enabled": False})
        self.assertEqual(names(self.client.pop("pm", wait=False)), ["a"])


class BadInput(ServerTestCase):
    def assert_400_and_unchanged(self, method, path, raw=None, body=None):
        before = self.client.get("/api/v1/resources/queues").json()
        r = self.client.request(method, path, body=body, raw_body=raw)
        self.assertGreaterEqual(r.status, 400, r)
        self.assertLess(r.status, 500, r)
        self.assertIn("error", r.json())
        self.assertEqual(self.client.get("/api/v1/resources/queues").json(), before)
        return r

    def test_malformed_and_mistyped_requests(self):
        self.assert_400_and_unchanged("POST", "/api/v1/push", raw=b"{not json")
        self.assert_400_and_unchanged("POST", "/api/v1/push", raw=b"")
        self.assert_400_and_unchanged("POST", "/api/v1/push", body={"items": "nope"})
        self.assert_400_and_unchanged("POST", "/api/v1/push", body={"items": [{"queue": 5}]})
        self.assert_400_and_unchanged("POST", "/api/v1/push", body={"items": [{"queue": "q", "partition": []}]})
        self.assert_400_and_unchanged("POST", "/api/v1/push",
                                      body={"items": [{"queue": "ok", "payload": 1}, {"queue": None}]})
        self.assert_400_and_unchanged("POST", "/api/v1/ack", body={"partitionId": "x"})
        self.assert_400_and_unchanged("POST", "/api/v1/configure", body={"queue": 1})
        self.assert_400_and_unchanged("GET", "/api/v1/pop/queue/q?batch=abc")
        self.assert_400_and_unchanged("GET", "/api/v1/pop/queue/q%zz")

    def test_unknown_routes_and_huge_bodies(self):
        r = self.client.get("/api/v1/nope")
        self.assertEqual(r.status, 404)
        self.assertIn("error", r.json())
        big = b'{"items":[{"queue":"q","payload":"' + b"x" * (17 << 20) + b'"}]}'
        r = self.client.request("POST", "/api/v1/push", raw_body=big)
        self.assertEqual(r.status, 413)
        self.client.close()
        self.assertEqual(self.client.get("/api/v1/resources/queues").json()["queues"], [])


class Admin(ServerTestCase):
    def test_configure_echoes_all_options_and_resources_list_it(self):
        opts = {"leaseTime": 10, "retryLimit": 5, "retryDelay": 100, "maxSize": 1000, "ttl": 60, "priority": 2,
                "deadLetterQueue": True, "dlqAfterMaxRetries": True, "delayedProcessing": 0, "windowBuffer": 0,
                "retentionSeconds": 0, "completedRetentionSeconds": 0, "retentionEnabled": False,
                "encryptionEnabled": False, "maxWaitTimeSeconds": 0}
        r = self.client.post("/api/v1/configure", {"queue": "cfg", "namespace": "ns", "task": "t", "options": opts})
        self.assertEqual(r.status, 200, r)
        body = r.json()
        self.assertTrue(body["configured"])
        self.assertEqual(body["options"], opts)
        queues = self.client.get("/api/v1/resources/queues").json()["queues"]
        self.assertEqual([q["name"] for q in queues], ["cfg"])
        detail = self.client.get("/api/v1/resources/queues/cfg")
        self.assertEqual(detail.status, 200)
        self.assertEqual(self.client.get("/api/v1/resources/queues/none").status, 404)
        d = self.client.delete("/api/v1/resources/queues/cfg").json()
        self.assertTrue(d["deleted"])
        self.assertTrue(d["existed"])

    def test_max_size_rejects_pushes_beyond_it(self):
        self.client.post("/api/v1/configure", {"queue": "small", "options": {"maxSize": 2}})
        r = self.client.push("small", ["a", "b", "c"]).json()
        self.assertEqual([i["status"] for i in r[:2]], ["queued", "queued"])
        self.assertEqual(r[2]["status"], "failed")
        self.assertTrue(r[2].get("error"))

    def test_health_ready_and_metrics(self):
        h = self.client.get("/health")
        self.assertEqual(h.status, 200)
        self.assertEqual(h.json()["status"], "healthy")
        self.assertEqual(self.client.get("/ready").status, 200)
        self.client.push("m", ["a"])
        prom = self.client.get("/metrics/prometheus")
        self.assertEqual(prom.status, 200)
        self.assertTrue(prom.headers["content-type"].startswith("text/plain"))
        self.assertIn("queen_log_fsync_latency_seconds_bucket", prom.body)
        # Every series once: a repeated (name, labels) pair is dropped by Prometheus.
        series = [line.rsplit(" ", 1)[0] for line in prom.body.splitlines()
                  if line and not line.startswith("#")]
        self.assertEqual(sorted(set(s for s in series if series.count(s) > 1)), [])
        self.assertEqual(self.client.get("/metrics").status, 200)

    def test_checkpoints_make_the_state_durable(self):
        # store.sync_mode = checkpoint (default): the maintenance thread takes an LMDB checkpoint
        # every state_sync_interval_ms; the metrics show it and the data dir holds its meta page.
        self.client.push("m", ["a"])
        # The answer leaves before the LMDB commit that moves applied_index (up to
        # tenant.state_commit_interval_us later, more on a loaded machine): wait for it.
        wait_until(lambda: metric(self.client.get("/metrics/prometheus").body,
                                  "queen_tenant_applied_index") >= 1,
                   what="the push committed to LMDB")
        applied = metric(self.client.get("/metrics/prometheus").body, "queen_tenant_applied_index")
        wait_until(lambda: metric(self.client.get("/metrics/prometheus").body,
                                  "queen_state_durable_index") >= applied,
                   what="a checkpoint covering the push")
        body = self.client.get("/metrics/prometheus").body
        self.assertGreaterEqual(metric(body, "queen_state_checkpoints_total"), 1)
        self.assertGreater(metric(body, "queen_state_checkpoint_seconds_total"), 0)
        meta = os.path.join(self.server.data_dir, "tenants", "default", "state", "checkpoint.meta")
        self.assertTrue(os.path.isfile(meta), meta)

    def test_a_default_broker_serves_encrypted_queues(self):
        # The node created its key at start (test_encryption.py covers the key and the storage).
        self.client.post("/api/v1/configure", {"queue": "secret", "options": {"encryptionEnabled": True}})
        self.assertEqual(self.client.push("secret", [{"card": "4111"}]).status, 201)
        self.assertEqual(names(self.client.pop("secret", wait=False)), [{"card": "4111"}])


class Encryption(ServerTestCase):
    settings = {"security.encryption_key": "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"}

    def test_payloads_are_encrypted_at_rest(self):
        import glob
        import os
        self.client.post("/api/v1/configure", {"queue": "secret", "options": {"encryptionEnabled": True}})
        marker = "plaintext-marker-4111111111111111"
        self.assertEqual(self.client.push("secret", [{"card": marker}]).status, 201)
        self.assertEqual(names(self.client.pop("secret", wait=False)), [{"card": marker}])
        self.server.stop()
        for path in glob.glob(os.path.join(self.server.data_dir, "tenants/*/*/*")):
            with open(path, "rb") as f:
                self.assertNotIn(marker.encode(), f.read(), path)
        self.server.start()


if __name__ == "__main__":
    unittest.main()


class ConcurrentLongPolls(ServerTestCase):
    def test_parked_consumers_receive_every_message_exactly_once(self):
        import threading
        total = 200
        received = []
        lock = threading.Lock()
        stop = threading.Event()

        def consume():
            c = self.server.client()
            while not stop.is_set():
                r = c.pop("lpq", wait=True, timeout=2000, autoAck=True, batch=3)
                if r.status == 200:
                    with lock:
                        received.extend(m["data"] for m in r.json()["messages"])
                        if len(received) >= total:
                            stop.set()
            c.close()
        consumers = [threading.Thread(target=consume) for _ in range(8)]
        for t in consumers:
            t.start()
        for i in range(total):
            self.assertEqual(self.client.push("lpq", [i], partition=f"p{i % 5}").status, 201)
        for t in consumers:
            t.join(60)
        self.assertEqual(sorted(received), list(range(total)))
