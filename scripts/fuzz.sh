#!/usr/bin/env bash
# Builds the libFuzzer harnesses (clang, ASan+UBSan) and runs each for FUZZ_SECONDS
# (default 20) over its committed corpus in fuzz/corpus/<name>/. New inputs go to a
# scratch directory, so the committed corpus changes only by hand. Prints the runs
# per harness; a crash, a sanitizer report or a broken invariant fails the script
# and leaves the input in $FUZZ_OUT (default build-fuzz/findings).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
build_dir=${BUILD_DIR:-build-fuzz}
seconds=${FUZZ_SECONDS:-20}
out=${FUZZ_OUT:-$build_dir/findings}
fuzzers=(config device_spec records trace model_json snapshot_json allocator)
CC=clang CXX=clang++ cmake -S . -B "$build_dir" -G Ninja -DNPUMEM_BUILD_FUZZERS=ON \
  -DNPUMEM_SANITIZE=address,undefined -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DNPUMEM_BUILD_TESTS=OFF -DNPUMEM_BUILD_BENCH=OFF -DNPUMEM_BUILD_PYTHON=OFF \
  -DNPUMEM_WITH_CUDA=OFF "$@"
cmake --build "$build_dir" -j "$(nproc)" --target "${fuzzers[@]/#/fuzz_}"
mkdir -p "$out"
summary=()
status=0
for name in "${fuzzers[@]}"; do
  scratch=$(mktemp -d)
  log="$out/$name.log"
  if "$build_dir/bin/fuzz_$name" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 \
    -print_final_stats=1 -artifact_prefix="$out/$name-" "$scratch" "fuzz/corpus/$name" \
    >"$log" 2>&1; then
    result=ok
  else
    result="FAILED (see $log)"
    status=1
  fi
  runs=$(grep -oP 'stat::number_of_executed_units:\s*\K\d+' "$log" || echo "?")
  summary+=("$(printf '%-14s %10s runs in %ss, %s new inputs: %s' "$name" "$runs" "$seconds" \
    "$(find "$scratch" -type f | wc -l)" "$result")")
  rm -rf "$scratch"
done
echo "fuzzing summary:"
printf '  %s\n' "${summary[@]}"
exit "$status"
