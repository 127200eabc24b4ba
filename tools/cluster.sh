#!/usr/bin/env bash
# tools/cluster.sh [QUEEN_BIN] — `make cluster`: a local three-node cluster from
# conf/cluster-3/node{1,2,3}.toml, data in ./data/node{1,2,3}, HTTP on 127.0.0.{1,2,3}:6632, peers
# on port 6633. Runs in the foreground with each line prefixed by its node; Ctrl-C stops all three.
set -euo pipefail
cd "$(dirname "$0")/.."
queen=${1:-build/release/cli/queen}
pids=()
stop() {
    for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    wait || true
}
trap stop INT TERM EXIT
for i in 1 2 3; do
    "$queen" serve --config "conf/cluster-3/node$i.toml" > >(sed -u "s/^/node$i| /") 2>&1 &
    pids+=($!)
done
cat <<TXT
A three-node cluster is starting (Ctrl-C stops it):
  node 1  http://127.0.0.1:6632   data ./data/node1
  node 2  http://127.0.0.2:6632   data ./data/node2
  node 3  http://127.0.0.3:6632   data ./data/node3
Each tenant is a raft group over the three; send writes to its leader:
  curl -s http://127.0.0.1:6632/health     (tenants[].role, leaderId)
TXT
wait
