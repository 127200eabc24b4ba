"""tests/integration/test_admin.py — `queen admin` against a real `queen serve`: every command,
its table and --json output, and the exit codes (0 ok, 1 failed, 2 usage, 3 retryable).

The broker's state is set up and checked over plain HTTP (harness.Client), so a wrong admin
command cannot hide behind another admin command."""
import json
import os
import socket
import subprocess
import unittest

from harness import QUEEN_BIN, Server, ServerTestCase, wait_until

ALL_OPTIONS = {
    "--lease-time": ("leaseTime", 42),
    "--retry-limit": ("retryLimit", 7),
    "--retry-delay": ("retryDelay", 250),
    "--max-size": ("maxSize", 5000),
    "--ttl": ("ttl", 900),
    "--priority": ("priority", 4),
    "--delayed-processing": ("delayedProcessing", 2),
    "--window-buffer": ("windowBuffer", 3),
    "--retention-seconds": ("retentionSeconds", 600),
    "--completed-retention-seconds": ("completedRetentionSeconds", 60),
    "--max-wait-time-seconds": ("maxWaitTimeSeconds", 120),
}
ALL_FLAGS = {
    "--dead-letter-queue": "deadLetterQueue",
    "--dlq-after-max-retries": "dlqAfterMaxRetries",
    "--retention-enabled": "retentionEnabled",
    "--encryption-enabled": "encryptionEnabled",
}


def run_admin(args, env=None, timeout=60):
    """Runs `queen admin ARGS` with stdin closed (not a terminal) and returns the CompletedProcess."""
    return subprocess.run([QUEEN_BIN, "admin"] + list(args), capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL, env=dict(os.environ, **(env or {})))


class AdminTestCase(ServerTestCase):
    settings = {"security.encryption_key": "ab" * 32}

    def url(self):
        return f"http://127.0.0.1:{self.server.port}"

    def admin(self, *args, code=0):
        """`queen admin --url <server> ARGS`; asserts the exit code and returns the process."""
        out = run_admin(["--url", self.url()] + list(args))
        self.assertEqual(out.returncode, code, f"queen admin {' '.join(args)}:\n{out.stdout}\n{out.stderr}")
        return out

    def admin_json(self, *args):
        out = self.admin(*args, "--json")
        return json.loads(out.stdout)

    def table(self, *args):
        """The rows of a human table as lists of cells (the header row first)."""
        lines = self.admin(*args).stdout.splitlines()
        return [line.split() for line in lines if line.strip()]


