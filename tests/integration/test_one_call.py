"""The one call on a real `queen serve`: a worker's ack, KV write, next push and reminder in one
transaction survive a SIGKILL right after the answer; delayed pushes; request/reply over an
ephemeral queue; ephemeral queues delete themselves."""

import datetime
import threading
import time
import unittest

from harness import Server, ServerTestCase, wait_until


def transaction(client, operations):
    return client.post("/api/v1/transaction", {"operations": operations})


def created_ms(message):
    """A popped message's createdAt ("...SS.ffffffZ") in epoch milliseconds."""
    moment = datetime.datetime.strptime(message["createdAt"], "%Y-%m-%dT%H:%M:%S.%fZ")
    return int(moment.replace(tzinfo=datetime.timezone.utc).timestamp() * 1000)


def take_one(client, queue, timeout_ms=10000):
    """Long-polls `queue` for one message (auto-ack) and returns it, or None."""
    r = client.pop(queue, wait=True, timeout=timeout_ms, autoAck=True)
    if r.status == 204:
        return None
    assert r.status == 200, r
    return r.json()["messages"][0]


class OneCallTest(ServerTestCase):
    def test_four_step_worker_survives_sigkill_after_the_answer(self):
        c = self.client
        self.assertEqual(c.push("orders", [{"id": 1}], transaction_ids=["o1"]).status, 201)
        popped = c.pop("orders").json()["messages"][0]
        started = time.time() * 1000
        r = transaction(c, [
            {"type": "ack", "transactionId": popped["transactionId"],
             "partitionId": popped["partitionId"], "leaseId": popped["leaseId"]},
            {"type": "kv.set", "bucket": "orders", "key": "1", "value": {"state": "paid"}},
            {"type": "push", "items": [{"queue": "shipping", "payload": {"order": 1},
                                        "transactionId": "ship-1"}]},
            {"type": "timer.set", "id": "remind-1", "queue": "reminders",
             "payload": {"order": 1}, "delayMs": 1500},
        ])
        self.assertEqual(r.status, 200, r)
        answer = r.json()
        self.assertTrue(answer["success"], answer)
        version = answer["results"][1]["version"]
        self.assertGreater(version, 0)
        self.assertEqual(answer["results"][3]["timerId"], "remind-1")
        # SIGKILL right after the answer, then a restart on the same data.
        c.close()
        self.server.kill()
        self.server.start()
        c = self.client = self.server.client()
        # All four effects are there, once: the order is acked, the key holds the version the
        # answer named, the next event is queued once, the reminder fires once.
        self.assertEqual(c.pop("orders").status, 204)
        check = transaction(c, [{"type": "kv.check", "bucket": "orders", "key": "1",
                                 "expectedVersion": version}])
        self.assertEqual(check.status, 200, check)
        self.assertTrue(check.json()["success"])
        shipped = take_one(c, "shipping", 5000)
        self.assertEqual(shipped["data"], {"order": 1})
        self.assertIsNone(take_one(c, "shipping", 200))
        reminder = take_one(c, "reminders", 20000)
        self.assertIsNotNone(reminder, "the reminder never fired")
        self.assertEqual(reminder["data"], {"order": 1})
        self.assertEqual(reminder["transactionId"], "remind-1#1")
        self.assertIsNone(take_one(c, "reminders", 500))
        # A version that does not match is a conflict: 409, naming the operation.
        again = transaction(c, [{"type": "kv.set", "bucket": "orders", "key": "1",
                                 "value": 2, "expectedVersion": version + 1000}])
        self.assertEqual(again.status, 409, again)
        body = again.json()
        self.assertEqual(body["reason"], "conflict")
        self.assertEqual(body["failedIndex"], 0)
        self.assertGreaterEqual(time.time() * 1000 - started, 1500)

    def test_next_pops_the_following_message_in_the_same_call(self):
        c = self.client
        self.assertEqual(c.push("jobs", [{"n": i} for i in range(3)], partition="p").status, 201)
        answer = c.pop("jobs", partition="p").json()
        seen = []
        # The worker's whole loop is one call: ack, state, next event, and the next message.
        while answer["messages"]:
            message = answer["messages"][0]
            seen.append(message["data"]["n"])
            r = c.post("/api/v1/transaction", {
                "operations": [
                    {"type": "ack", "transactionId": message["transactionId"],
                     "partitionId": message["partitionId"], "leaseId": answer["leaseId"]},
                    {"type": "kv.set", "bucket": "progress", "key": "jobs", "value": message["data"]["n"]},
                    {"type": "push", "items": [{"queue": "done", "payload": message["data"]}]},
                ],
                "next": {"queue": "jobs", "partition": "p"},
            })
            self.assertEqual(r.status, 200, r)
            self.assertTrue(r.json()["success"], r)
            answer = r.json()["next"]
            self.assertLessEqual(len(answer["messages"]), 1)
        self.assertEqual(seen, [0, 1, 2])
        self.assertEqual(answer["leaseId"], "")  # the last next found nothing and leased nothing
        self.assertEqual(c.get("/api/v1/kv/progress/jobs").json()["value"], 2)
        detail = c.get("/api/v1/resources/queues/jobs").json()["totals"]
        self.assertEqual((detail["pending"], detail["processing"], detail["completed"]), (0, 0, 3))
        self.assertEqual(c.get("/api/v1/resources/queues/done").json()["totals"]["pending"], 3)

    def test_a_refused_call_pops_nothing_and_a_bad_next_changes_nothing(self):
        c = self.client
        self.assertEqual(c.push("jobs", [{"n": 0}, {"n": 1}], partition="p").status, 201)
        answer = c.pop("jobs", partition="p").json()
        message = answer["messages"][0]
        ack = {"type": "ack", "transactionId": message["transactionId"],
               "partitionId": message["partitionId"], "leaseId": answer["leaseId"]}
        before = c.get("/api/v1/resources/queues/jobs").json()["totals"]
        self.assertEqual((before["processing"], before["completed"]), (1, 0))
        refused = c.post("/api/v1/transaction", {
            "operations": [ack, {"type": "kv.check", "bucket": "b", "key": "k", "expectedVersion": 9}],
            "next": {"queue": "jobs", "partition": "p"}})
        self.assertEqual(refused.status, 409, refused)
        self.assertNotIn("next", refused.json())
        for bad in ({"queue": ""}, {"partition": "p"}, {"queue": "jobs", "batch": 0}, [], "jobs",
                    {"queue": "jobs", "consumerGroup": 3}):
            r = c.post("/api/v1/transaction", {"operations": [ack], "next": bad})
            self.assertEqual(r.status, 400, (bad, r))
            self.assertIn("next", r.json()["error"], (bad, r))
        # Nothing of those happened: the first message is still ours to ack, the second waits.
        self.assertEqual(c.get("/api/v1/resources/queues/jobs").json()["totals"], before)
        done = c.post("/api/v1/transaction", {"operations": [ack], "next": {"queue": "jobs"}})
        self.assertEqual(done.status, 200, done)
        self.assertEqual([m["data"]["n"] for m in done.json()["next"]["messages"]], [1])

    def test_delayed_push_is_invisible_until_due(self):
        c = self.client
        r = transaction(c, [{"type": "push", "items": [
            {"queue": "later", "payload": "soon", "delayMs": 800, "transactionId": "d1"},
            {"queue": "later", "payload": "now", "transactionId": "n1"}]}])
        self.assertEqual(r.status, 200, r)
        results = r.json()["results"]
        self.assertIn("timerId", results[0])
        self.assertIn("messageId", results[1])
        now_message = take_one(c, "later", 100)
        self.assertEqual(now_message["data"], "now")
        message = take_one(c, "later", 10000)
        self.assertIsNotNone(message)
        self.assertEqual(message["data"], "soon")
        self.assertEqual(message["transactionId"], "d1")
        # Never early: created (by the Due entry) at least the delay after the transaction's
        # entry, whose time the other message carries.
        self.assertGreaterEqual(created_ms(message) - created_ms(now_message), 800)

    def test_bad_operations_are_refused_and_change_nothing(self):
        c = self.client
        for op, words in [
            ({"type": "kv.set", "bucket": "b", "value": 1}, "key is required"),
            ({"type": "kv.check", "bucket": "b", "key": "k"}, "expectedVersion is required"),
            ({"type": "timer.set", "id": "t", "queue": "q"}, "at or delayMs"),
            ({"type": "timer.set", "id": "~delay.1.0", "queue": "q", "delayMs": 1}, "server's"),
            ({"type": "lock.release", "name": "L"}, "token is required"),
            ({"type": "kv.set", "bucket": "b", "key": "k", "value": 1, "lock": {"name": "L"}},
             "token is required"),
            ({"type": "nope"}, "Unknown operation type"),
        ]:
            r = transaction(c, [{"type": "push", "items": [{"queue": "q", "payload": 1}]}, op])
            self.assertEqual(r.status, 400, (op, r))
            self.assertIn(words, r.json()["error"], op)
        self.assertEqual(c.pop("q").status, 204)


