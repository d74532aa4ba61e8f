#!/usr/bin/env bash
# Builds the GGUF reader's libFuzzer target (tests/fuzz/gguf_fuzz.cpp) with clang and
# -fsanitize=fuzzer,address,undefined straight from the sources it needs, seeds a corpus with small
# GGUF files, and fuzzes for a bounded time. Fails on any crash, sanitizer report, hang (-timeout),
# allocation over -malloc_limit_mb, or when clang / its fuzzer runtime is missing.
#
# Needs (Debian 12): clang-14 and libclang-rt-14-dev (or clang + libclang-rt-dev of another version).
# Env: IGNIS_SOURCE_DIR, IGNIS_BINARY_DIR (set by ctest), IGNIS_SHARED_DIR (optional seeds),
#      IGNIS_FUZZ_SECONDS (default 40), CXX_FUZZ (default: first clang++ found).
set -euo pipefail

src=${IGNIS_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
bin=${IGNIS_BINARY_DIR:-$src/build}
shared=${IGNIS_SHARED_DIR:-$src/../shared}
seconds=${IGNIS_FUZZ_SECONDS:-40}
work=$bin/gguf_fuzz
mkdir -p "$work"

die() { echo "gguf_fuzz_test: FAIL: $*" >&2; exit 1; }

cxx=${CXX_FUZZ:-}
if [[ -z $cxx ]]; then
  for c in clang++ clang++-19 clang++-18 clang++-17 clang++-16 clang++-15 clang++-14; do
    if command -v "$c" >/dev/null; then cxx=$c; break; fi
  done
fi
[[ -n $cxx ]] || die "clang++ not found; install clang-14 and libclang-rt-14-dev (apt-get install clang-14 libclang-rt-14-dev)"

# The fuzzer runtime ships separately from clang on Debian (libclang-rt-N-dev): check it links.
echo 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }' > "$work/probe.cpp"
if ! "$cxx" -fsanitize=fuzzer,address,undefined "$work/probe.cpp" -o "$work/probe" 2> "$work/probe.log"; then
  cat "$work/probe.log" >&2
  die "$cxx cannot link -fsanitize=fuzzer,address,undefined: clang's fuzzer/sanitizer runtime is missing (apt-get install libclang-rt-14-dev for clang-14)"
fi

sources=("$src/tests/fuzz/gguf_fuzz.cpp" "$src"/src/format/gguf*.cpp "$src/src/core/dtype.cpp" "$src"/src/core/quant*.cpp)
headers=("$src"/src/format/*.h "$src"/src/core/*.h)
flags=(-std=c++20 -O1 -gline-tables-only -fno-omit-frame-pointer
       -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -I "$src/src")
exe=$work/gguf_fuzz
mkdir -p "$work/obj"
# Objects are rebuilt when their source or any header is newer; two compiles at a time.
newest_header=$(ls -t "${headers[@]}" | head -n 1)
objs=()
pids=()
for f in "${sources[@]}"; do
  o=$work/obj/$(basename "${f%.cpp}").o
  objs+=("$o")
  if [[ ! -f $o || $f -nt $o || $newest_header -nt $o ]]; then
    echo "compiling $(basename "$f") with $cxx"
    "$cxx" "${flags[@]}" -c "$f" -o "$o.tmp" && mv "$o.tmp" "$o" &
    pids+=($!)
    if (( ${#pids[@]} >= 2 )); then wait "${pids[0]}" || die "compiling failed"; pids=("${pids[@]:1}"); fi
  fi
done
for p in "${pids[@]}"; do wait "$p" || die "compiling failed"; done
"$cxx" "${flags[@]}" "${objs[@]}" -lfmt -o "$exe" || die "linking the fuzzer failed"

# Seeds: a small valid file (every value type, nested arrays, alignment 64, four tensors) and real
# files; -max_len keeps inputs at 64 KiB so runs stay fast (the real files are cut after their
# metadata, which is what is being fuzzed).
corpus=$work/corpus
rm -rf "$corpus" && mkdir -p "$corpus" "$work/artifacts"
fixture=$src/tests/data/format/gguf_py_fixture.gguf
cp "$fixture" "$corpus/"
# The same file without the padding after its last tensor (which ends at byte 1364), so that
# removing any byte at the end makes a tensor run past the end of the file.
head -c 1364 "$fixture" > "$corpus/fixture_unpadded.gguf"
for f in "$shared/models/stories260K.gguf" "$shared/tokenizer-vectors/ggml-vocab-llama-spm.gguf"; do
  if [[ -f $f ]]; then cp "$f" "$corpus/"; fi
done

echo "fuzzing for ${seconds}s"
set +e
ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  "$exe" "$corpus" -dict="$src/tests/fuzz/gguf.dict" -max_total_time="$seconds" -timeout=10 \
  -rss_limit_mb=2048 -malloc_limit_mb=512 -max_len=65536 \
  -artifact_prefix="$work/artifacts/" -print_final_stats=1 > "$work/fuzz.log" 2>&1
rc=$?
set -e
tail -n 25 "$work/fuzz.log"
(( rc == 0 )) || die "the fuzzer found a problem (exit $rc); see $work/fuzz.log and $work/artifacts/"
grep -q "Done [0-9]* runs" "$work/fuzz.log" || die "the fuzzer did not finish its run; see $work/fuzz.log"
echo "gguf_fuzz_test: OK"
