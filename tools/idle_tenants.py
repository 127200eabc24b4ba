#!/usr/bin/env python3
"""tools/idle_tenants.py — what idle tenants cost: starts a 3-node cluster of real `queen serve`
processes on loopback (tests/integration/harness.py), creates N tenants of replication 3, lets
them idle, then reports per node over a measuring window: RSS and its composition
(/proc/PID/smaps_rollup), threads, CPU% (utime+stime), peer bytes/s (queen_cluster_* metrics,
else the loopback interface) and the quiet groups.

    QUEEN_BIN=build/release/cli/queen python3 tools/idle_tenants.py --tenants 1000 --window 60
"""
import argparse
import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "../tests/integration"))
from harness import ClusterProcesses, metric, wait_until  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")


def proc_stat(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime (fields 14, 15)


def proc_status(pid):
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            out[key] = value.strip()
    return out


def smaps_rollup(pid):
    out = {}
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 3 and parts[2] == "kB":
                    out[parts[0].rstrip(":")] = int(parts[1])
    except OSError:
        pass
    return out


def lo_bytes():
    with open("/proc/net/dev") as f:
        for line in f:
            if line.strip().startswith("lo:"):
                fields = line.split(":", 1)[1].split()
                return int(fields[0])
    return 0


def metrics(cluster, i):
    client = cluster.nodes[i].client(timeout=60)
    try:
        return client.get("/metrics/prometheus").body
    finally:
        client.close()


def create_tenants(cluster, count, workers=4):
    names = [f"t{n:04d}" for n in range(1, count + 1)]
    lock = threading.Lock()
    failures = []

    def work(k):
        node = list(cluster.nodes)[k % len(cluster.nodes)]
        client = cluster.nodes[node].client(timeout=120)
        while True:
            with lock:
                if not names:
                    break
                name = names.pop()
            for _ in range(50):
                r = client.post("/api/v1/system/tenants", {"name": name, "replication": 3})
                if r.status in (201, 409):
                    break
                time.sleep(0.2)
            else:
                failures.append((name, r))
        client.close()

    threads = [threading.Thread(target=work, args=(k,)) for k in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if failures:
        raise SystemExit(f"tenant creation failed: {failures[:3]}")


def hosted(cluster, i):
    client = cluster.nodes[i].client(timeout=60)
    try:
        r = client.get("/health")
        return len(r.json()["tenants"]) if r.status in (200, 503) else 0
    finally:
        client.close()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tenants", type=int, default=1000)
    parser.add_argument("--settle", type=float, default=20, help="idle seconds before measuring")
    parser.add_argument("--window", type=float, default=60, help="measuring window, seconds")
    parser.add_argument("--set", action="append", default=[], help="extra key=value settings")
    args = parser.parse_args()
    settings = {"cluster.tick_ms": "50", "cluster.election_ticks": "20",
                "cluster.heartbeat_ticks": "2", "tenant.sweep_interval_ms": "5000"}
    for kv in args.set:
        key, _, value = kv.partition("=")
        settings[key] = value
    cluster = ClusterProcesses(settings=settings).start()
    try:
        cluster.leader()
        started = time.monotonic()
        create_tenants(cluster, args.tenants)
        print(f"created {args.tenants} tenants in {time.monotonic() - started:.0f} s", flush=True)
        for i in cluster.nodes:
            wait_until(lambda: hosted(cluster, i) >= args.tenants + 1, timeout=600,
                       what=f"node {i} hosts every tenant")
        time.sleep(args.settle)  # a measurement of idle time, not a wait for an event
        pids = {i: n.process.pid for i, n in cluster.nodes.items()}
        cpu0 = {i: proc_stat(p) for i, p in pids.items()}
        m0 = {i: metrics(cluster, i) for i in pids}
        lo0, t0 = lo_bytes(), time.monotonic()
        time.sleep(args.window)
        cpu1 = {i: proc_stat(p) for i, p in pids.items()}
        lo1, t1 = lo_bytes(), time.monotonic()
        m1 = {i: metrics(cluster, i) for i in pids}
        elapsed = t1 - t0
        print(f"window {elapsed:.0f} s; loopback total {(lo1 - lo0) / elapsed / 1024:.1f} KiB/s "
              f"(3 nodes, each byte counted once)")
        for i, pid in pids.items():
            status = proc_status(pid)
            rollup = smaps_rollup(pid)
            cpu = (cpu1[i] - cpu0[i]) / TICKS / elapsed * 100
            sent = (metric(m1[i], "queen_cluster_bytes_sent_total") -
                    metric(m0[i], "queen_cluster_bytes_sent_total")) / elapsed
            msgs = (metric(m1[i], "queen_raft_messages_sent_total") -
                    metric(m0[i], "queen_raft_messages_sent_total")) / elapsed
            print(f"node {i}: VmRSS {status['VmRSS']}, RssAnon {status.get('RssAnon')}, "
                  f"RssFile {status.get('RssFile')}, threads {status['Threads']}, "
                  f"VmSize {status['VmSize']}, cpu {cpu:.1f}%, peer bytes sent/s {sent:.0f}, "
                  f"raft msgs sent/s {msgs:.0f}, quiet groups "
                  f"{metric(m1[i], 'queen_raft_quiet_groups'):.0f}")
            print(f"        smaps_rollup kB: " + ", ".join(
                f"{k}={v}" for k, v in rollup.items()
                if k in ("Rss", "Pss", "Pss_Anon", "Pss_File", "Shared_Clean", "Private_Dirty",
                         "Anonymous")))
        if os.environ.get("IDLE_TENANTS_PAUSE"):
            input(f"pids {pids}; press enter to stop ")
    finally:
        cluster.cleanup()


if __name__ == "__main__":
    main()
