#!/usr/bin/env bash
# Installs npumem into a temporary prefix (`cmake --install --prefix`, so the package
# must be relocatable), then builds the consumers in examples/ against it: with
# find_package(npumem) (shared and static library) and, for the C one, with
# pkg-config. Runs each and checks what it prints. Extra arguments go to the
# configure step of npumem itself (e.g. -DNPUMEM_WITH_CUDA=OFF).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
work=$(mktemp -d "${TMPDIR:-/tmp}/npumem-check-install.XXXXXX")
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
jobs=$(nproc)

cmake -S . -B "$work/build" -G Ninja -DNPUMEM_BUILD_TESTS=OFF \
  -DNPUMEM_BUILD_BENCH=OFF -DNPUMEM_BUILD_PYTHON=OFF "$@"
cmake --build "$work/build" -j "$jobs"
cmake --install "$work/build" --prefix "$prefix"

# expect FILE LINE...: each LINE must be a whole line of FILE, and no line may say
# BELOW (reserved bytes below allocated ones).
expect() {
  local file=$1 line
  shift
  for line in "$@"; do
    if ! grep -qxF -- "$line" "$file"; then
      echo "check-install: '$line' missing from the output of ${file##*/}:" >&2
      cat "$file" >&2
      exit 1
    fi
  done
  if grep -q BELOW "$file"; then
    echo "check-install: reserved below allocated in ${file##*/}:" >&2
    cat "$file" >&2
    exit 1
  fi
  sed "s/^/  ${file##*/}: /" "$file"
}

c_lines=(
  "npumem $(sed -n 's/^project(npumem VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)"
  "live: allocated_bytes 76546048, allocations 3, peak allocations 3"
  "2 GiB request: out_of_memory"
  "snapshot: segments"
  "second free: invalid_pointer"
  "freed: allocated_bytes 0, allocations 0, peak allocations 3"
  "c_consumer: ok"
)
cpp_lines=(
  "allocated 1.17 GiB, spills 1, activations on ddr"
  "refused 4.00 GiB"
  "double free caught"
  "cpp_consumer: ok"
)

# Each consumer against each target: libnpumem.so, and libnpumem.a (which a C link must
# be given the C++ runtime for).
for consumer in c cpp; do
  lines=${consumer}_lines[@]
  for target in npumem::npumem npumem::npumem_static; do
    echo "check-install: $consumer consumer, find_package, $target"
    dir=$work/$consumer-${target#npumem::}
    cmake -S "examples/${consumer}_consumer" -B "$dir" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" \
      -DNPUMEM_TARGET="$target"
    cmake --build "$dir"
    "$dir/${consumer}_consumer" >"$dir.out"
    expect "$dir.out" "${!lines}"
  done
done

echo "check-install: C consumer, pkg-config"
pc_file=$(find "$prefix" -name npumem.pc -print -quit)
export PKG_CONFIG_PATH=${pc_file%/*}
libdir=$(pkg-config --variable=libdir npumem)
# shellcheck disable=SC2046 # the flags are words
cc -std=c99 -Wall -Wextra -Wpedantic -Werror examples/c_consumer/main.c -o "$work/c_pkg" \
  $(pkg-config --cflags --libs npumem) -Wl,-rpath,"$libdir"
"$work/c_pkg" >"$work/c_pkg.out"
expect "$work/c_pkg.out" "${c_lines[@]}"

echo "check-install: C consumer, pkg-config --static (libnpumem.a)"
# shellcheck disable=SC2046 # the flags are words
cc -std=c99 -Wall -Wextra -Wpedantic -Werror examples/c_consumer/main.c -o "$work/c_static" \
  $(pkg-config --cflags npumem) -L"$libdir" -Wl,-Bstatic -lnpumem -Wl,-Bdynamic \
  $(pkg-config --static --libs npumem)
if ldd "$work/c_static" | grep -q libnpumem; then
  echo "check-install: c_static loads libnpumem.so: libnpumem.a was not linked" >&2
  exit 1
fi
"$work/c_static" >"$work/c_static.out"
expect "$work/c_static.out" "${c_lines[@]}"

echo "check-install: the installed command"
"$prefix/bin/npumem" --version >"$work/cli.out"
"$prefix/bin/npumem" smi >>"$work/cli.out"
expect "$work/cli.out" "${c_lines[0]}"
if [[ ! -x "$prefix/bin/npumem-extract-model" ]]; then
  echo "check-install: bin/npumem-extract-model (what plan's model files come from) is missing" >&2
  exit 1
fi

echo "check-install: ok (headers, libnpumem.so, libnpumem.a, CMake package, npumem.pc, bin/npumem, bin/npumem-extract-model)"
