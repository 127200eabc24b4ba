"""tests/integration/test_options.py — queue options and background sweeps against a real server.

The server runs with a 200 ms sweep interval (see harness.Server), so retention, ttl and
maxWaitTimeSeconds eviction are observable within seconds. Waits use long polls or poll state
that only a sweep can change."""
import time
import unittest

from harness import Server, ServerTestCase, wait_until


def names(resp):
    return [m["data"] for m in resp.json()["messages"]] if resp.status == 200 else []


class Options(ServerTestCase):
    def configure(self, queue, **options):
        r = self.client.post("/api/v1/configure", {"queue": queue, "options": options})
        self.assertEqual(r.status, 200, r)

    def test_delayed_processing_hides_messages_until_due(self):
        self.configure("delayed", delayedProcessing=1)
        self.client.push("delayed", ["later"])
        self.assertEqual(self.client.pop("delayed", wait=False).status, 204)
        start = time.monotonic()
        r = self.client.pop("delayed", wait=True, timeout=10000)  # woken when it becomes due
        self.assertEqual(names(r), ["later"])
        self.assertGreaterEqual(time.monotonic() - start, 0.5)

    def test_window_buffer_waits_for_the_partition_to_go_quiet(self):
        self.configure("window", windowBuffer=1)
        self.client.push("window", ["a", "b"])
        self.assertEqual(self.client.pop("window", wait=False).status, 204)
        r = self.client.pop("window", batch=10, wait=True, timeout=10000)
        self.assertEqual(names(r), ["a", "b"])

    def test_auto_ack_consumes_on_delivery(self):
        self.client.push("auto", ["a", "b"])
        r = self.client.pop("auto", autoAck=True, wait=False).json()
        self.assertEqual(r["leaseId"], "")
        self.assertEqual(names(self.client.pop("auto", batch=10, wait=False)), ["b"])

    def test_retention_deletes_old_messages(self):
        self.configure("ret", retentionEnabled=True, retentionSeconds=1)
        self.client.push("ret", ["old"])
        wait_until(lambda: self.client.get("/api/v1/resources/queues/ret").json()["totals"]["total"] == 0,
                   timeout=20, interval=0.2, what="retention to delete the message")
        self.assertEqual(self.client.pop("ret", wait=False).status, 204)

    def test_completed_retention_deletes_only_consumed_messages(self):
        self.configure("cret", retentionEnabled=True, completedRetentionSeconds=1)
        self.client.push("cret", ["done", "pending"], partition="p")
        r = self.client.pop("cret", partition="p", wait=False).json()
        m = r["messages"][0]
        self.client.ack(m["transactionId"], m["partitionId"], lease_id=r["leaseId"])

        def done_gone():
            detail = self.client.get("/api/v1/resources/queues/cret").json()
            return detail["totals"]["total"] == 1
        wait_until(done_gone, timeout=20, interval=0.2, what="completed retention")
        self.assertEqual(names(self.client.pop("cret", partition="p", wait=False)), ["pending"])

    def test_max_wait_time_evicts_unconsumed_messages(self):
        self.configure("evict", maxWaitTimeSeconds=1)
        self.client.push("evict", ["stale"])
        wait_until(lambda: self.client.get("/api/v1/resources/queues/evict").json()["totals"]["total"] == 0,
                   timeout=20, interval=0.2, what="eviction")
        self.assertEqual(self.client.pop("evict", wait=False).status, 204)

    def test_subscription_from_a_timestamp(self):
        self.client.push("from", ["before"])
        cutoff = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(time.time() + 1)) + ".000Z"
        time.sleep(1.2)  # createdAt has millisecond resolution: put the next push after the cutoff
        self.client.push("from", ["after"])
        r = self.client.pop("from", consumerGroup="ts", subscriptionFrom=cutoff, batch=10, wait=False)
        self.assertEqual(names(r), ["after"])

    def test_seek_one_partition_to_end_and_group_delete_for_a_queue(self):
        self.client.push("sp", ["a", "b"], partition="p")
        r = self.client.pop("sp", consumerGroup="g", wait=False).json()
        self.assertEqual(len(r["messages"]), 1)
        s = self.client.post("/api/v1/consumer-groups/g/queues/sp/partitions/p/seek")
        self.assertEqual(s.status, 200, s)
        self.assertTrue(s.json()["updated"])
        self.assertEqual(self.client.pop("sp", consumerGroup="g", wait=False).status, 204)
        d = self.client.delete("/api/v1/consumer-groups/g/queues/sp")
        self.assertEqual(d.status, 200)
        self.assertEqual(names(self.client.pop("sp", consumerGroup="g", batch=10, wait=False)), ["a", "b"])
        missing = self.client.post("/api/v1/consumer-groups/g/queues/sp/partitions/nope/seek")
        self.assertGreaterEqual(missing.status, 400)

    def test_message_detail_delete_and_traces(self):
        pushed = self.client.push("detail", [{"x": 1}], transaction_ids=["tx1"]).json()[0]
        pid = pushed["partition_id"]
        d = self.client.get(f"/api/v1/messages/{pid}/tx1")
        self.assertEqual(d.status, 200, d)
        self.assertEqual(d.json()["payload"], {"x": 1})
        t = self.client.post("/api/v1/traces", {"transactionId": "tx1", "partitionId": pid, "data": {"step": 1},
                                                "traceNames": ["order-1"]})
        self.assertEqual(t.status, 201, t)
        traces = self.client.get(f"/api/v1/traces/{pid}/tx1").json()["traces"]
        self.assertEqual(traces[0]["data"], {"step": 1})
        by_name = self.client.get("/api/v1/traces/by-name/order-1").json()
        self.assertEqual(by_name["total"], 1)
        self.assertEqual(by_name["traces"][0]["transaction_id"], "tx1")
        self.assertEqual(by_name["traces"][0]["message_payload"], {"x": 1})
        names = self.client.get("/api/v1/traces/names").json()
        self.assertEqual([n["trace_name"] for n in names["trace_names"]], ["order-1"])
        self.assertEqual(names["trace_names"][0]["trace_count"], 1)
        gone = self.client.delete(f"/api/v1/messages/{pid}/tx1").json()
        self.assertTrue(gone["success"])
        self.assertEqual(self.client.get(f"/api/v1/messages/{pid}/tx1").status, 404)


class Restart(unittest.TestCase):
    def test_state_cursors_and_leases_survive_a_restart(self):
        with Server() as server:
            c = server.client()
            c.post("/api/v1/configure", {"queue": "keep", "options": {"leaseTime": 300}})
            c.push("keep", ["a", "b", "c"])
            first = c.pop("keep", wait=False).json()
            m = first["messages"][0]
            c.ack(m["transactionId"], m["partitionId"], lease_id=first["leaseId"])  # releases (batch of 1)
            second = c.pop("keep", wait=False).json()  # leases "b"
            c.close()
            server.kill()  # SIGKILL: no clean shutdown
            server.start()
            c = server.client()
            self.assertEqual(c.pop("keep", wait=False).status, 204, "the lease on b must survive")
            m = second["messages"][0]
            ack = c.ack(m["transactionId"], m["partitionId"], lease_id=second["leaseId"]).json()[0]
            self.assertTrue(ack["success"], ack)
            self.assertEqual(names(c.pop("keep", batch=10, wait=False)), ["c"])
            c.close()


if __name__ == "__main__":
    unittest.main()
