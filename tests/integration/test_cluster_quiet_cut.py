"""tests/integration/test_cluster_quiet_cut.py — a quiet tenant recovers from a one-way cut of
its leader.

Three real `queen serve` processes (node i on 127.0.0.i) run in a private network namespace, as in
test_chaos.py, so iptables rules cut peer links one direction at a time. The default tenant
(replication 3) goes quiet: its queue has no retention or TTL, so no sweep wakes it. Then one
direction is cut: the others' packets to the quiet leader (it hears nothing, and what it sends
stalls once TCP misses their acknowledgements), only the data they send it (their TCP
acknowledgements pass, so its node heartbeats keep reaching them: it keeps sending and hears
nothing), or the leader's packets to the others. A push through a follower, retried on 503 after
its Retry-After as clients do, must be acknowledged by a new leader (a higher term) within 60 s;
after the heal the three nodes agree on one leader again, a push through the old leader is
acknowledged, and every acknowledged push is delivered exactly once.

The test needs root, `ip netns` and iptables and is skipped (saying why) where it cannot run."""
import os
import time
import unittest

from harness import ClusterProcesses, metric, wait_until
from test_chaos import Network, run, run_in_namespace, why_not_runnable

NETNS_ENV = "QUEEN_QUIET_CUT_NETNS"
CLIENT_ADDRESS = ("127.0.0.100", 0)  # clients connect from here: the peer-link cuts never hit them
QUEUE = "quiet"
RECOVERY_BOUND_S = 60


class DataCut(Network):
    """Drops only the TCP segments from a to b that carry data: a's pure acknowledgements of
    b's stream (52 bytes with TCP timestamps, Linux's default) pass, so what b sends keeps
    arriving while b hears nothing. A plain cut drops those acknowledgements too, and b's
    stream to a stalls within a retransmission timeout."""

    def cut(self, a, b):
        run(["iptables", "-A", "INPUT", "-s", f"127.0.0.{a}", "-d", f"127.0.0.{b}", "-p", "tcp",
             "-m", "length", "--length", "53:65535", "-j", "DROP"])


