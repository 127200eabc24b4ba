"""tests/integration/test_streams_admin.py — the stream query admin routes, `queen admin streams`
and the stream metrics against a real `queen serve` (docs/http-api.md §11, docs/metrics.md).

Queries and their state rows are made by the runners' endpoints (POST /streams/v1/queries and
/streams/v1/cycle) and checked over plain HTTP (harness.Client), so a wrong admin command cannot
hide behind another."""
import json
import os
import subprocess
import unittest

from harness import QUEEN_BIN, ServerTestCase, metric, wait_until

TENANT = 'tenant="default"'


def run_admin(args, timeout=60):
    """Runs `queen admin ARGS` with stdin closed (not a terminal); returns the CompletedProcess."""
    return subprocess.run([QUEEN_BIN, "admin"] + list(args), capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL, env=dict(os.environ))


class StreamsAdminCase(ServerTestCase):
    def admin(self, *args, code=0):
        """`queen admin --url <server> ARGS`; asserts the exit code and returns the process."""
        out = run_admin(["--url", f"http://127.0.0.1:{self.server.port}"] + list(args))
        self.assertEqual(out.returncode, code, f"queen admin {' '.join(args)}:\n{out.stdout}\n{out.stderr}")
        return out

    def admin_json(self, *args):
        return json.loads(self.admin(*args, "--json").stdout)

    def metrics(self):
        r = self.client.get("/metrics/prometheus")
        self.assertEqual(r.status, 200, r)
        return r.body

    def wait_metric(self, series, value):
        """Waits until the scrape shows `series` at `value`: a scrape reads the state as last
        committed, without waiting for the entries answered before it (docs/metrics.md)."""
        wait_until(lambda: metric(self.metrics(), series) == value, timeout=10, what=f"{series} == {value}")


class WithoutQueries(StreamsAdminCase):
    def test_empty_listing_404s_400s_and_zero_metrics(self):
        self.assertEqual(self.client.get("/api/v1/streams/queries").json(), {"queries": [], "nextAfter": None})
        for method, path in (("GET", "/api/v1/streams/queries/nope"), ("POST", "/api/v1/streams/queries/nope/reset"),
                             ("DELETE", "/api/v1/streams/queries/nope")):
            r = self.client.request(method, path)
            self.assertEqual(r.status, 404, (method, path, r))
            self.assertEqual(r.json(), {"error": "stream query 'nope' not found"})
        for path in ("/api/v1/streams/queries?limit=0", "/api/v1/streams/queries?limit=abc",
                     "/api/v1/streams/queries/" + "n" * 257):
            self.assertEqual(self.client.get(path).status, 400, path)
        body = self.metrics()
        self.assertIn(f"queen_stream_queries{{{TENANT}}} 0\n", body)
        self.assertIn(f"queen_stream_state_rows{{{TENANT}}} 0\n", body)
        self.assertNotIn("queen_stream_lag_messages{", body)

    def test_cli_json_and_exit_codes(self):
        self.assertEqual(self.admin_json("streams", "list"), {"queries": [], "nextAfter": None})
        self.assertEqual(self.admin("streams", "list").stdout.split(), ["QUERY", "SOURCE", "SINK", "EPOCH", "LAG",
                                                                        "UPDATED", "QUERY_ID"])
        for action in ("show", "reset", "delete"):
            out = self.admin("streams", action, "nope", code=1)
            self.assertIn("stream query 'nope' not found", out.stderr)
            self.assertEqual(out.stdout, "")
        for args in (["streams"], ["streams", "show"], ["streams", "reset"], ["streams", "delete"],
                     ["streams", "list", "--limit", "0"], ["streams", "list", "--limit", "1001"]):
            out = run_admin(["--url", f"http://127.0.0.1:{self.server.port}"] + args)
            self.assertEqual(out.returncode, 2, f"{args}: {out.stdout}{out.stderr}")

    def test_cli_server_down_is_retryable(self):
        url = f"http://127.0.0.1:{self.server.port}"
        self.client.close()
        self.server.stop()  # the port now refuses connections
        for args in (["streams", "list"], ["streams", "show", "q"], ["streams", "reset", "q"],
                     ["streams", "delete", "q"]):
            out = run_admin(["--url", url] + args)
            self.assertEqual(out.returncode, 3, f"{args}: {out.stdout}{out.stderr}")
            self.assertIn("connect", out.stderr)
        self.server.start()  # for tearDown


