#!/usr/bin/env bash
# tools/run_fuzzers.sh BUILD_DIR SECONDS — run every libFuzzer target for SECONDS each, seeded.
# The seed is QUEEN_SEED when set, else random, and is printed so a run can be replayed.
# Each fuzzer starts from its checked-in seed corpus (read-only; new inputs go to a scratch dir).
set -euo pipefail
build=${1:?usage: run_fuzzers.sh BUILD_DIR SECONDS}
seconds=${2:?usage: run_fuzzers.sh BUILD_DIR SECONDS}
seed=${QUEEN_SEED:-$(( (RANDOM << 15) | RANDOM ))}
shopt -s nullglob
fuzzers=("$build"/fuzz/fuzz_*)
status=0
for fuzzer in "${fuzzers[@]}"; do
  [ -x "$fuzzer" ] || continue
  name=$(basename "$fuzzer")
  corpus=$(cat "$fuzzer.corpus" 2>/dev/null || true)
  scratch=$(mktemp -d)
  dirs=("$scratch")
  [ -n "$corpus" ] && [ -d "$corpus" ] && dirs+=("$corpus")
  echo "fuzz: $name for ${seconds}s seed=$seed (replay: QUEEN_SEED=$seed tools/run_fuzzers.sh $build $seconds)"
  if ! "$fuzzer" -seed="$seed" -max_total_time="$seconds" -print_final_stats=1 \
      -artifact_prefix="$build/fuzz/${name}-" "${dirs[@]}" >"$build/fuzz/$name.log" 2>&1; then
    echo "fuzz: $name FAILED; last lines of $build/fuzz/$name.log:"
    tail -n 40 "$build/fuzz/$name.log"
    status=1
  else
    grep -E 'stat::number_of_executed_units|cov:' "$build/fuzz/$name.log" | tail -n 2 | sed 's/^/  /'
  fi
  rm -rf "$scratch"
done
[ ${#fuzzers[@]} -gt 0 ] || echo "fuzz: no fuzzers built"
exit $status
