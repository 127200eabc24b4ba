"""The one call on three `queen serve` nodes: a worker's ack, KV write, next push and reminder
in one transaction, sent to a follower; the leader is SIGKILLed right after the answer; the new
leader has all four effects, once, and fires the reminder once."""

import unittest

from harness import ClusterTestCase


class ClusterOneCallTest(ClusterTestCase):
    def transaction(self, i, operations):
        return self.request(i, "POST", "/api/v1/transaction", body={"operations": operations})

    def take_one(self, i, queue, timeout_ms):
        r = self.request(i, "GET", f"/api/v1/pop/queue/{queue}?wait=true&timeout={timeout_ms}&autoAck=true",
                         timeout=timeout_ms / 1000 + 30)
        if r.status == 204:
            return None
        self.assertEqual(r.status, 200, r)
        return r.json()["messages"][0]

    def test_four_step_worker_across_a_leader_kill(self):
        leader, _ = self.cluster.leader()
        follower = next(i for i in self.cluster.nodes if i != leader)
        r = self.request(follower, "POST", "/api/v1/push",
                         body={"items": [{"queue": "orders", "payload": {"id": 7}, "transactionId": "o7"}]})
        self.assertEqual(r.status, 201, r)
        popped = self.take_one_leased(follower, "orders")
        answer = self.transaction(follower, [
            {"type": "ack", "transactionId": popped["transactionId"],
             "partitionId": popped["partitionId"], "leaseId": popped["leaseId"]},
            {"type": "kv.set", "bucket": "orders", "key": "7", "value": {"state": "paid"}},
            {"type": "push", "items": [{"queue": "shipping", "payload": {"order": 7},
                                        "transactionId": "ship-7"}]},
            {"type": "timer.set", "id": "remind-7", "queue": "reminders",
             "payload": {"order": 7}, "delayMs": 3000},
        ])
        self.assertEqual(answer.status, 200, answer)
        self.assertTrue(answer.json()["success"], answer.json())
        version = answer.json()["results"][1]["version"]
        # SIGKILL the leader right after the answer.
        self.cluster.nodes[leader].kill()
        survivors = [i for i in self.cluster.nodes if i != leader]
        new_leader, _ = self.cluster.leader(among=survivors)
        other = next(i for i in survivors if i != new_leader)
        check = self.transaction(other, [{"type": "kv.check", "bucket": "orders", "key": "7",
                                          "expectedVersion": version}])
        self.assertEqual(check.status, 200, check)
        self.assertTrue(check.json()["success"], check.json())
        r = self.request(other, "GET", "/api/v1/pop/queue/orders")
        self.assertEqual(r.status, 204, r)  # acked
        shipped = self.take_one(other, "shipping", 5000)
        self.assertEqual(shipped["data"], {"order": 7})
        self.assertIsNone(self.take_one(other, "shipping", 200))
        reminder = self.take_one(other, "reminders", 30000)
        self.assertIsNotNone(reminder, "the new leader never fired the reminder")
        self.assertEqual(reminder["transactionId"], "remind-7#1")
        self.assertIsNone(self.take_one(other, "reminders", 1000))

    def test_next_through_a_follower(self):
        # The follower forwards the call; the answer (format 4, with the popped messages) comes
        # back from the leader's apply, and every node applies the same pop.
        leader, _ = self.cluster.leader()
        follower = next(i for i in self.cluster.nodes if i != leader)
        r = self.request(follower, "POST", "/api/v1/push",
                         body={"items": [{"queue": "jobs", "partition": "p", "payload": {"n": n}}
                                         for n in range(2)]})
        self.assertEqual(r.status, 201, r)
        first = self.take_one_leased(follower, "jobs")
        self.assertEqual(first["data"], {"n": 0})
        r = self.request(follower, "GET", "/api/v1/pop/queue/jobs")
        self.assertEqual(r.status, 204, r)  # the pop above leased the partition
        answer = self.request(follower, "POST", "/api/v1/transaction", body={
            "operations": [{"type": "ack", "transactionId": first["transactionId"],
                            "partitionId": first["partitionId"], "leaseId": first["leaseId"]}],
            "next": {"queue": "jobs", "partition": "p"}})
        self.assertEqual(answer.status, 200, answer)
        taken = answer.json()["next"]["messages"]
        self.assertEqual([m["data"] for m in taken], [{"n": 1}])
        self.cluster.wait_applied(leader)
        for i in self.cluster.nodes:  # the same state everywhere: one message left, leased
            totals = self.request(i, "GET", "/api/v1/resources/queues/jobs").json()["totals"]
            self.assertEqual((totals["processing"], totals["completed"]), (1, 1), f"node {i}")

    def take_one_leased(self, i, queue):
        r = self.request(i, "GET", f"/api/v1/pop/queue/{queue}?wait=true&timeout=5000")
        self.assertEqual(r.status, 200, r)
        return r.json()["messages"][0]


if __name__ == "__main__":
    unittest.main()