class RequestReplyTest(ServerTestCase):
    def test_request_gets_the_reply_the_worker_pushes_with_its_ack(self):
        c = self.client
        replied = {}

        def worker():
            w = self.server.client()
            try:
                popped = w.pop("rpc", wait=True, timeout=20000).json()["messages"][0]
                request = popped["data"]
                replied["request"] = request
                r = transaction(w, [
                    {"type": "ack", "transactionId": popped["transactionId"],
                     "partitionId": popped["partitionId"], "leaseId": popped["leaseId"]},
                    {"type": "push", "items": [{"queue": request["replyTo"],
                                                "payload": {"sum": sum(request["body"]["add"])}}]},
                ])
                replied["status"] = r.status
            finally:
                w.close()

        thread = threading.Thread(target=worker)
        thread.start()
        r = c.post("/api/v1/request", {"queue": "rpc", "payload": {"add": [2, 3]}, "timeoutMs": 20000})
        thread.join(30)
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json()["reply"], {"sum": 5})
        self.assertEqual(replied["status"], 200)
        self.assertEqual(r.json()["replyTo"], replied["request"]["replyTo"])
        self.assertEqual(c.pop("rpc").status, 204)  # acked

    def test_request_without_a_worker_times_out_and_its_reply_queue_goes_away(self):
        c = self.client
        r = c.post("/api/v1/request", {"queue": "nobody", "payload": 1, "timeoutMs": 300})
        self.assertEqual(r.status, 504, r)
        self.assertIn("no reply", r.json()["error"])
        self.assertEqual(c.post("/api/v1/request", {"payload": 1}).status, 400)
        self.assertEqual(c.post("/api/v1/request", {"queue": "q", "timeoutMs": 0}).status, 400)


class EphemeralQueueTest(ServerTestCase):
    def test_an_idle_ephemeral_queue_deletes_itself_with_its_messages(self):
        c = self.client
        r = c.post("/api/v1/configure", {"queue": "tmp", "ephemeral": True, "idleTtlMs": 400})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json()["ephemeral"]["idleTtlMs"], 400)
        self.assertEqual(c.push("tmp", ["a", "b"]).status, 201)
        self.assertEqual(c.post("/api/v1/configure", {"queue": "tmp2", "ephemeral": True,
                                                      "idleTtlMs": 0}).status, 400)

        def names():
            return [q["name"] for q in c.get("/api/v1/resources/queues").json()["queues"]]

        self.assertIn("tmp", names())
        wait_until(lambda: "tmp" not in names(), timeout=20, what="the ephemeral queue's deletion")
        self.assertEqual(c.pop("tmp").status, 204)


if __name__ == "__main__":
    unittest.main()