class QuietCut(unittest.TestCase):
    # Quiet after 5 idle ticks (100 ms); ticks of 20 ms, an election timeout of 10 ticks (200 ms).
    settings = {"cluster.quiesce_ticks": "5", "tenant.sweep_interval_ms": "200"}

    def in_namespace(self):
        """True inside the namespace; outside, runs this test in one (or skips) and returns False."""
        if os.environ.get(NETNS_ENV) is not None:
            return True
        reason = why_not_runnable()
        if reason:
            self.skipTest(reason)
        code, reason = run_in_namespace(self.id(), NETNS_ENV, "queen-quietcut")
        if reason:
            self.skipTest(reason)
        self.assertEqual(code, 0, "the test failed inside the namespace (output above)")
        return False

    def client(self, i, timeout=30):
        return self.cluster.nodes[i].client(timeout=timeout, source_address=CLIENT_ADDRESS)

    def metrics(self, i):
        c = self.client(i, timeout=10)
        try:
            r = c.get("/metrics/prometheus")
        finally:
            c.close()
        self.assertEqual(r.status, 200, r)
        return r.body

    def quiet_everywhere(self):
        for i in self.cluster.nodes:
            body = self.metrics(i)
            if metric(body, "queen_raft_groups") != 1 or metric(body, "queen_raft_quiet_groups") != 1:
                return False
        return True

    def push_until_acknowledged(self, via, txid, deadline):
        """Pushes one message through node `via` until it is acknowledged (queued, or duplicate:
        an earlier try that timed out was applied); on 503 waits the Retry-After, as clients do.
        Returns the number of tries."""
        c = self.client(via, timeout=15)
        tries = 0
        try:
            while True:
                tries += 1
                self.assertLess(time.monotonic(), deadline, f"no acknowledged push through node {via} "
                                f"within {RECOVERY_BOUND_S} s ({tries - 1} tries)")
                try:
                    r = c.push(QUEUE, [{"tx": txid}], partition="p", transaction_ids=[txid])
                except OSError as e:  # the answer did not come in the client's timeout
                    print(f"  push {txid} via node {via}: {e!r}", flush=True)
                    c.close()
                    continue
                if r.status == 201:
                    status = r.json()[0]["status"]
                    self.assertIn(status, ("queued", "duplicate"), r)
                    return tries
                self.assertEqual(r.status, 503, r)
                print(f"  push {txid} via node {via}: 503 {r.body[:120]} (Retry-After "
                      f"{r.headers.get('retry-after')})", flush=True)
                time.sleep(float(r.headers.get("retry-after", "1")))
        finally:
            c.close()

    def leader_among(self, nodes, timeout):
        leader, term = self.cluster.leader(among=nodes, timeout=timeout, source_address=CLIENT_ADDRESS)
        return leader, term

    def drain(self, leader):
        """Pops QUEUE through `leader` (auto-ack) until it is empty; returns the transaction ids
        in delivery order."""
        c = self.client(leader)
        delivered = []
        try:
            while True:
                r = c.pop(QUEUE, batch=100, wait=False, autoAck=True)
                if r.status == 204:
                    return delivered
                self.assertEqual(r.status, 200, r)
                delivered += [m["transactionId"] for m in r.json()["messages"]]
        finally:
            c.close()

    def run_cut(self, leader_hears_nothing, network):
        if not self.in_namespace():
            return
        self.cluster = ClusterProcesses(settings=self.settings).start()
        try:
            self.cut_and_recover(network, leader_hears_nothing)
        except BaseException:
            for i, node in self.cluster.nodes.items():  # what each node said last, for the diagnosis
                print(f"---- node {i} (last lines) ----\n" + "".join(node.log_lines[-60:]), flush=True)
            raise
        finally:
            network.heal()
            self.cluster.cleanup()

    def cut_and_recover(self, network, leader_hears_nothing):
        everyone = list(self.cluster.nodes)
        leader, term = self.leader_among(everyone, timeout=30)
        acknowledged = []
        for n in range(3):
            txid = f"before-{n}"
            self.push_until_acknowledged(leader, txid, time.monotonic() + 30)
            acknowledged.append(txid)
        wait_until(self.quiet_everywhere, timeout=30, what="the default tenant's group quiet on every node")
        # Still the same leader: going quiet changed nothing.
        self.assertEqual(self.leader_among(everyone, timeout=10), (leader, term))
        others = [i for i in everyone if i != leader]
        counters = ("queen_raft_groups_woken_total", "queen_cluster_peers_gone_total")
        before = {i: self.metrics(i) for i in everyone}

        for o in others:
            if leader_hears_nothing:
                network.cut(o, leader)
            else:
                network.cut(leader, o)
        started = time.monotonic()
        direction = "others -> leader" if leader_hears_nothing else "leader -> others"
        direction += f" ({type(network).__name__})"
        print(f"  cut {direction}: leader {leader} (term {term}), followers {others}", flush=True)
        via = others[0]
        tries = self.push_until_acknowledged(via, "during", started + RECOVERY_BOUND_S)
        acknowledged.append("during")
        took = time.monotonic() - started
        new_leader, new_term = self.leader_among(others, timeout=10)
        print(f"  acknowledged through node {via} after {took:.2f} s ({tries} tries); node {new_leader} "
              f"leads in term {new_term}", flush=True)
        self.assertNotEqual(new_leader, leader)
        self.assertGreater(new_term, term)
        for i in everyone:  # how it went (which node believed which gone), for the reader
            after = self.metrics(i)
            print(f"  node {i} since the cut: " + ", ".join(
                f"{name} +{metric(after, name) - metric(before[i], name):.0f}" for name in counters), flush=True)
        # More writes while the cut lasts, through both sides of the new majority.
        for n, i in enumerate(others):
            txid = f"during-{n}"
            self.push_until_acknowledged(i, txid, started + RECOVERY_BOUND_S)
            acknowledged.append(txid)

        network.heal()
        healed = time.monotonic()
        final_leader, _ = self.leader_among(everyone, timeout=RECOVERY_BOUND_S)
        self.push_until_acknowledged(leader, "after", healed + RECOVERY_BOUND_S)  # the old leader too
        acknowledged.append("after")
        self.cluster.wait_applied(final_leader)
        delivered = self.drain(final_leader)
        self.assertEqual(sorted(delivered), sorted(acknowledged), "each acknowledged push delivered once")
        print(f"  healed: node {final_leader} leads, {len(delivered)} messages delivered once "
              f"({time.monotonic() - healed:.2f} s after the heal)", flush=True)

    def test_leader_hears_nothing(self):
        """Others -> leader cut (every packet): the quiet leader hears nothing; what it sends
        stops arriving too once its unacknowledged TCP window is out."""
        self.run_cut(True, Network())

    def test_leader_hears_nothing_and_keeps_sending(self):
        """Others -> leader, their data only: the quiet leader hears nothing while its node
        heartbeats (and raft messages) keep reaching the others."""
        self.run_cut(True, DataCut())

    def test_leader_is_not_heard(self):
        """Leader -> others cut: the quiet leader hears everything, nobody hears it."""
        self.run_cut(False, Network())


if __name__ == "__main__":
    unittest.main()
