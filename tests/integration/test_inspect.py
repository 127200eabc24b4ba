"""tests/integration/test_inspect.py — `queen inspect` reads a real node's files, read-only."""
import glob
import json
import os
import shutil
import struct
import subprocess
import tempfile
import time
import unittest

from harness import QUEEN_BIN, ClusterProcesses, Server


def run(*args):
    return subprocess.run([QUEEN_BIN, *args], capture_output=True, text=True)


def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def hard_state_slot(sequence, term, vote, commit):
    """One 512-byte slot of the hard_state file, as docs/log-format.md lays it out."""
    head = b"QUEENHST" + bytes([1]) + bytes(7) + struct.pack("<QQQQ", sequence, term, vote, commit)
    return (head + struct.pack("<I", crc32c(head))).ljust(512, b"\0")


class Inspect(unittest.TestCase):
    def setUp(self):
        self.server = Server()
        self.server.start()
        c = self.server.client()
        for i in range(20):
            c.push("inspected", [{"i": i, "pad": "x" * 200}], partition=f"p{i % 3}")
        c.close()
        self.server.stop()
        self.log_dir = os.path.join(self.server.data_dir, "tenants/default/log")
        self.state_dir = os.path.join(self.server.data_dir, "tenants/default/state")

    def tearDown(self):
        self.server.cleanup()

    def test_log_verify_passes_then_finds_a_flipped_byte(self):
        ok = run("inspect", "log", self.log_dir, "--verify", "--json")
        self.assertEqual(ok.returncode, 0, ok.stderr)
        report = json.loads(ok.stdout)
        self.assertTrue(report)
        # The writer keeps zeros ahead of its records: a clean end, neither damage nor a torn tail.
        self.assertIsNone(report["torn_tail"])
        self.assertIsNone(report["corruption"])
        last = report["segments"][-1]
        self.assertGreater(last["zero_tail_bytes"], 0)
        self.assertEqual(report["records"], sum(s["records"] for s in report["segments"]))
        segment = sorted(glob.glob(os.path.join(self.log_dir, "*.seg")))[0]
        first = report["segments"][0]
        records_end = first["size_bytes"] - first["zero_tail_bytes"]
        with open(segment, "rb") as f:
            before = f.read()
        with open(segment, "r+b") as f:
            f.seek(records_end // 2)
            b = f.read(1)
            f.seek(records_end // 2)
            f.write(bytes([b[0] ^ 0xFF]))
        bad = run("inspect", "log", self.log_dir, "--verify")
        self.assertEqual(bad.returncode, 4, bad.stdout + bad.stderr)
        self.assertIn(os.path.basename(segment), bad.stdout + bad.stderr)
        self.assertEqual(os.path.getsize(segment), len(before), "inspect must not repair")

    def test_a_bit_flipped_in_the_newest_record_is_corruption_until_repair_cuts_it(self):
        ok = run("inspect", "log", self.log_dir, "--verify", "--json")
        self.assertEqual(ok.returncode, 0, ok.stderr)
        report = json.loads(ok.stdout)
        records = report["records"]
        last = report["segments"][-1]
        newest = last["last_record"]
        segment = os.path.join(self.log_dir, last["file"])
        records_end = last["size_bytes"] - last["zero_tail_bytes"]
        with open(segment, "r+b") as f:
            f.seek(records_end - 1)
            b = f.read(1)
            f.seek(records_end - 1)
            f.write(bytes([b[0] ^ 0x08]))
        with open(segment, "rb") as f:
            damaged = f.read()
        bad = run("inspect", "log", self.log_dir, "--verify", "--json")
        self.assertEqual(bad.returncode, 4, bad.stdout + bad.stderr)
        found = json.loads(bad.stdout)
        self.assertIsNone(found["torn_tail"])
        self.assertEqual(found["corruption"]["index"], newest)
        self.assertIn("one bit flipped", found["corruption"]["written_whole"])
        text = run("inspect", "log", self.log_dir, "--verify")
        self.assertEqual(text.returncode, 4)
        self.assertIn(f"--cut-from {newest} --confirm", text.stdout)
        # Without --confirm: the plan only, nothing changes.
        plan = run("repair", "log", self.log_dir, "--cut-from", str(newest))
        self.assertEqual(plan.returncode, 1, plan.stdout + plan.stderr)
        self.assertIn("dropping 1 record", plan.stdout)
        with open(segment, "rb") as f:
            self.assertEqual(f.read(), damaged)
        cut = run("repair", "log", self.log_dir, "--cut-from", str(newest), "--confirm", "--json")
        self.assertEqual(cut.returncode, 0, cut.stdout + cut.stderr)
        self.assertEqual(json.loads(cut.stdout)["records_dropped"], 1)
        self.assertTrue(os.path.exists(os.path.join(self.log_dir, "..", "raft_recovering")))
        after = run("inspect", "log", self.log_dir, "--verify", "--json")
        self.assertEqual(after.returncode, 0, after.stdout + after.stderr)
        self.assertEqual(json.loads(after.stdout)["records"], records - 1)

    def test_state_lists_tables_with_counts(self):
        human = run("inspect", "state", self.state_dir)
        self.assertEqual(human.returncode, 0, human.stderr)
        out = run("inspect", "state", self.state_dir, "--json")
        self.assertEqual(out.returncode, 0, out.stderr)
        data = json.loads(out.stdout)
        self.assertIn("tables", data)
        self.assertGreater(sum(t["entries"] for t in data["tables"]), 0)

    def test_state_summarises_kv_keys_locks_and_pending_timers(self):
        # Before any KV write or timer: the tables exist (the engine opens them) and hold nothing.
        empty = json.loads(run("inspect", "state", self.state_dir, "--json").stdout)["state"]
        self.assertEqual(empty["kv"], {"keys": 0, "buckets": []})
        self.assertEqual(empty["locks"]["held"], 0)
        self.assertEqual(empty["timers"], {"pending": 0, "earliestDue": None, "earliestId": None})

        self.server.start()
        c = self.server.client()
        r = c.post("/api/v1/transaction", {"operations": [
            {"type": "kv.set", "bucket": "orders", "key": "o-1", "value": {"state": "paid"}},
            {"type": "kv.set", "bucket": "orders", "key": "o-2", "value": 2},
            {"type": "kv.set", "bucket": "users", "key": "u-1", "value": None},
            {"type": "timer.set", "id": "remind", "queue": "reminders", "payload": {"x": 1}, "delayMs": 3600000},
            {"type": "push", "items": [{"queue": "later", "payload": 1, "delayMs": 7200000}]}]})
        self.assertEqual(r.status, 200, r)
        timer_due = r.json()["results"][3]["dueAt"]
        c.close()
        self.server.stop()

        out = run("inspect", "state", self.state_dir, "--json")
        self.assertEqual(out.returncode, 0, out.stderr)
        state = json.loads(out.stdout)["state"]
        self.assertEqual(state["kv"], {"keys": 3, "buckets": [{"bucket": "orders", "keys": 2},
                                                              {"bucket": "users", "keys": 1}]})
        self.assertEqual(state["locks"]["held"], 0)
        self.assertEqual(state["timers"], {"pending": 2, "earliestDue": timer_due, "earliestId": "remind"})
        text = run("inspect", "state", self.state_dir)
        self.assertEqual(text.returncode, 0, text.stderr)
        self.assertIn("  kv: 3 keys in 2 buckets (orders 2, users 1)\n", text.stdout)
        self.assertIn("  locks: 0 held at ", text.stdout)
        self.assertIn(f"  timers: 2 pending, earliest due {timer_due} (remind)\n", text.stdout)

    def test_state_lists_stream_queries_with_their_rows(self):
        empty = json.loads(run("inspect", "state", self.state_dir, "--json").stdout)["state"]
        self.assertEqual(empty["streams"], {"queries": [], "uncollectedRows": False})

        self.server.start()
        c = self.server.client()
        c.post("/api/v1/push", {"items": [{"queue": "clicks", "partition": "u1", "payload": 1}]})
        popped = c.pop("clicks", wait=False).json()
        pid = popped["messages"][0]["partitionId"]
        queries = {}
        for name in ("totals", "sessions"):
            r = c.post("/streams/v1/queries", {"name": name, "source_queue": "clicks", "config_hash": "h"})
            self.assertEqual(r.status, 200, r)
            queries[name] = r.json()["query_id"]
        r = c.post("/streams/v1/cycle", {"query_id": queries["totals"], "partition_id": pid, "state_ops": [
            {"type": "upsert", "key": k, "value": 1} for k in ("a", "b", "c")]})
        self.assertTrue(r.json()["success"], r)
        r = c.post("/streams/v1/queries", {"name": "sessions", "source_queue": "clicks", "config_hash": "h2",
                                           "reset": True})
        self.assertEqual(r.json()["reset"], True, r)
        c.close()
        self.server.stop()

        state = json.loads(run("inspect", "state", self.state_dir, "--json").stdout)["state"]
        self.assertEqual([(q["name"], q["queryId"], q["sourceQueue"], q["epoch"], q["rows"])
                          for q in state["streams"]["queries"]],
                         [("sessions", queries["sessions"], "clicks", 2, 0),
                          ("totals", queries["totals"], "clicks", 1, 3)])
        text = run("inspect", "state", self.state_dir)
        self.assertEqual(text.returncode, 0, text.stderr)
        self.assertIn("  streams: 2 queries (sessions 0 rows (epoch 2), totals 3 rows (epoch 1))", text.stdout)

    def test_state_counts_the_locks_held_now(self):
        self.server.start()
        c = self.server.client()
        for name, ttl in (("held-1", 600000), ("held-2", 600000), ("brief", 1)):
            r = c.post(f"/api/v1/locks/{name}/acquire", {"owner": "o", "ttlMs": ttl})
            self.assertEqual(r.status, 200, r)
        c.close()
        self.server.stop()
        time.sleep(0.01)  # "brief" has expired by now (its record may stay until a sweep)
        state = json.loads(run("inspect", "state", self.state_dir, "--json").stdout)["state"]
        self.assertEqual(state["locks"]["held"], 2)
        self.assertIn("  locks: 2 held at ", run("inspect", "state", self.state_dir).stdout)

    def test_bad_paths_fail_cleanly(self):
        self.assertEqual(run("inspect", "state", "/nonexistent").returncode, 1)
        self.assertEqual(run("inspect", "log", "/nonexistent").returncode, 1)
        self.assertEqual(run("inspect").returncode, 2)

    def test_the_data_dir_and_a_tenant_dir_stand_for_the_tenant_folders(self):
        tenant_dir = os.path.join(self.server.data_dir, "tenants/default")
        exact = json.loads(run("inspect", "log", self.log_dir, "--json").stdout)
        for given in (tenant_dir, tenant_dir + "/"):
            out = run("inspect", "log", given, "--json")
            self.assertEqual(out.returncode, 0, out.stderr)
            report = json.loads(out.stdout)
            self.assertEqual(report["tenant"], "default")
            self.assertEqual(report["records"], exact["records"])
            self.assertGreater(report["records"], 0)
        # A data directory gives one report per tenant, as a JSON array.
        out = run("inspect", "log", self.server.data_dir, "--verify", "--json")
        self.assertEqual(out.returncode, 0, out.stderr)
        reports = json.loads(out.stdout)
        self.assertEqual([r["tenant"] for r in reports], ["default"])
        self.assertEqual(reports[0]["records"], exact["records"])
        text = run("inspect", "log", self.server.data_dir)
        self.assertEqual(text.returncode, 0, text.stderr)
        self.assertIn(os.path.join("tenants", "default", "log"), text.stdout)
        self.assertNotIn(" 0 segments", text.stdout)

        for given in (tenant_dir, self.server.data_dir):
            out = run("inspect", "state", given)
            self.assertEqual(out.returncode, 0, out.stderr)
            self.assertIn(os.path.join("tenants", "default", "state"), out.stdout)
        state = json.loads(run("inspect", "state", tenant_dir, "--json").stdout)
        self.assertEqual(state["tenant"], "default")
        self.assertGreater(sum(t["entries"] for t in state["tables"]), 0)

    def test_every_tenant_of_a_data_dir_is_inspected_or_the_one_named(self):
        self.server.start()
        c = self.server.client()
        # Created through the API: its log and state are created under tenants/second.
        response = c.post("/api/v1/system/tenants", {"name": "second"})
        self.assertEqual(response.status, 201, response.body)
        response = c.post("/api/v1/push", {"items": [{"queue": "other", "payload": {"n": 1}}]},
                          headers={"X-Queen-Tenant": "second"})
        self.assertEqual(response.status, 201, response.body)
        c.close()
        self.server.stop()
        out = run("inspect", "log", self.server.data_dir, "--json")
        self.assertEqual(out.returncode, 0, out.stderr)
        reports = json.loads(out.stdout)
        self.assertEqual([r["tenant"] for r in reports], ["default", "second"])
        self.assertTrue(all(r["records"] > 0 for r in reports))
        text = run("inspect", "state", self.server.data_dir)
        self.assertEqual(text.returncode, 0, text.stderr)
        self.assertIn(os.path.join("tenants", "default", "state"), text.stdout)
        self.assertIn(os.path.join("tenants", "second", "state"), text.stdout)

        one = run("inspect", "log", self.server.data_dir, "--tenant", "second", "--json")
        self.assertEqual(one.returncode, 0, one.stderr)
        self.assertEqual(json.loads(one.stdout)["tenant"], "second")
        one = run("inspect", "state", self.server.data_dir, "--tenant", "second", "--json")
        self.assertEqual(one.returncode, 0, one.stderr)
        self.assertEqual(json.loads(one.stdout)["tenant"], "second")
        missing = run("inspect", "log", self.server.data_dir, "--tenant", "third")
        self.assertEqual(missing.returncode, 1)
        self.assertIn("third", missing.stderr)
        self.assertIn("default, second", missing.stderr)
        # --tenant only means something for a data directory.
        self.assertEqual(run("inspect", "log", self.log_dir, "--tenant", "default").returncode, 2)

    def test_a_folder_holding_no_log_or_state_is_an_error_not_an_empty_report(self):
        empty = tempfile.mkdtemp(prefix="queen-it-empty-", dir=os.environ.get("QUEEN_TEST_DIR"))
        try:
            for part, what in (("log", "no log segments"), ("state", "no LMDB state")):
                out = run("inspect", part, empty)
                self.assertEqual(out.returncode, 1, out.stdout)
                self.assertEqual(out.stdout, "")
                self.assertIn(what, out.stderr)
                self.assertIn(empty, out.stderr)
            # A tenant folder whose log/ holds no segment is refused the same way.
            os.makedirs(os.path.join(empty, "log"))
            out = run("inspect", "log", empty)
            self.assertEqual(out.returncode, 1, out.stdout)
            self.assertIn("no log segments", out.stderr)
            # So is a data directory without a tenant that has one.
            os.makedirs(os.path.join(empty, "data/tenants/t/log"))
            out = run("inspect", "log", os.path.join(empty, "data"), "--json")
            self.assertEqual(out.returncode, 1, out.stdout)
            self.assertIn("no tenant", out.stderr)
        finally:
            shutil.rmtree(empty, ignore_errors=True)


    def test_log_shows_the_raft_hard_state_read_only_and_refuses_a_damaged_one(self):
        path = os.path.join(self.log_dir, "hard_state")
        # Slot 1 holds save 3 (the newest), slot 0 save 2.
        with open(path, "wb") as f:
            f.write(hard_state_slot(2, 6, 2, 40) + hard_state_slot(3, 7, 3, 41))
        with open(path, "rb") as f:
            before = f.read()
        out = run("inspect", "log", self.log_dir, "--json")
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(json.loads(out.stdout)["hard_state"], {"term": 7, "vote": 3, "commit": 41})
        text = run("inspect", "log", self.log_dir)
        self.assertIn("hard state: term 7  vote 3  commit 41", text.stdout)
        with open(path, "rb") as f:
            self.assertEqual(f.read(), before, "inspect changed the hard state file")
        with open(path, "wb") as f:
            f.write(b"x" * 1024)
        damaged = run("inspect", "log", self.log_dir, "--json")
        self.assertEqual(damaged.returncode, 4, damaged.stdout + damaged.stderr)
        self.assertIn("neither hard state slot is valid", damaged.stderr)

    def test_raft_shows_term_vote_commit_log_bounds_and_the_recovering_marker(self):
        tenant_dir = os.path.join(self.server.data_dir, "tenants/default")
        log_report = json.loads(run("inspect", "log", self.log_dir, "--json").stdout)
        out = run("inspect", "raft", self.server.data_dir, "--json")
        self.assertEqual(out.returncode, 0, out.stderr)
        reports = json.loads(out.stdout)
        self.assertEqual([r["tenant"] for r in reports], ["default"])
        report = reports[0]
        # A node alone elects itself: it voted for itself (node 1) in the term it leads.
        hard_state = report["hard_state"]
        self.assertGreaterEqual(hard_state["term"], 1)
        self.assertEqual(hard_state["vote"], 1)
        self.assertEqual(hard_state, log_report["hard_state"])
        log = report["log"]
        first = log_report["segments"][0]
        last = log_report["segments"][-1]
        self.assertEqual(log["first_index"], first["first_record"])
        self.assertEqual(log["last_index"], last["last_record"])
        self.assertEqual(log["last_term"], last["last_term"])
        self.assertEqual(log["last_term"], hard_state["term"])
        self.assertGreaterEqual(log["first_term"], 1)
        self.assertEqual(log["records"], log_report["records"])
        self.assertLessEqual(hard_state["commit"], log["last_index"])
        self.assertFalse(report["recovering"])
        self.assertEqual(report["recovering_marker"], os.path.join(tenant_dir, "raft_recovering"))
        self.assertIsNone(report["torn_tail"])
        self.assertIsNone(report["corruption"])
        self.assertEqual(report["notes"], [])
        # The tenant directory and its log/ name the same; --tenant picks one of a data dir.
        for args in ([tenant_dir], [self.log_dir], [self.log_dir + "/"],
                     [self.server.data_dir, "--tenant", "default", "--verify"]):
            one = run("inspect", "raft", *args, "--json")
            self.assertEqual(one.returncode, 0, one.stderr)
            same = json.loads(one.stdout)
            self.assertEqual((same["hard_state"], same["log"]["last_index"], same["recovering"]),
                             (hard_state, log["last_index"], False), args)
        text = run("inspect", "raft", tenant_dir)
        self.assertEqual(text.returncode, 0, text.stderr)
        for line in (f"term        {hard_state['term']}", "vote        node 1",
                     f"commit      {hard_state['commit']}",
                     f"first {log['first_index']} (term {log['first_term']}), "
                     f"last {log['last_index']} (term {log['last_term']})",
                     "recovering  no"):
            self.assertIn(line, text.stdout)

        # The marker of protocol-aware recovery is shown (inspect only reads it).
        marker = os.path.join(tenant_dir, "raft_recovering")
        with open(marker, "w") as f:
            f.write("recovering\n")
        report = json.loads(run("inspect", "raft", tenant_dir, "--json").stdout)
        self.assertTrue(report["recovering"])
        self.assertTrue(any("votes for nobody" in note for note in report["notes"]), report["notes"])
        text = run("inspect", "raft", tenant_dir).stdout
        self.assertIn("recovering  yes (" + marker + ")", text)
        self.assertTrue(os.path.exists(marker))
        os.remove(marker)

        # An unfinished snapshot install and a download cut short are shown (read only).
        self.assertIsNone(report["snapshot_install"])
        self.assertFalse(report["snapshot_download_cut"])
        install = os.path.join(tenant_dir, "snapshot.install")
        incoming = os.path.join(tenant_dir, "snapshot.incoming")
        os.makedirs(install)
        os.makedirs(incoming)
        with open(os.path.join(install, "meta"), "w") as f:
            f.write("index = 42\nterm = 3\n")
        report = json.loads(run("inspect", "raft", tenant_dir, "--json").stdout)
        self.assertEqual(report["snapshot_install"], "index = 42,term = 3")
        self.assertTrue(report["snapshot_download_cut"])
        self.assertEqual(len([n for n in report["notes"] if "snapshot" in n]), 2, report["notes"])
        self.assertIn("the next start completes it", run("inspect", "raft", tenant_dir).stdout)
        self.assertTrue(os.path.exists(os.path.join(install, "meta")))
        shutil.rmtree(install)
        shutil.rmtree(incoming)

        # A log directory outside a tenant directory says nothing about the marker.
        copy = tempfile.mkdtemp(prefix="queen-it-logcopy-", dir=os.environ.get("QUEEN_TEST_DIR"))
        try:
            for name in os.listdir(self.log_dir):
                shutil.copy(os.path.join(self.log_dir, name), copy)
            report = json.loads(run("inspect", "raft", copy, "--json").stdout)
            self.assertIsNone(report["recovering"])
            self.assertEqual(report["hard_state"], hard_state)
            self.assertIn("recovering  unknown", run("inspect", "raft", copy).stdout)
        finally:
            shutil.rmtree(copy, ignore_errors=True)

    def test_raft_reports_a_damaged_hard_state_with_exit_4_and_still_shows_the_log(self):
        with open(os.path.join(self.log_dir, "hard_state"), "wb") as f:
            f.write(b"x" * 1024)
        out = run("inspect", "raft", self.log_dir, "--json")
        self.assertEqual(out.returncode, 4, out.stdout + out.stderr)
        report = json.loads(out.stdout)
        self.assertIsNone(report["hard_state"])
        self.assertIn("neither hard state slot is valid", report["hard_state_error"])
        self.assertGreater(report["log"]["last_index"], 0)
        text = run("inspect", "raft", self.log_dir)
        self.assertEqual(text.returncode, 4)
        self.assertIn("hard state  DAMAGED", text.stdout)
        # No hard state file at all: nothing was ever saved, which is no error.
        os.remove(os.path.join(self.log_dir, "hard_state"))
        out = run("inspect", "raft", self.log_dir, "--json")
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIsNone(json.loads(out.stdout)["hard_state"])
        self.assertIn("none saved", run("inspect", "raft", self.log_dir).stdout)
        self.assertEqual(run("inspect", "raft", "/nonexistent").returncode, 1)


class InspectCluster(unittest.TestCase):
    def test_raft_on_the_data_dirs_of_a_stopped_cluster(self):
        cluster = ClusterProcesses().start()
        try:
            leader, term = cluster.leader()
            c = cluster.nodes[leader].client()
            r = c.push("q", [{"n": n} for n in range(10)])
            self.assertEqual(r.status, 201, r.body)
            c.close()
            committed = cluster.wait_applied(leader)
            for node in cluster.nodes.values():
                self.assertEqual(node.stop(), 0)
            reports = {}
            for i, node in cluster.nodes.items():
                out = run("inspect", "raft", node.data_dir, "--tenant", "default", "--json")
                self.assertEqual(out.returncode, 0, out.stderr)
                reports[i] = json.loads(out.stdout)
            for i, report in reports.items():
                self.assertEqual(report["hard_state"]["term"], term, i)
                self.assertEqual(report["log"]["last_term"], term, i)
                self.assertGreaterEqual(report["log"]["last_index"], committed, i)
                self.assertLessEqual(report["hard_state"]["commit"], report["log"]["last_index"], i)
                self.assertFalse(report["recovering"], i)
            # The leader voted for itself in its term; the others for it, for themselves (a
            # candidate of the same term that lost) or, having learned the term from the leader's
            # appends rather than from a vote request, for nobody.
            self.assertEqual(reports[leader]["hard_state"]["vote"], leader)
            for i, report in reports.items():
                self.assertIn(report["hard_state"]["vote"], (0, leader, i), i)
            text = run("inspect", "raft", cluster.nodes[leader].data_dir)
            self.assertEqual(text.returncode, 0, text.stderr)
            self.assertIn(f"vote        node {leader}", text.stdout)
        finally:
            cluster.cleanup()


if __name__ == "__main__":
    unittest.main()
