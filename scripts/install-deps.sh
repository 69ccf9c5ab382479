#!/usr/bin/env bash
# Installs every Debian package the build, the tests and the benchmarks use.
# Skips apt when all are present already (fast re-runs); needs root otherwise.
set -euo pipefail
packages=(
  cmake ninja-build g++ pkg-config
  libgtest-dev libgmock-dev libbenchmark-dev libcli11-dev nlohmann-json3-dev
  libmimalloc-dev libjemalloc-dev
  python3 python3-dev python3-pip python3-setuptools python3-wheel python3-pybind11 pybind11-dev
  python3-onnx
  python3-torch python3-torchvision libtorch-dev
  chromium
  clang libclang-rt-14-dev
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}"
  sudo_cmd=()
  [[ $(id -u) -eq 0 ]] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
