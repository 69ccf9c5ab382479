#!/usr/bin/env bash
# Runs npumem's CUDA tests on a GPU machine (docs/CUDA.md): builds with the CUDA
# backend required, runs cuda_device_test (its seven GPU tests, including the caching
# and expandable allocator on cuda:0) and fails if any of them skipped, then replays
# the shared traces on cuda:0 with the caching and expandable strategies.
# BUILD_DIR (default build-gpu) and extra cmake arguments may be given.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build-gpu}
cmake -S . -B "$build_dir" -G Ninja -DNPUMEM_WITH_CUDA=ON -DNPUMEM_BUILD_BENCH=OFF \
  -DNPUMEM_BUILD_PYTHON=OFF "$@"
cmake --build "$build_dir" -j "$(nproc)" --target cuda_device_test make_device_test npumem_cli
status=0
log=$(mktemp "${TMPDIR:-/tmp}/npumem-check-cuda.XXXXXX")
trap 'rm -f "$log"' EXIT
"$build_dir/bin/cuda_device_test" 2>&1 | tee "$log" || status=1
if grep -q "Skipped" "$log"; then
  echo "check-cuda: tests skipped (no usable GPU?); see above" >&2
  status=1
fi
"$build_dir/bin/make_device_test" || status=1
scripts/replay-shared-traces.sh "$build_dir/bin/npumem" cuda:0 || status=1
exit $status
