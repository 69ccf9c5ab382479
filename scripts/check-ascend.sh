#!/usr/bin/env bash
# Runs npumem's Ascend tests against a real CANN install and NPU 0 (docs/ASCEND.md).
# Sources CANN's set_env.sh when ASCEND_HOME_PATH is not set (CANN_SET_ENV overrides
# its path), points NPUMEM_ACL_LIBRARY at the real libascendcl.so, builds the tests and
# runs the acl cases: acl_device_test and the allocator suite on acl:0. Cases that need
# the test double's controls (call counts, injected faults) say "Skipped" with the
# reason. BUILD_DIR (default build-ascend) and extra cmake arguments may be given.
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ -z "${ASCEND_HOME_PATH:-}" ]]; then
  set_env=${CANN_SET_ENV:-/usr/local/Ascend/ascend-toolkit/set_env.sh}
  if [[ ! -f "$set_env" ]]; then
    echo "check-ascend: no CANN found: ASCEND_HOME_PATH is unset and $set_env does not exist" >&2
    exit 2
  fi
  # shellcheck disable=SC1090
  source "$set_env"
fi
library=${NPUMEM_ACL_LIBRARY:-$ASCEND_HOME_PATH/lib64/libascendcl.so}
if [[ ! -f "$library" ]]; then
  echo "check-ascend: $library does not exist; set NPUMEM_ACL_LIBRARY" >&2
  exit 2
fi
export NPUMEM_ACL_LIBRARY=$library
echo "check-ascend: using $NPUMEM_ACL_LIBRARY"

build_dir=${BUILD_DIR:-build-ascend}
tests="acl_device_test allocator_test strategy_invariants_test expandable_source_test static_source_test pool_test resize_test allocator_concurrency_test thread_cache_test stream_order_test"
cmake -S . -B "$build_dir" -G Ninja -DNPUMEM_BUILD_BENCH=OFF -DNPUMEM_BUILD_PYTHON=OFF "$@"
# shellcheck disable=SC2086
cmake --build "$build_dir" -j "$(nproc)" --target $tests npumem_cli
status=0
for test in $tests; do
  filter='*'
  [[ $test == acl_device_test ]] || filter='*acl*'
  echo "== $test ($filter)"
  "$build_dir/bin/$test" --gtest_filter="$filter" || status=1
done
echo "== npumem replay --device acl:0"
scripts/replay-shared-traces.sh "$build_dir/bin/npumem" acl:0 || status=1
exit $status
