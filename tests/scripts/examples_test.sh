#!/usr/bin/env bash
# The examples/ programs (public API only) run on stories260K: the async one's greedy continuation of
# "Once upon a time" must be karpathy's published greedy text, whatever it is batched with.
set -euo pipefail
: "${IGNIS_BINARY_DIR:?}" "${IGNIS_SHARED_DIR:?}"
BIN="$IGNIS_BINARY_DIR/bin"
MODEL="$IGNIS_SHARED_DIR/models/stories260K.gguf"
ref=$(awk '/-t 0\.0$/{f=1;next} f&&/^```/{exit} f' "$IGNIS_SHARED_DIR/models/stories260K.md" | head -1)

out=$("$BIN/reference_job" "$MODEL" 16 2>"${TMPDIR:-/tmp}/refjob.err")
grep -q 'finish_reason=length' "${TMPDIR:-/tmp}/refjob.err" || { cat "${TMPDIR:-/tmp}/refjob.err"; exit 1; }
[ -n "$out" ] || { echo "reference_job printed nothing"; exit 1; }

out=$("$BIN/async_generate" "$MODEL" "Once upon a time" "The cat" "One day")
line=$(echo "$out" | grep '^\[0\] ' | sed 's/^\[0\] //')
case "$ref" in
  "$line"*) ;;
  *) echo "async_generate [0] is not a prefix of the reference:"; echo "$line"; echo "$ref"; exit 1;;
esac
[ "$(echo "$out" | grep -c '^\[')" = 3 ] || { echo "expected 3 results: $out"; exit 1; }
echo "examples: all passed"
