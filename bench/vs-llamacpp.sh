#!/usr/bin/env bash
# Side-by-side CPU speed: llama.cpp (llama-bench, built from the source node-llama-cpp@3.21.1 ships) and
# ignis bench, alternated on the same GGUF files, pp512 and tg128 at 2 and 1 threads, several
# repetitions; prints medians, ratios and each decode rate as a fraction of the memory-bandwidth floor.
# Where that native build cannot run a file (SIGILL in its AMX path on Sapphire Rapids class Xeons),
# llama-bench runs on node-llama-cpp's prebuilt CPU backend for the CPU instead (bench/llamacpp_libs.sh).
#
#   bench/vs-llamacpp.sh [REPS=3] [MODEL.gguf ...]
# Env: SCRATCH (default /work/scratch/bench: node-llama-cpp, llama.cpp build, models),
#      THREADS (default "2 1"), PP (512), TG (128), IGNIS (default <repo>/build/bin/ignis),
#      DEPTH (0: tokens already in the KV cache when each test starts, llama-bench's -d; the floor column
#      counts weights only, so it is left out past depth 0), LLAMA_CPU_VARIANT, IGNIS_ISA and
#      IGNIS_AVXVNNI (an AVX2 machine on an AVX-512 host: LLAMA_CPU_VARIANT=haswell IGNIS_ISA=avx2
#      IGNIS_AVXVNNI=0; AVX2 + AVX-VNNI: LLAMA_CPU_VARIANT=alderlake IGNIS_ISA=avx2; bench/llamacpp_libs.sh).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
REPS=${1:-3}; shift || true
SCRATCH=${SCRATCH:-/work/scratch/bench}
THREADS=${THREADS:-"2 1"}
PP=${PP:-512}
TG=${TG:-128}
DEPTH=${DEPTH:-0}
mkdir -p "$SCRATCH"
PY=/usr/bin/python3
IGNIS=${IGNIS:-$ROOT/build/bin/ignis}

# 1. llama.cpp: node-llama-cpp@3.21.1's source bundle, built once.
NLC="$SCRATCH/nlc/node_modules/node-llama-cpp"
if [ ! -f "$NLC/llama/gitRelease.bundle" ]; then
  mkdir -p "$SCRATCH/nlc"
  (cd "$SCRATCH/nlc" && { [ -f package.json ] || npm init -y >/dev/null; } && npm i -E node-llama-cpp@3.21.1 --no-audit --no-fund >/dev/null)
