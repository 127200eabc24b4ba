"""tests/integration/test_pop_fairness.py — many partitions, 8 concurrent consumers, a producer.

A real `queen serve`: 2,000 partitions each start with messages, 8 consumer threads pop with
partitions=16 over HTTP (each acks its batch before its next pop) while a producer thread keeps
pushing to random partitions. Checks, by counts only: every partition's messages reach the
consumers in push order (across consumers too: a partition is leased to one at a time, so each
delivery of a partition starts where the previous one ended), every message exactly once, and
every partition served. The bound on how long a partition waits is proven at the state level
(modules/queues/tests/fairness_test.cpp); docs/http-api.md, "How pops choose partitions"."""
import random
import threading
import unittest

from harness import ServerTestCase, seed_from_env

QUEUE = "fair"
PARTITIONS = 2000
INITIAL_PER_PARTITION = 2
PRODUCED = 16000  # pushed by the producer while the consumers run
PUSH_BATCH = 50
CONSUMERS = 8
POP_PARTITIONS = 16
POP_BATCH = 100


def partition_name(i):
    return f"p{i:04d}"


class PopFairness(ServerTestCase):
    def test_concurrent_consumers_get_every_partition_in_order_and_all_served(self):
        seed = seed_from_env()
        rng = random.Random(seed)
        pushed = [0] * PARTITIONS  # per partition: the sequence the producer gave its last message
        lock = threading.Lock()
        last_seen = {}  # partition name -> the last sequence delivered (to any consumer)
        serves = {}  # partition name -> deliveries
        per_consumer = [dict() for _ in range(CONSUMERS)]  # partition -> sequences, as received
        errors = []
        delivered = [0]
        pops = [0]
        delivered_while_producing = [0]
        total = PARTITIONS * INITIAL_PER_PARTITION + PRODUCED
        done = threading.Event()
        producer_done = threading.Event()

        def items_for(indices):
            items = []
            for i in indices:
                pushed[i] += 1
                items.append({"queue": QUEUE, "partition": partition_name(i),
                              "transactionId": f"{partition_name(i)}-{pushed[i]}",
                              "payload": {"p": partition_name(i), "s": pushed[i]}})
            return items

        def push(client, indices):
            r = client.post("/api/v1/push", {"items": items_for(indices)})
            if r.status != 201 or any(item["status"] != "queued" for item in r.json()):
                raise AssertionError(f"push failed: {r}")

        setup = [i for i in range(PARTITIONS) for _ in range(INITIAL_PER_PARTITION)]
        for start in range(0, len(setup), 1000):
            push(self.client, setup[start:start + 1000])

        def produce():
            client = self.server.client()
            try:
                for _ in range(PRODUCED // PUSH_BATCH):
                    push(client, [rng.randrange(PARTITIONS) for _ in range(PUSH_BATCH)])
            except Exception as e:  # reported by the main thread
                errors.append(f"producer: {e!r}")
                done.set()
            finally:
                with lock:
                    delivered_while_producing[0] = delivered[0]
                producer_done.set()
                client.close()

        def consume(number):
            client = self.server.client()
            try:
                while not done.is_set():
                    r = client.pop(QUEUE, batch=POP_BATCH, partitions=POP_PARTITIONS, wait=True, timeout=1000)
                    if r.status == 204:
                        continue
                    if r.status != 200:
                        raise AssertionError(f"pop answered {r}")
                    body = r.json()
                    messages = body["messages"]
                    runs = {}  # partition -> sequences of this answer, in answer order
                    for m in messages:
                        runs.setdefault(m["partition"], []).append(m["data"]["s"])
                    if len(runs) > POP_PARTITIONS or body["partitionsClaimed"] != len(runs):
                        raise AssertionError(f"{len(runs)} partitions in one pop: {body['partitionsClaimed']}")
                    with lock:
                        for partition, sequences in runs.items():
                            # The lease is released only by this consumer's ack below, so any
                            # earlier delivery of the partition was recorded before this one.
                            expected = list(range(last_seen.get(partition, 0) + 1,
                                                  last_seen.get(partition, 0) + 1 + len(sequences)))
                            if sequences != expected:
                                raise AssertionError(f"consumer {number} got {partition} {sequences}, expected {expected}")
                            last_seen[partition] = sequences[-1]
                            serves[partition] = serves.get(partition, 0) + 1
                            per_consumer[number].setdefault(partition, []).extend(sequences)
                        delivered[0] += len(messages)
                        pops[0] += 1
                        if delivered[0] >= total:
                            done.set()
                    acks = [{"transactionId": m["transactionId"], "partitionId": m["partitionId"],
                             "status": "completed", "leaseId": body["leaseId"]} for m in messages]
                    a = client.post("/api/v1/ack/batch", {"acknowledgments": acks})
                    if a.status != 200 or not all(item["success"] for item in a.json()):
                        raise AssertionError(f"ack failed: {a}")
            except Exception as e:  # reported by the main thread
                errors.append(f"consumer {number}: {e!r}")
                done.set()
            finally:
                client.close()

        threads = [threading.Thread(target=consume, args=(n,)) for n in range(CONSUMERS)]
        threads.append(threading.Thread(target=produce))
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        self.assertFalse(any(t.is_alive() for t in threads), "a thread did not finish")
        self.assertEqual(errors, [], f"seed {seed}")
        self.assertTrue(producer_done.is_set())

        print(f"{pops[0]} pops delivered {delivered[0]} messages, {delivered_while_producing[0]} of them "
              f"while the producer pushed; serves per partition {min(serves.values())}-{max(serves.values())}",
              flush=True)
        # Every message exactly once and in order: each partition's last delivered sequence is
        # its last pushed one, and the deliveries counted add up to what was pushed.
        self.assertEqual(delivered[0], total)
        for i in range(PARTITIONS):
            self.assertEqual(last_seen.get(partition_name(i), 0), pushed[i], partition_name(i))
        # Every partition served, and each consumer's own view of a partition is increasing.
        self.assertEqual(len(serves), PARTITIONS)
        for number, partitions in enumerate(per_consumer):
            for partition, sequences in partitions.items():
                self.assertEqual(sequences, sorted(set(sequences)), f"consumer {number} {partition}")
        # The work was shared: all 8 consumers got partitions.
        self.assertTrue(all(per_consumer), [len(p) for p in per_consumer])
        # Nothing left: the queue is drained for the group.
        self.assertEqual(self.client.pop(QUEUE, batch=10, partitions=POP_PARTITIONS, wait=False).status, 204)


if __name__ == "__main__":
    unittest.main()
