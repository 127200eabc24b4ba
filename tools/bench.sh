#!/usr/bin/env bash
# tools/bench.sh — `make bench`: start a fresh `queen serve` (free port, temp data dir on disk), run
# the standard profiles of conf/bench.toml (or the profiles named), write bench/results/<date>.json
# and a markdown table next to it, stop the server.
# Usage: tools/bench.sh path/to/queen [PROFILE...]
# Env: QUEEN_BENCH_DIR (parent of the temp data dir, default /var/tmp; must not be tmpfs),
#      QUEEN_BENCH_PROFILES (profiles file, default conf/bench.toml), QUEEN_BENCH_SET (extra
#      space-separated `key=value` server settings).
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

data_dir=$(mktemp -d "$parent/queen-bench.XXXXXX")
server_log=$data_dir.log
results_dir=$root/bench/results
mkdir -p "$results_dir"
stamp=$(date -u +%Y-%m-%dT%H%M%SZ)
lines=$(mktemp)
server_pid=""

cleanup() {
    local code=$?
    if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
        kill -TERM "$server_pid"
        wait "$server_pid" || true
    fi
    rm -rf "$data_dir" "$lines"
    if [ "$code" -eq 0 ]; then
        rm -f "$server_log"
    else
        echo "bench: server log kept in $server_log" >&2
    fi
}
trap cleanup EXIT

settings=(--set http.address=127.0.0.1 --set http.port=0)
for kv in ${QUEEN_BENCH_SET:-}; do
    settings+=(--set "$kv")
done
"$queen" serve --data-dir "$data_dir" "${settings[@]}" >"$server_log" 2>&1 &
server_pid=$!
port=""
for _ in $(seq 1 300); do
    port=$(sed -n 's/.*node\.listening http=[^ ]*:\([0-9]*\).*/\1/p' "$server_log" | head -n 1)
    [ -n "$port" ] && break
    kill -0 "$server_pid" 2>/dev/null || { cat "$server_log" >&2; exit 1; }
    sleep 0.1
done
[ -n "$port" ] || { echo "bench: queen serve did not start" >&2; cat "$server_log" >&2; exit 1; }
url="http://127.0.0.1:$port"
echo "bench: queen serve pid $server_pid on $url, data in $data_dir ($(stat -f -c %T "$data_dir"))"

status=0
for profile in "${profiles[@]}"; do
    echo "bench: profile $profile (load average $(cut -d' ' -f1 /proc/loadavg))" >&2
    if ! "$queen" bench --profile "$profile" --profiles-file "$profiles_file" --url "$url" --json \
        --server-pid "$server_pid" \
        --durability "log group commit, fdatasync before ack; settings: ${QUEEN_BENCH_SET:-defaults}" >>"$lines"; then
        echo "bench: profile $profile failed or reported errors" >&2
        status=1
    fi
done

json=$results_dir/$stamp.json
markdown=$results_dir/$stamp.md
python3 - "$lines" "$json" "$markdown" "$stamp" <<'PY'
import json, os, platform, sys
lines, json_path, md_path, stamp = sys.argv[1:5]
results = [json.loads(line) for line in open(lines) if line.strip()]
doc = {"date": stamp, "host": platform.node(), "cores": os.cpu_count(),
       "kernel": platform.release(), "results": results}
with open(json_path, "w") as f:
    json.dump(doc, f, indent=2)
    f.write("\n")
rows = ["| profile | workload | msgs/s | target msgs/s | MB/s | p50 ms | p99 ms | max ms | errors | batch | size "
        "| partitions | clients | load avg | notes |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---|"]
for r in results:
    c, l = r["conditions"], r["latency_ms"]
    m = r["metrics"]
    notes = ", ".join(f"{k} {v:,.0f}" for k, v in m.items())
    target = f"{r['target_msgs_per_s']:,.0f}" if r.get("target_msgs_per_s") else "unpaced"
    rows.append(f"| {r['profile']} | {r['workload']} | {r['msgs_per_s']:,.0f} | {target} "
                f"| {r['mb_per_s']:.1f} "
                f"| {l['p50']:.2f} | {l['p99']:.2f} | {l['max']:.2f} | {r['errors']} | {c['batch']} "
                f"| {c['size_bytes']} | {c['partitions']:,} | {c['producers']}P/{c['consumers']}C "
                f"| {c['load_average_1m'] or 0:.1f} | {notes} |")
with open(md_path, "w") as f:
    f.write(f"Queen bench {stamp} on {platform.node()} ({os.cpu_count()} cores), "
            f"server {results[0]['conditions']['server_version'] if results else '?'}\n\n")
    f.write("\n".join(rows) + "\n")
print("\n".join(rows))
PY
echo "bench: wrote $json and $markdown"
exit $status
