"""tests/integration/test_durability.py — a SIGKILL loses nothing that was acknowledged, and a bit
flipped in an applied log record stops the start without changing a file.

Many concurrent clients push (each to its own partitions, with its own increasing sequence
numbers as transactionIds); the server is SIGKILLed at a random moment; after a restart every
push answered `queued` must be there exactly once and in order per partition. Several seeds."""
import glob
import os
import random
import struct
import subprocess
import threading
import time
import unittest

from harness import QUEEN_BIN, Server, seed_from_env

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


SEGMENT_HEADER_BYTES = 40
RECORD_HEADER_BYTES = 28  # crc(4) payload_size(4) term(8) index(8) type(1) reserved(3)


def record_offsets(segment):
    """Offsets of the records of a segment file's bytes, up to the writer's zero-filled tail."""
    offsets = []
    at = SEGMENT_HEADER_BYTES
    while at + RECORD_HEADER_BYTES <= len(segment):
        crc, size = struct.unpack_from("<II", segment, at)
        if crc == 0 and size == 0:
            break
        offsets.append(at)
        at += RECORD_HEADER_BYTES + size
    return offsets


def files_under(directory):
    """Every file's bytes but LMDB's lock file (a reader table every open rewrites, no data)."""
    files = {}
    for root, _, names in os.walk(directory):
        for name in names:
            if name == "lock.mdb":
                continue
            path = os.path.join(root, name)
            with open(path, "rb") as f:
                files[path] = f.read()
    return files


class StorageDamage(unittest.TestCase):
    def test_a_bit_flipped_in_an_applied_log_record_stops_the_start_and_changes_no_file(self):
        server = Server()
        try:
            server.start()
            c = server.client()
            r = c.push("damage", [{"n": i} for i in range(5)], partition="p")
            self.assertEqual(r.status, 201, r)
            c.close()
            server.stop()  # a clean stop: LMDB holds every entry the log holds
            newest = sorted(glob.glob(os.path.join(server.data_dir, "**", "*.seg"), recursive=True))[-1]
            with open(newest, "rb") as f:
                original = f.read()
            offsets = record_offsets(original)
            self.assertTrue(offsets, f"no record in {newest}")
            damaged = bytearray(original)
            damaged[offsets[-1] + RECORD_HEADER_BYTES] ^= 0x20  # the newest record's payload
            with open(newest, "wb") as f:
                f.write(damaged)
            before = files_under(server.data_dir)
            out = subprocess.run([QUEEN_BIN, "serve", "--data-dir", server.data_dir, "--set", "http.address=127.0.0.1",
                                  "--set", "http.port=0"], capture_output=True, text=True, timeout=60)
            output = out.stdout + out.stderr
            self.assertNotEqual(out.returncode, 0, output)
            self.assertIn("no file was changed", output)
            self.assertIn(os.path.basename(newest), output)
            after = files_under(server.data_dir)
            changed = sorted(path for path in set(before) | set(after) if before.get(path) != after.get(path))
            self.assertEqual(changed, [], "the refused start changed these files")
            # The operator restores the segment (e.g. from a copy): everything is there again.
            with open(newest, "wb") as f:
                f.write(original)
            server.start()
            c = server.client()
            r = c.pop("damage", partition="p", batch=10, wait=False)
            self.assertEqual(r.status, 200, r)
            self.assertEqual([m["data"]["n"] for m in r.json()["messages"]], list(range(5)))
            c.close()
        finally:
            server.cleanup()
