"""tests/integration/test_durability.py — a SIGKILL loses nothing that was acknowledged.

Many concurrent clients push (each to its own partitions, with its own increasing sequence
numbers as transactionIds); the server is SIGKILLed at a random moment; after a restart every
push answered `queued` must be there exactly once and in order per partition. Several seeds."""
import random
import threading
import time
import unittest

from harness import Server, seed_from_env

CLIENTS = 8
PARTITIONS_PER_CLIENT = 2


def producer(server, round_number, client_id, stop, acked, rng_seed):
    rng = random.Random(rng_seed)
    c = server.client(timeout=10)
    seq = 0
    while not stop.is_set():
        partition = f"c{client_id}-p{rng.randrange(PARTITIONS_PER_CLIENT)}"
        batch = rng.randint(1, 20)
        items = []
        for _ in range(batch):
            seq += 1
            items.append({"queue": "durable", "partition": partition, "transactionId": f"r{round_number}-{client_id}-{seq}",
                          "payload": {"client": client_id, "seq": seq}})
        try:
            r = c.post("/api/v1/push", {"items": items})
        except Exception:
            return  # the server died mid-request: that batch was never acknowledged
        if r.status != 201:
            return
        for item, result in zip(items, r.json()):
            if result["status"] == "queued":
                acked.append((partition, item["transactionId"], item["payload"]["seq"]))


class Durability(unittest.TestCase):
    def test_sigkill_during_concurrent_pushes_loses_nothing_acknowledged(self):
        seed = seed_from_env()
        rng = random.Random(seed)
        server = Server()
        try:
            server.start()
            for round_number in range(3):
                stop = threading.Event()
                acked = []
                threads = [threading.Thread(target=producer, args=(server, round_number, i, stop, acked, rng.random()))
                           for i in range(CLIENTS)]
                for t in threads:
                    t.start()
                time.sleep(rng.uniform(0.2, 1.5))  # the random moment of the crash (not a wait for an event)
                server.kill()
                stop.set()
                for t in threads:
                    t.join(30)
                server.start()
                c = server.client()
                stored = {}
                while True:
                    r = c.pop("durable", batch=1000, partitions=100, wait=False, autoAck=True,
                              consumerGroup=f"check{round_number}")
                    if r.status == 204:
                        break
                    for m in r.json()["messages"]:
                        stored.setdefault(m["partition"], []).append((m["transactionId"], m["data"]["seq"]))
                c.close()
                all_ids = [tid for items in stored.values() for tid, _ in items]
                self.assertEqual(len(all_ids), len(set(all_ids)), f"seed={seed}: a message is stored twice")
                for partition, items in stored.items():
                    for r_done in range(round_number + 1):
                        seqs = [s for tid, s in items if tid.startswith(f"r{r_done}-")]
                        self.assertEqual(seqs, sorted(seqs), f"seed={seed}: partition {partition} out of order")
                present = set(all_ids)
                missing = [a for a in acked if a[1] not in present]
                self.assertEqual(missing, [], f"seed={seed} round={round_number}: acknowledged pushes lost")
                self.assertGreater(len(acked), 0, f"seed={seed}: nothing was acknowledged before the kill")
                print(f"round {round_number}: {len(acked)} acknowledged, {len(all_ids)} stored", flush=True)
        finally:
            server.cleanup()


if __name__ == "__main__":
    unittest.main()