class WithQueries(StreamsAdminCase):
    def register(self, name, source, sink=None, config_hash="h1"):
        body = {"name": name, "source_queue": source, "config_hash": config_hash}
        if sink:
            body["sink_queue"] = sink
        r = self.client.post("/streams/v1/queries", body)
        self.assertEqual(r.status, 200, r)
        return r.json()

    def pop_and_cycle(self, query_id, partition, batch, keys):
        """Pops `batch` messages of `partition` with the query's group, then one cycle: upserts
        `keys` into that source partition and acks the batch's last message."""
        popped = self.client.pop("events", partition, batch=batch, consumerGroup="streams.totals")
        self.assertEqual(popped.status, 200, popped)
        messages = popped.json()["messages"]
        self.assertEqual(len(messages), batch)
        last = messages[-1]
        cycle = {"query_id": query_id, "partition_id": last["partitionId"], "consumer_group": "streams.totals",
                 "state_ops": [{"type": "upsert", "key": key, "value": {"n": 1}} for key in keys],
                 "ack": {"transactionId": last["transactionId"], "leaseId": last["leaseId"], "status": "completed"}}
        r = self.client.post("/streams/v1/cycle", cycle)
        self.assertEqual(r.status, 200, r)
        self.assertTrue(r.json()["success"], r)
        return last["partitionId"]

    def test_list_show_reset_delete_and_metrics(self):
        first = self.register("totals", "events", "sums")
        self.register("alpha", "raw")
        query_id = first["query_id"]
        self.assertEqual(self.client.push("events", [1, 2, 3], partition="p1").status, 201)
        self.assertEqual(self.client.push("events", [4, 5], partition="p2").status, 201)
        self.wait_metric(f'queen_stream_lag_messages{{{TENANT},query="totals"}}', 5)
        self.assertEqual(metric(self.metrics(), f"queen_stream_queries{{{TENANT}}}"), 2)

        p1 = self.pop_and_cycle(query_id, "p1", 2, ["a", "b"])
        p2 = self.pop_and_cycle(query_id, "p2", 1, ["c"])
        listed = self.client.get("/api/v1/streams/queries").json()
        self.assertEqual([q["name"] for q in listed["queries"]], ["alpha", "totals"])
        totals = listed["queries"][1]
        self.assertEqual({k: totals[k] for k in ("query_id", "source_queue", "sink_queue", "config_hash", "epoch", "lag")},
                         {"query_id": query_id, "source_queue": "events", "sink_queue": "sums", "config_hash": "h1",
                          "epoch": 1, "lag": 2})
        self.assertIsNone(listed["queries"][0]["sink_queue"])
        shown = self.client.get("/api/v1/streams/queries/totals").json()
        self.assertEqual(shown["rows"], 3)
        self.assertEqual(shown["partitions"], sorted([{"partition_id": p1, "rows": 2}, {"partition_id": p2, "rows": 1}],
                                                     key=lambda p: p["partition_id"]))
        # The CLI prints the routes' JSON, and a table with the query in it.
        self.assertEqual(self.admin_json("streams", "list"), listed)
        self.assertEqual(self.admin_json("streams", "show", "totals"), shown)
        rows = [line.split() for line in self.admin("streams", "list").stdout.splitlines()]
        self.assertEqual(rows[2][:5], ["totals", "events", "sums", "1", "2"])
        self.assertIn(p1, self.admin("streams", "show", "totals").stdout)
        self.wait_metric(f'queen_stream_lag_messages{{{TENANT},query="totals"}}', 2)
        body = self.metrics()
        self.assertEqual(metric(body, f"queen_stream_state_rows{{{TENANT}}}"), 3)
        self.assertIn(f'queen_stream_lag_messages{{{TENANT},query="alpha"}} 0\n', body)

        # Reset: a new epoch, the same id, no rows; the runner's next cycle writes again.
        reset = self.admin_json("streams", "reset", "totals")
        self.assertEqual(reset, {"success": True, "name": "totals", "query_id": query_id, "epoch": 2})
        after = self.client.get("/api/v1/streams/queries/totals").json()
        self.assertEqual((after["epoch"], after["rows"], after["partitions"]), (2, 0, []))
        self.pop_and_cycle(query_id, "p1", 1, ["d"])
        self.assertEqual(self.client.get("/api/v1/streams/queries/totals").json()["rows"], 1)
        # The old epoch's rows count until the Due entries have deleted them.
        self.wait_metric(f"queen_stream_state_rows{{{TENANT}}}", 1)
        self.wait_metric(f'queen_stream_lag_messages{{{TENANT},query="totals"}}', 1)
        out = self.admin("streams", "reset", "alpha")
        self.assertIn("epoch 2", out.stdout)

        # Delete: gone; the name registered again is a new query.
        self.assertIn("deleted stream query totals", self.admin("streams", "delete", "totals").stdout)
        self.assertEqual(self.client.get("/api/v1/streams/queries/totals").status, 404)
        self.admin("streams", "show", "totals", code=1)
        self.admin("streams", "delete", "totals", code=1)
        again = self.register("totals", "events", "sums")
        self.assertNotEqual(again["query_id"], query_id)
        fresh = self.client.get("/api/v1/streams/queries/totals").json()
        self.assertEqual((fresh["query_id"], fresh["epoch"], fresh["rows"]), (again["query_id"], 1, 0))
        self.wait_metric(f"queen_stream_queries{{{TENANT}}}", 2)


if __name__ == "__main__":
    unittest.main()
