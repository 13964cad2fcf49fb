#!/usr/bin/env bash
# Builds one libFuzzer target with clang (the main build uses g++, which has no libFuzzer)
# and runs it for a bounded time on a copy of its seed corpus.
#   fuzz/run_fuzz.sh <watch_event|quantity> <build dir> <seconds>
# Exit 77 (ctest: skipped) when clang or its fuzzer runtime is missing.
set -euo pipefail
target=$1
out=$2
seconds=${3:-20}
src=$(cd "$(dirname "$0")/.." && pwd)

clang=$(command -v clang++ || command -v clang++-14 || true)
if [ -z "$clang" ]; then
  echo "SKIP: clang++ not installed, cannot build libFuzzer targets" >&2
  exit 77
fi
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
echo 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }' \
  > "$probe/p.cc"
if ! "$clang" -fsanitize=fuzzer "$probe/p.cc" -o "$probe/p" 2>/dev/null; then
  echo "SKIP: $clang has no libFuzzer runtime (libclang_rt.fuzzer)" >&2
  exit 77
fi

case "$target" in
  watch_event) sources=(kube/watch_event.cc common/json_util.cc common/quantity.cc common/result.cc) ;;
  quantity) sources=(common/quantity.cc common/result.cc) ;;
  *) echo "unknown fuzz target $target" >&2; exit 2 ;;
esac

mkdir -p "$out"
bin="$out/${target}_fuzzer"
# Rebuild only when a source or header changed.
newest=$(find "$src/fuzz/${target}_fuzzer.cc" "${sources[@]/#/$src/}" "$src/common" "$src/kube" \
  -newer "$bin" -name '*.[ch]*' 2>/dev/null | head -1 || true)
if [ ! -x "$bin" ] || [ -n "$newest" ]; then
  echo "building $bin"
  "$clang" -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
    -I"$src" "$src/fuzz/${target}_fuzzer.cc" "${sources[@]/#/$src/}" -o "$bin"
fi

corpus="$out/${target}_corpus"
mkdir -p "$corpus"
cp -n "$src/fuzz/corpus/$target/"* "$corpus/" 2>/dev/null || true
# libFuzzer reports findings with exit code 77 by default, which ctest would call "skipped".
"$bin" -max_total_time="$seconds" -timeout=5 -rss_limit_mb=1024 -print_final_stats=1 \
  -error_exitcode=1 -timeout_exitcode=1 -artifact_prefix="$out/${target}_" "$corpus"
