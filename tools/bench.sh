#!/usr/bin/env bash
# tools/bench.sh — `make bench`: run the standard profiles of conf/bench.toml (or the profiles
# named), each against its own freshly started `queen serve` (free port, empty temp data dir on
# disk, stopped after the profile), so no profile runs on the data or the memory the earlier ones
# left; write bench/results/<date>.json and a markdown table next to it. Every profile runs
# QUEEN_BENCH_ROUNDS times (round by round, so a machine that slows down for a while slows one
# run of each profile, not every run of one); the table shows the median run of each profile,
# the range of all its runs and in how many runs its goal was met.
# Usage: tools/bench.sh path/to/queen [PROFILE...]
# Env: QUEEN_BENCH_DIR (parent of the temp data dir, default /var/tmp; must not be tmpfs),
#      QUEEN_BENCH_PROFILES (profiles file, default conf/bench.toml), QUEEN_BENCH_SET (extra
#      space-separated `key=value` server settings), QUEEN_BENCH_ROUNDS (runs of each profile,
#      default 3), QUEEN_BENCH_RESULTS (where the results go, default bench/results),
#      QUEEN_BENCH_SETTLE_MAX (seconds to wait at most between profiles, default 30; see settle).
set -euo pipefail

queen=${1:?usage: tools/bench.sh path/to/queen [PROFILE...]}
shift
root=$(cd "$(dirname "$0")/.." && pwd)
profiles_file=${QUEEN_BENCH_PROFILES:-$root/conf/bench.toml}
parent=${QUEEN_BENCH_DIR:-/var/tmp}
if [ "$(stat -f -c %T "$parent")" = tmpfs ]; then
    echo "bench: $parent is tmpfs (fdatasync is free there); set QUEEN_BENCH_DIR to a disk" >&2
    exit 2
fi