fi
LL="$SCRATCH/llama.cpp"
[ -x "$LL/build/bin/llama-bench" ] || NLC_DIR="$NLC" bash "$ROOT/scripts/ref/build_llamacpp.sh" "$LL" "$(nproc)" >/dev/null
# 2. ignis.
[ -x "$IGNIS" ] || { cmake -S "$ROOT" -B "$ROOT/build" -G Ninja >/dev/null && cmake --build "$ROOT/build" -j"$(nproc)" >/dev/null; }
[ -x "$ROOT/build/bin/ignis-mkmodel" ] || cmake --build "$ROOT/build" --target ignis-mkmodel >/dev/null
# 3. Models: the project's own random-weight files of the real shapes.
if [ $# -eq 0 ]; then
  MODELS="$SCRATCH/models"
  [ -f "$MODELS/qwen3-0.6b-q8_0.gguf" ] || bash "$ROOT/scripts/ref/make_bench_models.sh" "$MODELS" "$LL" "$ROOT/build" >/dev/null
  set -- "$MODELS"/qwen2.5-0.5b-f16.gguf "$MODELS"/qwen2.5-0.5b-q8_0.gguf "$MODELS"/qwen2.5-0.5b-q4_0.gguf \
    "$MODELS"/qwen2.5-0.5b-q4_k_m.gguf "$MODELS"/qwen2.5-1.5b-q4_0.gguf "$MODELS"/qwen2.5-1.5b-q4_k_m.gguf \
    "$MODELS"/llama-3.2-1b-q4_0.gguf "$MODELS"/qwen3-0.6b-q8_0.gguf
fi
# 4. Memory bandwidth: on a shared VM it drifts by tens of percent within minutes, so it is measured
# around every decode run (before llama.cpp's, between the two, after ignis'); each run's floor uses the
# mean of the two measurements on either side of it, and the table shows the median of the runs' ratios.
cc -O3 -march=native -fopenmp "$ROOT/bench/membw.c" -o "$SCRATCH/membw"
# 5. The llama.cpp CPU library this machine runs (bench/llamacpp_libs.sh).
. "$ROOT/bench/llamacpp_libs.sh"
llamacpp_libs "$LL" "$@"

OUT="$SCRATCH/results-$(date +%Y%m%d-%H%M%S).jsonl"
echo "# CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | xargs)"
echo "# llama.cpp CPU backend: $LLAMA_CPU_LIB"
echo "# ignis ISA: ${IGNIS_ISA:-the best this CPU has} (IGNIS_ISA)${IGNIS_AVXVNNI:+, IGNIS_AVXVNNI=$IGNIS_AVXVNNI}"
LLAMA_BENCH=("${LLAMA_ENV[@]}" "$LL/build/bin/llama-bench")
mean() { "$PY" -c "print(($1 + $2) / 2)"; }
for m in "$@"; do
  for t in $THREADS; do
    for r in $(seq 1 "$REPS"); do
      if [ "$PP" -gt 0 ]; then
        "${LLAMA_BENCH[@]}" -m "$m" -p "$PP" -n 0 -d "$DEPTH" -t "$t" -r 1 -o jsonl 2>/dev/null |
          sed 's|^{|{"engine":"llama.cpp",|' >>"$OUT"
        "$IGNIS" bench -m "$m" -p "$PP" -n 0 -d "$DEPTH" -t "$t" -r 1 -o json 2>/dev/null |
          sed 's|^{|{"engine":"ignis",|' >>"$OUT"
      fi
      [ "$TG" -gt 0 ] || continue
      bw_a=$("$SCRATCH/membw" "$t")
      llama=$("${LLAMA_BENCH[@]}" -m "$m" -p 0 -n "$TG" -d "$DEPTH" -t "$t" -r 1 -o jsonl 2>/dev/null)
      bw_b=$("$SCRATCH/membw" "$t")
      ign=$("$IGNIS" bench -m "$m" -p 0 -n "$TG" -d "$DEPTH" -t "$t" -r 1 -o json 2>/dev/null)
      bw_c=$("$SCRATCH/membw" "$t")
      echo "$llama" | sed "s|^{|{\"engine\":\"llama.cpp\",\"bw\":$(mean "$bw_a" "$bw_b"),|" >>"$OUT"
      echo "$ign" | sed "s|^{|{\"engine\":\"ignis\",\"bw\":$(mean "$bw_b" "$bw_c"),|" >>"$OUT"
    done
  done
done
"$PY" - "$OUT" <<'PYEOF'
import json, os, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
def key(r):
    test = "pp%d" % r["n_prompt"] if r["n_prompt"] else "tg%d" % r["n_gen"]
    if r.get("n_depth", 0): test += " @ d%d" % r["n_depth"]
    return (os.path.basename(r["model_filename"]), r["n_threads"], test)
med, size = {}, {}
for r in rows:
    med.setdefault(key(r) + (r["engine"],), []).append(r["avg_ts"])
    if r["engine"] == "llama.cpp": size[os.path.basename(r["model_filename"])] = r["model_size"]
# A decode run's fraction of the floor: its rate against the bytes of weights per token read at the
# bandwidth measured around it (llama.cpp's model_size for both engines).
frac, bws = {}, {}
for r in rows:
    name = os.path.basename(r["model_filename"])
    if "bw" in r and name in size and not r.get("n_depth", 0):
        frac.setdefault(key(r) + (r["engine"],), []).append(r["avg_ts"] * size[name] / (r["bw"] * 1e9))
        bws.setdefault(key(r), []).append(r["bw"])
print("| model | threads | test | llama.cpp t/s | ignis t/s | ignis / llama.cpp | tg / floor (llama.cpp, ignis) |")
print("|---|---:|---|---:|---:|---:|---|")
nan = [float("nan")]
for k in sorted({k[:3] for k in med}):
    l = statistics.median(med.get(k + ("llama.cpp",), nan))
    i = statistics.median(med.get(k + ("ignis",), nan))
    floor = ""
    if k in bws:
        b = statistics.median(bws[k])
        floor = "%.2f, %.2f (median of runs; bandwidth %.1f-%.1f GB/s, floor %.1f t/s at the median)" % (
            statistics.median(frac.get(k + ("llama.cpp",), nan)), statistics.median(frac.get(k + ("ignis",), nan)),
            min(bws[k]), max(bws[k]), b * 1e9 / size[k[0]])
    print("| %s | %d | %s | %.2f | %.2f | %.2f | %s |" % (k[0], k[1], k[2], l, i, i / l if l else float("nan"), floor))
PYEOF
echo "raw results: $OUT"