class Queues(AdminTestCase):
    def test_create_with_every_option_echoes_them_and_show_reads_them_back(self):
        args = ["queues", "create", "orders", "--namespace", "shop", "--task", "billing"]
        for flag, (_, value) in ALL_OPTIONS.items():
            args += [flag, str(value)]
        args += list(ALL_FLAGS)
        created = self.admin_json(*args)
        self.assertTrue(created["configured"])
        self.assertTrue(created["created"])
        self.assertEqual(created["queue"], "orders")
        self.assertEqual(created["namespace"], "shop")
        self.assertEqual(created["task"], "billing")
        expected = {key: value for key, value in ALL_OPTIONS.values()}
        expected.update({key: True for key in ALL_FLAGS.values()})
        self.assertEqual(created["options"], expected)
        self.assertEqual(len(created["options"]), 15)
        shown = self.admin_json("queues", "show", "orders")
        self.assertEqual(shown["options"], expected)
        # The broker itself agrees (not only the admin's echo).
        detail = self.client.get("/api/v1/resources/queues/orders").json()
        self.assertEqual(detail["options"], expected)
        self.assertEqual(detail["namespace"], "shop")

    def test_create_on_an_existing_queue_changes_only_the_given_options(self):
        self.admin("queues", "create", "q", "--lease-time", "30", "--encryption-enabled", "--namespace", "n1")
        out = self.admin("queues", "create", "q", "--retry-limit", "9", "--no-encryption-enabled")
        self.assertIn("updated queue q", out.stdout)
        options = self.client.get("/api/v1/resources/queues/q").json()
        self.assertEqual(options["options"]["leaseTime"], 30)
        self.assertEqual(options["options"]["retryLimit"], 9)
        self.assertFalse(options["options"]["encryptionEnabled"])
        self.assertEqual(options["namespace"], "n1")
        # A human table of every option, aligned.
        rows = [line.split() for line in out.stdout.splitlines()[1:]]
        self.assertEqual(rows[0], ["OPTION", "VALUE"])
        self.assertIn(["retryLimit", "9"], rows)
        self.assertEqual(len(rows), 16)

    def test_list_show_and_partitions_count_what_was_pushed(self):
        self.assertEqual(self.client.push("alpha", list(range(3)), partition="p1").status, 201)
        self.assertEqual(self.client.push("alpha", list(range(2)), partition="p2").status, 201)
        self.assertEqual(self.client.push("beta", ["x"]).status, 201)
        listed = {q["name"]: q for q in self.admin_json("queues", "list")}
        self.assertEqual(set(listed), {"alpha", "beta"})
        self.assertEqual(listed["alpha"]["partitions"], 2)
        self.assertEqual(listed["alpha"]["messages"]["total"], 5)
        self.assertEqual(listed["alpha"]["messages"]["pending"], 5)
        self.assertEqual(listed["beta"]["messages"]["total"], 1)

        rows = self.table("queues", "list")
        self.assertEqual(rows[0][:4], ["QUEUE", "NAMESPACE", "TASK", "PARTITIONS"])
        alpha = next(r for r in rows if r[0] == "alpha")
        self.assertEqual(alpha[3:7], ["2", "5", "5", "0"])

        # One message of p1 is leased: processing 1, pending 2.
        popped = self.client.pop("alpha", partition="p1", wait=False)
        self.assertEqual(popped.status, 200)
        shown = self.admin_json("queues", "show", "alpha")
        stats = {p["name"]: p["stats"] for p in shown["partitions"]}
        self.assertEqual(stats["p1"]["total"], 3)
        self.assertEqual(stats["p1"]["processing"], 1)
        self.assertEqual(stats["p2"]["pending"], 2)
        self.assertEqual(stats["p2"]["processing"], 0)
        self.assertEqual(shown["totals"]["total"], 5)
        text = self.admin("queues", "show", "alpha").stdout
        self.assertIn("PARTITION", text)
        table = {line.split()[0]: line.split()[1:] for line in text.splitlines() if line.startswith(("p1", "p2", "("))}
        self.assertEqual(table["p1"][:3], ["3", str(stats["p1"]["pending"]), "1"])
        self.assertEqual(table["p2"][:3], ["2", "2", "0"])
        self.assertEqual(table["(total)"][0], "5")

        partitions = {p["name"]: p for p in self.admin_json("partitions", "list", "alpha")}
        self.assertEqual(set(partitions), {"p1", "p2"})
        self.assertEqual(partitions["p1"]["id"], popped.json()["messages"][0]["partitionId"])
        self.assertEqual(partitions["p2"]["stats"]["total"], 2)
        self.assertIsNotNone(partitions["p2"]["newestMessage"])
        rows = self.table("partitions", "list", "alpha")
        self.assertEqual(rows[0][:3], ["PARTITION", "ID", "TOTAL"])
        self.assertIn(["p2", partitions["p2"]["id"], "2"], [r[:3] for r in rows])

    def test_unknown_queue_fails_with_the_broker_message(self):
        out = self.admin("queues", "show", "nope", code=1)
        self.assertIn("Queue not found", out.stderr)
        self.assertEqual(out.stdout, "")
        self.admin("partitions", "list", "nope", code=1)

    def test_delete_needs_yes_without_a_terminal_and_then_deletes(self):
        self.client.push("doomed", [1, 2])
        out = self.admin("queues", "delete", "doomed", code=2)
        self.assertIn("--yes", out.stderr)
        self.assertEqual(self.client.get("/api/v1/resources/queues/doomed").status, 200)
        deleted = self.admin_json("queues", "delete", "doomed", "--yes")
        self.assertEqual(deleted, {"deleted": True, "queue": "doomed", "existed": True})
        self.assertEqual(self.client.get("/api/v1/resources/queues/doomed").status, 404)
        again = self.admin("queues", "delete", "doomed", "-y")
        self.assertIn("nothing deleted", again.stdout)

    def test_delete_on_a_terminal_asks_first(self):
        self.client.push("asked", [1, 2, 3])
        for answer, code, remains in (("n\n", 1, True), ("y\n", 0, False)):
            master, slave = os.openpty()  # stdin is a terminal: the command asks instead of refusing
            try:
                process = subprocess.Popen([QUEEN_BIN, "admin", "--url", self.url(), "queues", "delete", "asked"],
                                           stdin=slave, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                os.write(master, answer.encode())
                stdout, stderr = process.communicate(timeout=60)
            finally:
                os.close(slave)
                os.close(master)
            self.assertEqual(process.returncode, code, stdout + stderr)
            self.assertIn("Delete queue asked and its 3 messages?", stderr)
            status = self.client.get("/api/v1/resources/queues/asked").status
            self.assertEqual(status, 200 if remains else 404)


class Groups(AdminTestCase):
    def consume(self, queue, group, count, partition=None):
        """Pops and acks `count` messages of `queue` (or of one partition) as `group`."""
        done = 0
        while done < count:
            r = self.client.pop(queue, partition=partition, consumerGroup=group, batch=count - done, wait=False)
            self.assertEqual(r.status, 200, r)
            body = r.json()
            for m in body["messages"]:
                a = self.client.ack(m["transactionId"], m["partitionId"], lease_id=body["leaseId"],
                                    consumer_group=group)
                self.assertTrue(a.json()[0]["success"], a)
                done += 1

    def test_list_show_seek_and_delete(self):
        self.client.push("events", list(range(4)), partition="a")
        self.client.push("events", list(range(2)), partition="b")
        self.consume("events", "g1", 3, partition="a")
        self.consume("events", "g1", 1, partition="b")

        groups = self.admin_json("groups", "list")
        g1 = [g for g in groups if g["name"] == "g1"]
        self.assertEqual(len(g1), 1)
        self.assertEqual(g1[0]["queueName"], "events")
        self.assertEqual(g1[0]["topics"], ["events"])
        rows = self.table("groups", "list")
        self.assertEqual(rows[0][:3], ["GROUP", "QUEUE", "PARTITIONS"])
        self.assertIn(["g1", "events"], [r[:2] for r in rows])

        shown = self.admin_json("groups", "show", "g1")
        self.assertEqual(list(shown), ["events"])
        consumed = {p["partition"]: p["totalConsumed"] for p in shown["events"]["partitions"]}
        self.assertEqual(consumed, {"a": 3, "b": 1})
        rows = self.table("groups", "show", "g1")
        self.assertEqual(rows[0][:3], ["QUEUE", "PARTITION", "CONSUMED"])
        self.assertEqual(sorted(r[:3] for r in rows[1:]), [["events", "a", "3"], ["events", "b", "1"]])

        # Seek to the end: nothing left to pop for g1, while another group still sees everything.
        seek = self.admin_json("groups", "seek", "g1", "--queue", "events", "--to-end")
        self.assertTrue(seek["seekToEnd"])
        self.assertEqual(seek["partitionsUpdated"], 2)
        self.assertEqual(self.client.pop("events", consumerGroup="g1", batch=10, wait=False).status, 204)
        # Back to a time before every push: all 6 messages come again.
        out = self.admin("groups", "seek", "g1", "--queue", "events", "--timestamp", "2000-01-01T00:00:00Z")
        self.assertIn("moved to 2000-01-01T00:00:00Z", out.stdout)
        seen = 0
        for _ in range(10):
            r = self.client.pop("events", consumerGroup="g1", batch=10, wait=False)
            if r.status == 204:
                break
            body = r.json()
            seen += len(body["messages"])
            for m in body["messages"]:
                self.client.ack(m["transactionId"], m["partitionId"], lease_id=body["leaseId"], consumer_group="g1")
        self.assertEqual(seen, 6)
        # One partition to its end.
        self.client.push("events", ["late"], partition="a")
        moved = self.admin_json("groups", "seek", "g1", "--queue", "events", "--partition", "a")
        self.assertEqual(moved["partitionName"], "a")
        self.assertTrue(moved["updated"])
        self.assertEqual(self.client.pop("events", consumerGroup="g1", batch=10, wait=False).status, 204)

        deleted = self.admin_json("groups", "delete", "g1", "--queue", "events")
        self.assertEqual(deleted["consumerGroup"], "g1")
        self.assertEqual(deleted["queueName"], "events")
        self.assertEqual(deleted["deletedPartitions"], 2)
        out = self.admin("groups", "show", "g1", code=1)
        self.assertIn("no cursors", out.stderr)
        # Deleted: the group starts over and sees all 7 messages.
        r = self.client.pop("events", consumerGroup="g1", batch=10, wait=False, partition="a")
        self.assertEqual(len(r.json()["messages"]), 5)

    def test_delete_on_every_queue(self):
        self.client.push("one", [1])
        self.client.push("two", [2])
        self.consume("one", "g", 1)
        self.consume("two", "g", 1)
        out = self.admin("groups", "delete", "g")
        self.assertIn("2 partition cursors", out.stdout)
        self.assertNotIn("g", [g["name"] for g in self.admin_json("groups", "list")])

    def test_seek_usage_errors(self):
        out = self.admin("groups", "seek", "g", "--queue", "q", code=2)
        self.assertIn("--to-end", out.stderr)
        self.admin("groups", "seek", "g", "--queue", "q", "--to-end", "--timestamp", "2000-01-01T00:00:00Z", code=2)
        self.admin("groups", "seek", "g", "--to-end", code=2)  # --queue is required


class DlqAndMessages(AdminTestCase):
    def test_dlq_list_pages_and_messages_show_reads_one(self):
        self.client.post("/api/v1/configure", {"queue": "flaky", "options": {"retryLimit": 0, "retryDelay": 0}})
        pushed = self.client.push("flaky", [{"k": i} for i in range(3)], partition="p").json()
        for _ in range(3):
            m = self.client.pop("flaky", wait=False).json()["messages"][0]
            self.client.ack(m["transactionId"], m["partitionId"], status="failed", lease_id=m["leaseId"],
                            error=f"boom {m['data']['k']}")
        page = self.admin_json("dlq", "list", "--queue", "flaky")
        self.assertEqual(len(page["messages"]), 3)
        self.assertEqual(page["pagination"], {"limit": 100, "offset": 0})
        self.assertEqual(sorted(m["data"]["k"] for m in page["messages"]), [0, 1, 2])
        self.assertTrue(all(m["errorMessage"].startswith("boom") for m in page["messages"]))
        first = self.admin_json("dlq", "list", "--queue", "flaky", "--limit", "2")
        rest = self.admin_json("dlq", "list", "--queue", "flaky", "--limit", "2", "--offset", "2")
        self.assertEqual(len(first["messages"]), 2)
        self.assertEqual(len(rest["messages"]), 1)
        self.assertEqual(sorted(m["transactionId"] for m in first["messages"] + rest["messages"]),
                         sorted(i["transaction_id"] for i in pushed))
        self.assertEqual(self.admin_json("dlq", "list", "--queue", "other")["messages"], [])
        rows = self.table("dlq", "list", "--queue", "flaky")
        self.assertEqual(rows[0], ["FAILED_AT", "QUEUE", "PARTITION", "PARTITION_ID", "TRANSACTION", "GROUP",
                                   "RETRIES", "ERROR"])
        self.assertEqual(len(rows), 4)
        self.assertEqual(rows[1][-2:], ["boom", rows[1][-1]])

        item = pushed[1]
        detail = self.admin_json("messages", "show", item["partition_id"], item["transaction_id"])
        self.assertEqual(detail["payload"], {"k": 1})
        self.assertEqual(detail["status"], "dead_letter")
        self.assertEqual(detail["queuePath"], "flaky/p")
        self.assertEqual(detail["errorMessage"], "boom 1")
        text = self.admin("messages", "show", item["partition_id"], item["transaction_id"]).stdout
        self.assertIn('{"k":1}', text)
        self.assertIn("dead_letter", text)
        out = self.admin("messages", "show", item["partition_id"], "no-such-transaction", code=1)
        self.assertIn("Message not found", out.stderr)
        self.admin("dlq", "list", "--limit", "0", code=2)
        self.admin("dlq", code=2)  # a subcommand is required

    def test_messages_show_decrypts_and_lists_groups(self):
        self.admin("queues", "create", "secret", "--encryption-enabled")
        item = self.client.push("secret", [{"card": "4111"}]).json()[0]
        r = self.client.pop("secret", consumerGroup="audit", wait=False).json()
        detail = self.admin_json("messages", "show", item["partition_id"], item["transaction_id"])
        self.assertTrue(detail["isEncrypted"])
        self.assertEqual(detail["payload"], {"card": "4111"})
        self.assertEqual([g["name"] for g in detail["consumerGroups"]], ["audit"])
        text = self.admin("messages", "show", item["partition_id"], item["transaction_id"]).stdout
        self.assertIn("GROUP", text)
        self.assertIn("audit", text)
        self.assertTrue(r["messages"])


class System(AdminTestCase):
    def test_maintenance_on_off_and_status(self):
        self.assertEqual(self.admin_json("maintenance"),
                         {"maintenanceMode": False, "popMaintenanceMode": False, "bufferedMessages": 0})
        on = self.admin_json("maintenance", "on")
        self.assertTrue(on["maintenanceMode"])
        self.assertFalse(on["popMaintenanceMode"])
        self.assertTrue(self.client.get("/api/v1/system/maintenance").json()["maintenanceMode"])
        self.assertEqual(self.client.push("held", [1]).status, 201)
        self.assertEqual(self.admin_json("maintenance", "status")["bufferedMessages"], 1)
        pop_on = self.admin_json("maintenance", "on", "--pop")
        self.assertTrue(pop_on["popMaintenanceMode"])
        self.assertTrue(pop_on["maintenanceMode"])
        self.admin("maintenance", "off")
        off = self.admin_json("maintenance", "off", "--pop")
        self.assertFalse(off["maintenanceMode"])
        self.assertFalse(off["popMaintenanceMode"])
        text = self.admin("maintenance").stdout
        self.assertIn("push maintenance", text)
        self.assertIn("off", text)
        self.admin("maintenance", "sideways", code=2)

    def test_health(self):
        out = self.admin("health")
        self.assertTrue(out.stdout.startswith("healthy (HTTP 200)"), out.stdout)
        self.assertIn("default", out.stdout)
        body = self.admin_json("health")
        self.assertEqual(body["status"], "healthy")

    def test_global_flags_env_url_tenant_and_flags_after_the_subcommand(self):
        self.client.push("envq", [1])
        out = run_admin(["queues", "list", "--json"], env={"QUEEN_URL": self.url()})
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual([q["name"] for q in json.loads(out.stdout)], ["envq"])
        # --url wins over QUEEN_URL.
        out = run_admin(["--url", self.url(), "queues", "list"], env={"QUEEN_URL": "http://127.0.0.1:1"})
        self.assertEqual(out.returncode, 0, out.stderr)
        # The tenant header reaches the broker: the default tenant works, an unknown one is refused.
        self.assertEqual(len(self.admin_json("--tenant", "default", "queues", "list")), 1)
        out = self.admin("--tenant", "nosuch", "queues", "list", code=1)
        self.assertIn("nosuch", out.stderr)
        self.admin("--tenant", "bad name!", "queues", "list", code=1)


TENANTS = "/api/v1/system/tenants"


class Tenants(AdminTestCase):
    """The tenant catalogue of a single node: the HTTP routes, then `queen admin tenant` and
    `queen admin cluster rebalance`."""

    def listed(self):
        r = self.client.get(TENANTS)
        self.assertEqual(r.status, 200, r)
        return {t["name"]: t for t in r.json()["tenants"]}

    def assert_gone(self, name):
        """A request addressed to tenant `name` answers 404 unknown tenant (polled: the tenant
        may close on this node just after the delete was answered)."""
        def unknown():
            r = self.client.get("/api/v1/resources/queues", headers={"X-Queen-Tenant": name})
            return r if r.status == 404 else None
        r = wait_until(unknown, timeout=10, what=f"tenant {name} unknown")
        self.assertIn(f"unknown tenant '{name}'", r.json()["error"])

    def test_create_use_list_and_delete_over_http(self):
        r = self.client.post(TENANTS, {"name": "acme", "replication": 1})
        self.assertEqual(r.status, 201, r)
        acme = r.json()
        self.assertEqual(acme["name"], "acme")
        self.assertEqual(acme["replication"], 1)
        self.assertEqual(len(acme["replicas"]), 1)
        self.assertEqual(acme["preferredLeader"], acme["replicas"][0])
        self.assertTrue(acme["hosted"])
        self.assertIsInstance(acme["createdAt"], str)

        # Usable as soon as it is answered: push and pop through the tenant header.
        header = {"X-Queen-Tenant": "acme"}
        r = self.client.post("/api/v1/push", {"items": [{"queue": "orders", "payload": {"n": 1}}]}, headers=header)
        self.assertEqual(r.status, 201, r)
        r = self.client.get("/api/v1/pop/queue/orders?wait=false", headers=header)
        self.assertEqual(r.status, 200, r)
        self.assertEqual([m["data"] for m in r.json()["messages"]], [{"n": 1}])
        # Its queues are its own: the default tenant has none.
        self.assertEqual(self.client.get("/api/v1/resources/queues").json()["queues"], [])
        names = [q["name"] for q in self.client.get("/api/v1/resources/queues", headers=header).json()["queues"]]
        self.assertEqual(names, ["orders"])

        listed = self.listed()
        self.assertEqual(sorted(listed), ["acme", "default"])
        self.assertTrue(listed["acme"]["hosted"])
        self.assertEqual(listed["acme"]["replicas"], acme["replicas"])
        self.assertEqual(listed["acme"]["createdAt"], acme["createdAt"])
        self.assertTrue(listed["default"]["hosted"])
        self.assertIsNone(listed["default"]["createdAt"])
        # Node-wide routes: the tenant header does not matter, even an unknown one.
        r = self.client.get(TENANTS, headers={"X-Queen-Tenant": "nosuch"})
        self.assertEqual(sorted(t["name"] for t in r.json()["tenants"]), ["acme", "default"])

        r = self.client.post(TENANTS, {"name": "acme", "replication": 1})
        self.assertEqual(r.status, 409, r)
        self.assertIn("acme", r.json()["error"])
        r = self.client.post(TENANTS, {"name": "wide", "replication": 3})  # one node only
        self.assertEqual(r.status, 400, r)
        for body in ({}, {"name": "bad name!"}, {"name": "x" * 65}, {"name": 7}, {"name": "ok", "replication": 2},
                     {"name": "ok", "replication": "1"}, {"name": "ok", "replicas": 1}, [1]):
            r = self.client.post(TENANTS, body)
            self.assertEqual(r.status, 400, f"{body}: {r}")
            self.assertTrue(r.json()["error"], r)
        self.assertEqual(self.client.post(TENANTS, raw_body=b"").status, 400)
        self.assertEqual(sorted(self.listed()), ["acme", "default"])  # nothing was created

        r = self.client.delete(TENANTS + "/acme")
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.json(), {"deleted": "acme"})
        self.assert_gone("acme")
        r = self.client.post("/api/v1/push", {"items": [{"queue": "orders", "payload": 2}]}, headers=header)
        self.assertEqual(r.status, 404, r)
        self.assertEqual(sorted(self.listed()), ["default"])
        self.assertEqual(self.client.delete(TENANTS + "/acme").status, 404)

        r = self.client.delete(TENANTS + "/default")
        self.assertEqual(r.status, 400, r)
        self.assertIn("default tenant cannot be deleted", r.json()["error"])
        self.assertEqual(self.client.get("/api/v1/resources/queues").status, 200)

        r = self.client.post("/api/v1/system/cluster/rebalance")
        self.assertEqual(r.status, 200, r)
        self.assertEqual([t["name"] for t in r.json()["tenants"]], ["default"])

    def test_admin_tenant_commands(self):
        out = self.admin("tenant", "create", "beta", "--replication", "1")
        self.assertIn("created tenant beta (replication 1", out.stdout)
        gamma = self.admin_json("tenant", "create", "gamma", "--replication", "1")
        self.assertEqual((gamma["name"], gamma["replication"], gamma["hosted"]), ("gamma", 1, True))
        self.assertEqual(self.client.push("q", [1]).status, 201)  # the default tenant still works

        rows = self.table("tenant", "list")
        self.assertEqual(rows[0], ["TENANT", "REPLICATION", "REPLICAS", "PREFERRED", "LEADER", "HOSTED", "CREATED"])
        self.assertEqual([r[0] for r in rows[1:]], ["beta", "default", "gamma"])
        beta = next(r for r in rows if r[0] == "beta")
        self.assertEqual(beta[1], "1")
        self.assertEqual(beta[5], "yes")
        listed = self.admin_json("tenant", "list")
        self.assertEqual([t["name"] for t in listed["tenants"]], ["beta", "default", "gamma"])
        # --tenant (the header) does not change what the tenant commands address.
        self.assertEqual(len(self.admin_json("--tenant", "nosuch", "tenant", "list")["tenants"]), 3)

        out = self.admin("tenant", "create", "beta", code=1)
        self.assertIn("exists already", out.stderr)
        self.admin("tenant", "create", "wide", "--replication", "3", code=1)  # one node
        self.admin("tenant", "create", "bad name!", code=1)
        self.admin("tenant", "create", "x", "--replication", "2", code=2)
        self.admin("tenant", "create", code=2)
        self.admin("tenant", code=2)
        self.assertEqual(sorted(self.listed()), ["beta", "default", "gamma"])

        out = self.admin("tenant", "delete", "beta", code=2)
        self.assertIn("--yes", out.stderr)
        self.assertIn("beta", self.listed())
        self.assertEqual(self.admin_json("tenant", "delete", "beta", "--yes"), {"deleted": "beta"})
        self.assert_gone("beta")
        out = self.admin("tenant", "delete", "gamma", "-y")
        self.assertEqual(out.stdout, "deleted tenant gamma\n")
        self.assertEqual(sorted(self.listed()), ["default"])
        out = self.admin("tenant", "delete", "beta", "--yes", code=1)
        self.assertIn("unknown tenant 'beta'", out.stderr)
        out = self.admin("tenant", "delete", "default", "--yes", code=1)
        self.assertIn("default tenant cannot be deleted", out.stderr)

        placed = self.admin_json("cluster", "rebalance")
        self.assertEqual([t["name"] for t in placed["tenants"]], ["default"])
        rows = self.table("cluster", "rebalance")
        self.assertEqual(rows[0][0], "TENANT")
        self.assertEqual(rows[1][0], "default")

    def test_tenant_delete_on_a_terminal_asks_first(self):
        self.assertEqual(self.client.post(TENANTS, {"name": "asked", "replication": 1}).status, 201)
        for answer, code, remains in (("n\n", 1, True), ("y\n", 0, False)):
            master, slave = os.openpty()  # stdin is a terminal: the command asks instead of refusing
            try:
                process = subprocess.Popen([QUEEN_BIN, "admin", "--url", self.url(), "tenant", "delete", "asked"],
                                           stdin=slave, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                os.write(master, answer.encode())
                stdout, stderr = process.communicate(timeout=60)
            finally:
                os.close(slave)
                os.close(master)
            self.assertEqual(process.returncode, code, stdout + stderr)
            self.assertIn("Delete tenant asked with all its queues and messages, on every node?", stderr)
            self.assertEqual("asked" in self.listed(), remains)


MEMBERS = "/api/v1/system/cluster/members"


class Members(AdminTestCase):
    """The members of a node that runs alone (no cluster.peers): it lists itself, and refuses to
    add or remove members (501). Input the API refuses (400) never reaches the node."""

    def node_id(self):
        return self.client.get("/health").json()["node_id"]

    def test_a_lone_node_lists_itself_and_refuses_member_changes(self):
        r = self.client.get(MEMBERS, headers={"X-Queen-Tenant": "nosuch"})  # node-wide
        self.assertEqual(r.status, 200, r)
        members = r.json()["members"]
        self.assertEqual(len(members), 1, members)
        me = members[0]
        self.assertEqual(me["id"], self.node_id())
        self.assertIsNone(me["peerAddress"])  # no peer listener
        self.assertTrue(me["self"])
        self.assertTrue(me["connected"])
        self.assertGreaterEqual(me["tenants"], 1)  # the default tenant

        r = self.client.post(MEMBERS, {"id": 4, "address": "127.0.0.4:7004"})
        self.assertEqual(r.status, 501, r)
        self.assertIn("runs alone", r.json()["error"])
        r = self.client.delete(MEMBERS + f"/{me['id']}")
        self.assertEqual(r.status, 501, r)
        self.assertIn("runs alone", r.json()["error"])
        self.assertEqual(self.client.get(MEMBERS).json()["members"], members)

        rows = self.table("cluster", "members")
        self.assertEqual(rows[0], ["ID", "PEER_ADDRESS", "SELF", "CONNECTED", "TENANTS"])
        self.assertEqual(len(rows), 2, rows)
        self.assertEqual(rows[1][:4], [str(me["id"]), "-", "yes", "yes"])
        self.assertEqual(self.admin_json("cluster", "members"), {"members": members})

        out = self.admin("cluster", "add", "4", "127.0.0.4:7004", code=1)
        self.assertIn("runs alone", out.stderr)
        self.assertEqual(out.stdout, "")
        out = self.admin("cluster", "remove", str(me["id"]), "--yes", code=1)
        self.assertIn("runs alone", out.stderr)
        self.assertEqual(self.client.get(MEMBERS).json()["members"], members)

    def test_bad_input_is_refused_before_the_node(self):
        for body in ({}, {"id": 4}, {"address": "127.0.0.4:7004"}, {"id": 0, "address": "127.0.0.4:7004"},
                     {"id": "4", "address": "127.0.0.4:7004"}, {"id": 4, "address": "localhost:7004"},
                     {"id": 4, "address": "127.0.0.4"}, {"id": 4, "address": "127.0.0.4:70000"},
                     {"id": 4, "address": "127.0.0.4:7004", "tenants": 1}, [4]):
            r = self.client.post(MEMBERS, body)
            self.assertEqual(r.status, 400, f"{body}: {r}")
            self.assertTrue(r.json()["error"], r)
        self.assertEqual(self.client.post(MEMBERS, raw_body=b"").status, 400)
        for node in ("0", "x", "-1"):
            r = self.client.delete(f"{MEMBERS}/{node}")
            self.assertEqual(r.status, 400, f"{node}: {r}")

        out = self.admin("cluster", "add", "4", "localhost:7004", code=1)
        self.assertIn("address 'localhost:7004' is not <ip>:<port>", out.stderr)
        self.admin("cluster", "add", "0", "127.0.0.4:7004", code=2)
        self.admin("cluster", "add", "x", "127.0.0.4:7004", code=2)
        self.admin("cluster", "add", "4", code=2)
        self.admin("cluster", "remove", code=2)
        out = self.admin("cluster", "remove", "4", code=2)  # stdin is not a terminal
        self.assertIn("--yes", out.stderr)

    def test_remove_on_a_terminal_asks_first(self):
        master, slave = os.openpty()  # stdin is a terminal: the command asks instead of refusing
        try:
            process = subprocess.Popen([QUEEN_BIN, "admin", "--url", self.url(), "cluster", "remove", "4"],
                                       stdin=slave, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            os.write(master, b"n\n")
            stdout, stderr = process.communicate(timeout=60)
        finally:
            os.close(slave)
            os.close(master)
        self.assertEqual(process.returncode, 1, stdout + stderr)
        self.assertIn("Remove node 4 from the cluster (its tenants move to the other members first)?", stderr)
        self.assertIn("node 4 not removed", stderr)


class State(AdminTestCase):
    """`queen admin kv|locks|timers` (cli/commands/admin_state.cpp) against the KV, lock and timer
    routes."""

    def transaction(self, *operations):
        r = self.client.post("/api/v1/transaction", {"operations": list(operations)})
        self.assertEqual(r.status, 200, r)
        self.assertTrue(r.json()["success"], r)
        return r.json()

    def test_kv_list_pages_and_get_reads_one_key(self):
        self.transaction({"type": "kv.set", "bucket": "orders", "key": "o-1", "value": {"state": "paid"}},
                         {"type": "kv.set", "bucket": "orders", "key": "o-2", "value": [1, 2]},
                         {"type": "kv.set", "bucket": "orders", "key": "x-3", "value": "text", "ttlMs": 3600000},
                         {"type": "kv.set", "bucket": "users", "key": "a b/c", "value": None})
        self.assertEqual(self.admin_json("kv", "list"),
                         {"buckets": [{"bucket": "orders", "keys": 3}, {"bucket": "users", "keys": 1}]})
        self.assertEqual(self.table("kv", "list"), [["BUCKET", "KEYS"], ["orders", "3"], ["users", "1"]])

        page = self.admin_json("kv", "list", "orders")
        self.assertEqual(page["bucket"], "orders")
        self.assertEqual([k["key"] for k in page["keys"]], ["o-1", "o-2", "x-3"])
        self.assertEqual([k["value"] for k in page["keys"]], [{"state": "paid"}, [1, 2], "text"])
        self.assertIsNone(page["keys"][0]["expiresAt"])
        self.assertIsInstance(page["keys"][2]["expiresAt"], str)
        self.assertIsNone(page["nextAfter"])
        version = page["keys"][0]["version"]
        self.assertGreater(version, 0)
        # The admin reads what the route answers.
        direct = self.client.get("/api/v1/kv/orders?limit=100").json()
        self.assertEqual([k["key"] for k in direct["keys"]], [k["key"] for k in page["keys"]])
        self.assertEqual([k["version"] for k in direct["keys"]], [k["version"] for k in page["keys"]])

        first = self.admin_json("kv", "list", "orders", "--limit", "2")
        self.assertEqual([k["key"] for k in first["keys"]], ["o-1", "o-2"])
        self.assertEqual(first["nextAfter"], "o-2")
        self.assertIn("more: queen admin kv list orders --after o-2", self.admin("kv", "list", "orders", "--limit", "2").stdout)
        rest = self.admin_json("kv", "list", "orders", "--after", "o-2")
        self.assertEqual([k["key"] for k in rest["keys"]], ["x-3"])
        self.assertIsNone(rest["nextAfter"])
        self.assertEqual([k["key"] for k in self.admin_json("kv", "list", "orders", "--prefix", "o-")["keys"]],
                         ["o-1", "o-2"])
        rows = self.table("kv", "list", "orders")
        self.assertEqual(rows[0], ["KEY", "VERSION", "UPDATED", "EXPIRES", "VALUE"])
        self.assertEqual(rows[1][:2], ["o-1", str(version)])
        self.assertEqual(rows[1][3:], ["-", '{"state":"paid"}'])

        entry = self.admin_json("kv", "get", "orders", "o-1")
        self.assertEqual(entry["value"], {"state": "paid"})
        self.assertEqual(entry["version"], version)
        direct = self.client.get("/api/v1/kv/orders/o-1").json()
        for key in ("bucket", "key", "value", "version", "updatedAt", "expiresAt"):
            self.assertEqual(entry[key], direct[key], key)
        # Names are percent-encoded on the way: a space and a slash in a key.
        odd = self.admin_json("kv", "get", "users", "a b/c")
        self.assertEqual((odd["key"], odd["value"]), ("a b/c", None))
        text = self.admin("kv", "get", "orders", "o-1").stdout
        self.assertIn(["value", '{"state":"paid"}'], [line.split() for line in text.splitlines()])
        missing = self.admin("kv", "get", "orders", "nope", code=1)
        self.assertIn("/api/v1/kv/orders/nope", missing.stderr)

    def test_locks_list_and_get_show_the_grants(self):
        r = self.client.post("/api/v1/locks/jobs%2F1/acquire", {"owner": "worker-a", "ttlMs": 60000})
        self.assertEqual(r.status, 200, r)
        grant = r.json()
        r = self.client.post("/api/v1/locks/jobs-2/acquire", {"owner": "worker-b", "ttlMs": 60000})
        self.assertEqual(r.status, 200, r)
        listed = self.admin_json("locks", "list")
        self.assertEqual([(l["name"], l["owner"]) for l in listed["locks"]],
                         [("jobs-2", "worker-b"), ("jobs/1", "worker-a")])
        self.assertIsNone(listed["nextAfter"])
        got = self.admin_json("locks", "get", "jobs/1")
        for key in ("name", "owner", "token", "acquiredAt", "expiresAt"):
            self.assertEqual(got[key], grant[key], key)
        rows = self.table("locks", "list")
        self.assertEqual(rows[0], ["LOCK", "OWNER", "TOKEN", "ACQUIRED", "EXPIRES"])
        self.assertEqual(rows[2][:3], ["jobs/1", "worker-a", str(grant["token"])])
        first = self.admin_json("locks", "list", "--limit", "1")
        self.assertEqual([l["name"] for l in first["locks"]], ["jobs-2"])
        self.assertEqual(first["nextAfter"], "jobs-2")
        self.assertEqual([l["name"] for l in self.admin_json("locks", "list", "--after", "jobs-2")["locks"]], ["jobs/1"])

        r = self.client.post("/api/v1/locks/jobs%2F1/release", {"token": grant["token"]})
        self.assertEqual(r.status, 200, r)
        self.admin("locks", "get", "jobs/1", code=1)
        self.assertEqual([l["name"] for l in self.admin_json("locks", "list")["locks"]], ["jobs-2"])

    def test_timers_list_and_get_show_pending_timers_and_delayed_pushes(self):
        self.transaction({"type": "timer.set", "id": "remind-1", "queue": "reminders", "payload": {"order": 1},
                          "delayMs": 3600000, "intervalMs": 60000},
                         {"type": "push", "items": [{"queue": "later", "payload": 2, "delayMs": 7200000}]})
        listed = self.admin_json("timers", "list")
        ids = [t["id"] for t in listed["timers"]]
        self.assertIn("remind-1", ids)
        self.assertEqual(len([i for i in ids if i.startswith("~delay.")]), 1, ids)
        timer = self.admin_json("timers", "get", "remind-1")
        self.assertEqual((timer["queue"], timer["partition"], timer["payload"]), ("reminders", "Default", {"order": 1}))
        self.assertEqual((timer["intervalMs"], timer["fired"], timer["endAt"]), (60000, 0, None))
        direct = self.client.get("/api/v1/timers/remind-1").json()
        for key in ("id", "dueAt", "intervalMs", "fired", "createdAt", "queue", "partition", "payload"):
            self.assertEqual(timer[key], direct[key], key)
        rows = self.table("timers", "list")
        self.assertEqual(rows[0], ["TIMER", "DUE", "INTERVAL_MS", "END", "FIRED", "QUEUE", "PARTITION"])
        self.assertIn(["remind-1", direct["dueAt"], "60000", "-", "0", "reminders", "Default"], rows)
        text = [line.split() for line in self.admin("timers", "get", "remind-1").stdout.splitlines()]
        self.assertIn(["payload", '{"order":1}'], text)

        self.assertEqual(self.client.delete("/api/v1/timers/remind-1").status, 200)
        self.admin("timers", "get", "remind-1", code=1)


class ExitCodes(unittest.TestCase):
    def test_server_down_is_retryable(self):
        server = Server()
        server.start()
        url = f"http://127.0.0.1:{server.port}"
        server.cleanup()  # the port now refuses connections
        for args in (["queues", "list"], ["health"], ["queues", "show", "q"], ["maintenance", "on"],
                     ["tenant", "list"], ["tenant", "create", "t"], ["tenant", "delete", "t", "--yes"],
                     ["cluster", "rebalance"], ["cluster", "members"], ["cluster", "add", "4", "127.0.0.4:7004"],
                     ["cluster", "remove", "4", "--yes"], ["kv", "list"], ["kv", "list", "b"], ["kv", "get", "b", "k"],
                     ["locks", "list"], ["locks", "get", "l"], ["timers", "list"], ["timers", "get", "t"]):
            out = run_admin(["--url", url] + args)
            self.assertEqual(out.returncode, 3, f"{args}: {out.stdout}{out.stderr}")
            self.assertIn("connect", out.stderr)

    def test_a_broker_that_never_answers_times_out_as_retryable(self):
        with socket.socket() as listener:  # accepts connections (backlog) but never reads
            listener.bind(("127.0.0.1", 0))
            listener.listen(8)
            port = listener.getsockname()[1]
            out = run_admin(["--url", f"http://127.0.0.1:{port}", "--timeout", "0.5", "queues", "list"])
        self.assertEqual(out.returncode, 3, out.stderr)
        self.assertIn("timeout", out.stderr)

    def test_usage_errors(self):
        for args in (["queues"], ["queues", "show"], ["bogus"], ["--url", "ftp://x:1", "health"],
                     ["--url", "http://127.0.0.1:6632/path", "health"], ["--timeout", "0", "health"],
                     ["queues", "create", "q", "--lease-time", "-1"], ["queues", "create", "q", "--ttl", "x"],
                     ["kv"], ["kv", "get", "b"], ["kv", "list", "--prefix", "a"], ["kv", "list", "b", "--limit", "0"], ["locks", "get"],
                     ["timers", "list", "--limit", "1001"], ["timers", "get"]):
            out = run_admin(args)
            self.assertEqual(out.returncode, 2, f"{args}: {out.stdout}{out.stderr}")

    def test_help_lists_every_command(self):
        out = run_admin(["--help"])
        self.assertEqual(out.returncode, 0)
        for name in ("queues", "partitions", "groups", "dlq", "messages", "maintenance", "health", "tenant",
                     "cluster", "kv", "locks", "timers", "--json", "--url", "--tenant", "--timeout"):
            self.assertIn(name, out.stdout)
        for command, flags in ((["kv", "list"], ("--prefix", "--after", "--limit")), (["locks", "list"], ("--after", "--limit")),
                               (["timers", "list"], ("--after", "--limit"))):
            out = run_admin(command + ["--help"])
            for flag in flags:
                self.assertIn(flag, out.stdout, command)
        out = run_admin(["tenant", "--help"])
        for name in ("list", "create", "delete"):
            self.assertIn(name, out.stdout)
        out = run_admin(["cluster", "--help"])
        for name in ("rebalance", "members", "add", "remove"):
            self.assertIn(name, out.stdout)
        self.assertIn("--yes", run_admin(["cluster", "remove", "--help"]).stdout)
        self.assertIn("--replication", run_admin(["tenant", "create", "--help"]).stdout)
        self.assertIn("--yes", run_admin(["tenant", "delete", "--help"]).stdout)
        out = run_admin(["queues", "create", "--help"])
        for flag in list(ALL_OPTIONS) + list(ALL_FLAGS):
            self.assertIn(flag, out.stdout)


if __name__ == "__main__":
    unittest.main()
