#!/usr/bin/env bash
# Builds npumem and runs every test (the README's test command).
# BUILD_DIR and extra cmake arguments (e.g. -DNPUMEM_SANITIZE=thread) may be given;
# CTEST_ARGS selects tests (e.g. "-L concurrency"); BUILD_TARGETS limits the build to
# the targets those tests need.
# Every part is switched on explicitly: a build folder configured by scripts/demo.sh
# (tests off) must not silently turn this into a run of no tests. Extra arguments come
# after, so a caller may still switch a part off.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
build_dir=${BUILD_DIR:-build}
cmake -S . -B "$build_dir" -G Ninja -DNPUMEM_BUILD_TESTS=ON -DNPUMEM_BUILD_TOOLS=ON \
  -DNPUMEM_BUILD_BENCH=ON -DNPUMEM_BUILD_PYTHON=ON "$@"
cmake --build "$build_dir" -j "$(nproc)" ${BUILD_TARGETS:+--target $BUILD_TARGETS}
ctest --test-dir "$build_dir" --output-on-failure --no-tests=error -j "$(nproc)" ${CTEST_ARGS:-}
