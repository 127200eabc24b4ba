"""tests/integration/test_compat.py — what the official clients rely on, against a real
`queen serve`: UUIDv7 message ids, GET /api/v1/pop of a namespace/task (long polls included) and
the `total` of GET /api/v1/dlq."""
import threading
import time

from harness import ServerTestCase, wait_until


def uuid_ms(text):
    """The Unix ms time in the first 48 bits of a UUID text."""
    return int(text[0:8] + text[9:13], 16)


def configure(client, queue, namespace, task, priority):
    r = client.post("/api/v1/configure", {"queue": queue, "namespace": namespace, "task": task,
                                          "options": {"priority": priority}})
    assert r.status == 200, r


class MessageIds(ServerTestCase):
    def test_ids_are_uuidv7_in_push_order_and_survive_a_restart(self):
        before = int(time.time() * 1000)
        first = self.client.push("ids", [1, 2, 3]).json()
        second = self.client.push("ids", [4]).json()
        after = int(time.time() * 1000)
        ids = [item["message_id"] for item in first + second]
        for text in ids:
            self.assertEqual(len(text), 36)
            self.assertEqual(text[14], "7", text)  # version 7
            self.assertIn(text[19], "89ab", text)  # variant 0b10
            self.assertGreaterEqual(uuid_ms(text), before - 1)
            self.assertLessEqual(uuid_ms(text), after + 1)
        self.assertEqual(ids, sorted(ids))
        self.assertEqual(len(set(ids)), 4)
        # The id comes from the log entry: a restarted server (replaying its log, or reading
        # its state) prints the same ids.
        self.client.close()
        self.assertEqual(self.server.stop(), 0)
        self.server.start()
        self.client = self.server.client()
        popped = self.client.pop("ids", batch=10, wait=False).json()
        self.assertEqual([m["id"] for m in popped["messages"]], ids)
        self.assertEqual({m["queue"] for m in popped["messages"]}, {"ids"})
        again = self.client.push("ids", [1], transaction_ids=[first[0]["transaction_id"]]).json()
        self.assertEqual(again[0]["status"], "duplicate")
        self.assertEqual(again[0]["message_id"], ids[0])


class NamespacePop(ServerTestCase):
    def test_a_namespace_or_task_pop_serves_matching_queues_by_priority(self):
        configure(self.client, "low", "shop", "mail", 1)
        configure(self.client, "high", "shop", "bill", 7)
        configure(self.client, "misc", "other", "mail", 3)
        for queue in ("low", "high", "misc"):
            self.assertEqual(self.client.push(queue, [queue]).status, 201)
        r = self.client.get("/api/v1/pop?namespace=shop&batch=10")
        self.assertEqual(r.status, 200, r)
        body = r.json()
        self.assertEqual(body["queue"], "high")
        self.assertEqual([m["data"] for m in body["messages"]], ["high"])
        self.assertEqual(body["messages"][0]["queue"], "high")
        # The same shape as a queue pop.
        queue_pop = self.client.pop("misc", wait=False).json()
        self.assertEqual(set(body), set(queue_pop))
        self.assertEqual(set(body["messages"][0]), set(queue_pop["messages"][0]))
        ack = self.client.ack(body["messages"][0]["transactionId"], body["messages"][0]["partitionId"],
                              lease_id=body["leaseId"]).json()
        self.assertTrue(ack[0]["success"], ack)
        r = self.client.get("/api/v1/pop?task=mail&consumerGroup=g&autoAck=true")
        self.assertEqual(r.json()["queue"], "misc")  # priority 3 before low's 1
        r = self.client.get("/api/v1/pop?namespace=shop&task=mail&consumerGroup=g")
        self.assertEqual(r.json()["queue"], "low")
        self.assertEqual(self.client.get("/api/v1/pop?namespace=nobody").status, 204)
        r = self.client.get("/api/v1/pop?batch=1")
        self.assertEqual(r.status, 400, r)
        self.assertIn("namespace or task", r.json()["error"])

    def test_a_namespace_long_poll_is_woken_by_a_push_to_a_matching_queue(self):
        result = {}

        def pop():
            c = self.server.client()
            start = time.monotonic()
            result["resp"] = c.get("/api/v1/pop?namespace=lpns&wait=true&timeout=20000")
            result["elapsed"] = time.monotonic() - start
            c.close()
        t = threading.Thread(target=pop)
        t.start()
        wait_until(lambda: "queen_longpoll_parked 1" in self.client.get("/metrics/prometheus").body,
                   what="the pop to park")
        # Another namespace does not answer it; a new queue whose name puts it in the namespace
        # does.
        self.client.push("elsewhere", ["no"])
        self.client.push("lpns.jobs", ["hello"])
        t.join(30)
        self.assertFalse(t.is_alive())
        self.assertEqual(result["resp"].status, 200, result["resp"])
        body = result["resp"].json()
        self.assertEqual(body["queue"], "lpns.jobs")
        self.assertEqual([m["data"] for m in body["messages"]], ["hello"])
        self.assertLess(result["elapsed"], 19)


class DeadLetterTotal(ServerTestCase):
    def test_the_dlq_listing_answers_the_total_of_its_filters(self):
        for queue, count in (("a", 3), ("b", 1)):
            self.client.push(queue, list(range(count)))
            for _ in range(count):
                m = self.client.pop(queue, wait=False).json()["messages"][0]
                r = self.client.ack(m["transactionId"], m["partitionId"], status="dlq", lease_id=m["leaseId"])
                self.assertTrue(r.json()[0]["dlq"], r)
        body = self.client.get("/api/v1/dlq?limit=2").json()
        self.assertEqual(body["total"], 4)
        self.assertEqual(len(body["messages"]), 2)
        body = self.client.get("/api/v1/dlq?queue=a&limit=1&offset=2").json()
        self.assertEqual(body["total"], 3)
        self.assertEqual(len(body["messages"]), 1)
        self.assertEqual(self.client.get("/api/v1/dlq?queue=b").json()["total"], 1)
        self.assertEqual(self.client.get("/api/v1/dlq?consumerGroup=nobody").json()["total"], 0)