if [ $# -gt 0 ]; then
    profiles=("$@")
else
    mapfile -t profiles < <(python3 - "$profiles_file" <<'PY'
import sys, tomllib
with open(sys.argv[1], "rb") as f:
    for name, p in tomllib.load(f)["profiles"].items():
        if p.get("standard"):
            print(name)
PY
)
fi

rounds=${QUEEN_BENCH_ROUNDS:-3}
if ! [[ "$rounds" =~ ^[1-9][0-9]*$ ]]; then
    echo "bench: QUEEN_BENCH_ROUNDS must be a positive integer, not '$rounds'" >&2
    exit 2
fi
settle_max=${QUEEN_BENCH_SETTLE_MAX:-30}
if ! [[ "$settle_max" =~ ^[0-9]+$ ]]; then
    echo "bench: QUEEN_BENCH_SETTLE_MAX must be a whole number of seconds, not '$settle_max'" >&2
    exit 2
fi
results_dir=${QUEEN_BENCH_RESULTS:-$root/bench/results}
mkdir -p "$results_dir"
stamp=$(date -u +%Y-%m-%dT%H%M%SZ)
lines=$(mktemp)
report=$(mktemp)
data_dir=""
server_log=""
server_pid=""

stop_server() {
    if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
        kill -TERM "$server_pid"
        wait "$server_pid" || true
    fi
    server_pid=""
    [ -n "$data_dir" ] && rm -rf "$data_dir" "$server_log"
    data_dir=""
}

cleanup() {
    stop_server
    rm -f "$lines" "$report"
}
trap cleanup EXIT

settings=(--set http.address=127.0.0.1 --set http.port=0)
for kv in ${QUEEN_BENCH_SET:-}; do
    settings+=(--set "$kv")
done

# Starts a server on an empty data dir; sets server_pid and url.
start_server() {
    data_dir=$(mktemp -d "$parent/queen-bench.XXXXXX")
    server_log=$data_dir.log  # removed with the data dir; a failed profile copies it first
    # Created before the server starts: the loop below may read it before the background
    # shell has opened it (with pipefail, a missing file would end the script).
    : >"$server_log"
    "$queen" serve --data-dir "$data_dir" "${settings[@]}" >"$server_log" 2>&1 &
    server_pid=$!
    local port=""
    for _ in $(seq 1 300); do
        port=$(sed -n 's/.*node\.listening http=[^ ]*:\([0-9]*\).*/\1/p' "$server_log" | head -n 1)
        [ -n "$port" ] && break
        kill -0 "$server_pid" 2>/dev/null || { cat "$server_log" >&2; exit 1; }
        sleep 0.1
    done
    [ -n "$port" ] || { echo "bench: queen serve did not start" >&2; cat "$server_log" >&2; exit 1; }
    url="http://127.0.0.1:$port"
    echo "bench: queen serve pid $server_pid on $url, data in $data_dir ($(stat -f -c %T "$data_dir"))" >&2
}

# Waits until the memory the last profile freed (its server's heap, its data dir's page cache) is
# no longer being handed back to the hypervisor. A guest with free page reporting (virtio-balloon
# here) reports freed memory in bursts every ~2 s, ~0.5 GB a burst, and while a burst runs the
# guest's CPUs stall for 15-30 ms: a 3.5 GB teardown put such stalls into the first 8-12 s of
# the next profile and its paced p99 went from ~15 ms to 84-134 ms (docs/benchmarks.md, "Between
# profiles"). Done when a 2.5 s window reported under 64 MiB, or after QUEEN_BENCH_SETTLE_MAX
# seconds (default 30; 0 skips the wait); immediate where the kernel has no page reporting.
settle() {
    local counter=/sys/module/page_reporting/parameters/reported_kib
    [ -r "$counter" ] && [ "$settle_max" -gt 0 ] || return 0
    local -a window=()
    local waited=0 kib
    while :; do
        kib=$(cat "$counter")
        window+=("$kib")
        # The last six samples, 0.5 s apart: a 2.5 s window.
        if [ "${#window[@]}" -gt 6 ]; then
            window=("${window[@]:1}")
        fi
        if [ "${#window[@]}" -eq 6 ] && [ $((window[5] - window[0])) -lt 65536 ]; then
            break
        fi
        if [ "$waited" -ge $((settle_max * 2)) ]; then
            echo "bench: freed memory still being reported after ${settle_max} s; going on" >&2
            break
        fi
        sleep 0.5
        waited=$((waited + 1))
    done
    echo "bench: settled in $(awk "BEGIN{print $waited / 2}") s" >&2
}

status=0
for round in $(seq 1 "$rounds"); do
    for profile in "${profiles[@]}"; do
        start_server
        echo "bench: round $round of $rounds, profile $profile (load average $(cut -d' ' -f1 /proc/loadavg))" >&2
        if ! "$queen" bench --profile "$profile" --profiles-file "$profiles_file" --url "$url" --json \
            --server-pid "$server_pid" \
            --durability "log group commit, fdatasync before ack; settings: ${QUEEN_BENCH_SET:-defaults}" >"$report"; then
            kept=$parent/queen-bench-$stamp-$profile-$round.log
            cp "$server_log" "$kept"
            echo "bench: profile $profile failed or reported errors (server log: $kept)" >&2
            status=1
        fi
        # One line per run: the round, then the report (none when the run printed nothing).
        if [ -s "$report" ]; then
            printf '%s\t%s\n' "$round" "$(tr -d '\n' <"$report")" >>"$lines"
        fi
        stop_server
        settle
    done
done

json=$results_dir/$stamp.json
markdown=$results_dir/$stamp.md
python3 - "$lines" "$json" "$markdown" "$stamp" "$rounds" <<'PY'
import json, os, platform, sys
lines, json_path, md_path, stamp, rounds = sys.argv[1:6]
results = []
for line in open(lines):
    if line.strip():
        round_, report = line.split("\t", 1)
        result = json.loads(report)
        result["round"] = int(round_)
        results.append(result)
# Per profile, in the order profiles ran: the median run by msgs/s (the lower middle one of an
# even count), the range, and the runs that met the goal.
by_profile = {}
for r in results:
    by_profile.setdefault(r["profile"], []).append(r)
summary = []
for name, runs in by_profile.items():
    ranked = sorted(runs, key=lambda r: r["msgs_per_s"])
    median = ranked[(len(ranked) - 1) // 2]
    goal_runs = [r for r in runs if r.get("goal")]
    summary.append({
        "profile": name, "runs": len(runs), "median_round": median["round"],
        "msgs_per_s_median": median["msgs_per_s"], "msgs_per_s_min": ranked[0]["msgs_per_s"],
        "msgs_per_s_max": ranked[-1]["msgs_per_s"],
        "goal_met_runs": sum(1 for r in goal_runs if r["goal"]["met"]) if goal_runs else None,
        "median": median})
doc = {"date": stamp, "host": platform.node(), "cores": os.cpu_count(),
       "kernel": platform.release(), "rounds": int(rounds),
       "summary": [{k: v for k, v in s.items() if k != "median"} for s in summary],
       "results": results}
with open(json_path, "w") as f:
    json.dump(doc, f, indent=2)
    f.write("\n")
rows = ["| profile | workload | msgs/s (median) | range of runs | target msgs/s | MB/s | p50 ms | p99 ms "
        "| max ms | errors | goal | batch | size | partitions | clients | load avg | notes |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---|---:|---|"]
for s in summary:
    r = s["median"]
    c, l = r["conditions"], r["latency_ms"]
    m = r["metrics"]
    notes = ", ".join(f"{k} {v:,.1f}" if abs(v) < 100 else f"{k} {v:,.0f}" for k, v in m.items())
    target = f"{r['target_msgs_per_s']:,.0f}" if r.get("target_msgs_per_s") else "unpaced"
    spread = (f"{s['msgs_per_s_min']:,.0f} - {s['msgs_per_s_max']:,.0f} ({s['runs']} runs)"
              if s["runs"] > 1 else "1 run")
    errors = sum(x["errors"] for x in by_profile[s["profile"]])
    g = r.get("goal")
    goal = ""
    if g:
        parts = []
        if g["msgs_per_s_min"]:
            parts.append(f"≥ {g['msgs_per_s_min']:,.0f}/s")
        if g["p99_ms_max"]:
            parts.append(f"p99 < {g['p99_ms_max']:g} ms")
        goal = ", ".join(parts) + (": met" if g["met"] else ": **not met**")
        if s["runs"] > 1:
            goal += f" (median run; met in {s['goal_met_runs']} of {s['runs']})"
    rows.append(f"| {r['profile']} | {r['workload']} | {r['msgs_per_s']:,.0f} | {spread} | {target} "
                f"| {r['mb_per_s']:.1f} "
                f"| {l['p50']:.2f} | {l['p99']:.2f} | {l['max']:.2f} | {errors} | {goal} | {c['batch']} "
                f"| {c['size_bytes']} | {c['partitions']:,} | {c['producers']}P/{c['consumers']}C "
                f"| {c['load_average_1m'] or 0:.1f} | {notes} |")
with open(md_path, "w") as f:
    f.write(f"Queen bench {stamp} on {platform.node()} ({os.cpu_count()} cores), "
            f"server {results[0]['conditions']['server_version'] if results else '?'}, "
            f"{rounds} round(s); each row is the median run of its profile (errors: all runs)\n\n")
    f.write("\n".join(rows) + "\n")
print("\n".join(rows))
PY
echo "bench: wrote $json and $markdown"
exit $status
