#!/usr/bin/env bash
# Builds npumem and replays a bundled real trace (ViT-B/16 inference, captured from
# PyTorch) through the tiered caching allocator on the virtual NPU.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -S . -B build -G Ninja -DNPUMEM_BUILD_TESTS=OFF -DNPUMEM_BUILD_BENCH=OFF
cmake --build build -j "$(nproc)" --target npumem_cli
build/bin/npumem replay data/traces/vit_b_16_infer.trace "$@"
