#!/usr/bin/env bash
# tools/json_read_bench/callgrind.sh [BENCH] — instructions per body of every reader of every body
# (valgrind --tool=callgrind on json_read_bench --callgrind, only the measured loop collected).
# Stable when the machine is shared; valgrind hides AVX-512, so simdjson's stage 1 runs its
# haswell (AVX2) kernel here whatever the CPU has.
set -euo pipefail
bench=${1:-build/release/tools/json_read_bench/json_read_bench}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
printf '%-16s %-9s %14s %10s\n' body reader 'instr/body' 'instr/byte'
for body in push-100 push-100-spaced push-100-bench push-1 ack-100 txn-1+1 txn-worker pop-100 pop-100-bench; do
  case $body in
    *-100*) iterations=20 ;;
    *) iterations=1000 ;;
  esac
  for reader in fast nlohmann sj-skip sj-walk sj-scan; do
    file="$out/$body.$reader"
    line=$(valgrind --tool=callgrind --callgrind-out-file="$file" \
      --toggle-collect='*json_eval_measured_loop*' \
      "$bench" --callgrind "$body" "$reader" "$iterations" 2>/dev/null)
    bytes=$(echo "$line" | awk '{print $3}')
    total=$(awk '/^totals:/ {print $2}' "$file")
    awk -v b="$body" -v r="$reader" -v t="$total" -v n="$iterations" -v s="$bytes" \
      'BEGIN { printf "%-16s %-9s %14.0f %10.2f\n", b, r, t / n, t / n / s }'
  done
done
