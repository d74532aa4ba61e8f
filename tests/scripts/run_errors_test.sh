#!/usr/bin/env bash
# ignis run: bad flags and bad input give exit code 1, nothing on stdout and exactly one line on stderr
# that names the problem.
set -u
: "${IGNIS_BIN:?IGNIS_BIN is not set}"
: "${IGNIS_SHARED_DIR:?IGNIS_SHARED_DIR is not set}"
MODEL="$IGNIS_SHARED_DIR/models/stories260K.gguf"
if [ ! -f "$MODEL" ]; then echo "SKIP: $MODEL not found"; exit 0; fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
FAILS=0
# A network request must never happen in this test: point the hub at a refused port.
export HF_ENDPOINT=http://127.0.0.1:9 IGNIS_CACHE="$TMP/cache"

# expect_error WORD ARGS...: exit 1, empty stdout, one stderr line containing WORD (cli_errors.sh).
. "$(dirname "$0")/cli_errors.sh"
expect_error() { expect_cli_error run "$@"; }

M=(-m "$MODEL")
expect_error "-p"                "${M[@]}"
expect_error "-n"                "${M[@]}" -p hi -n -2
expect_error "-n"                "${M[@]}" -p hi -n 12abc
expect_error "-n"                "${M[@]}" -p hi -n 99999999999
expect_error "--temp"            "${M[@]}" -p hi --temp -1
expect_error "--temp"            "${M[@]}" -p hi --temp abc
expect_error "--temp"            "${M[@]}" -p hi --temp nan
expect_error "--top-p"           "${M[@]}" -p hi --top-p 0
expect_error "--top-p"           "${M[@]}" -p hi --top-p 1.5
expect_error "--min-p"           "${M[@]}" -p hi --min-p 1.01
expect_error "--min-p"           "${M[@]}" -p hi --min-p -0.1
expect_error "--top-k"           "${M[@]}" -p hi --top-k -3
expect_error "--repeat-penalty"  "${M[@]}" -p hi --repeat-penalty 0
expect_error "--repeat-last-n"   "${M[@]}" -p hi --repeat-last-n -2
expect_error "--frequency-penalty" "${M[@]}" -p hi --frequency-penalty inf
expect_error "--seed"            "${M[@]}" -p hi --seed -5
expect_error "-c"                "${M[@]}" -p hi -c 0
expect_error "-c"                "${M[@]}" -p hi -c 999999999999
expect_error "--cache-type"      "${M[@]}" -p hi --cache-type q8_0
expect_error "-t"                "${M[@]}" -p hi -t 0
expect_error "-t"                "${M[@]}" -p hi -t -4
expect_error "--stop"            "${M[@]}" -p hi --stop ""
expect_error "--bogus"           "${M[@]}" -p hi --bogus
expect_error "--temp"            "${M[@]}" -p hi --temp
expect_error "not both"          "${M[@]}" -hf foo/bar -p hi
expect_error "no-such-model.gguf" -m "$TMP/no-such-model.gguf" -p hi
# Not a GGUF at all.
printf 'this is not a gguf file' > "$TMP/bad.gguf"
expect_error "bad.gguf"          -m "$TMP/bad.gguf" -p hi
# A prompt longer than the context: an error naming both numbers, never silent truncation.
expect_error "context is 8 tokens" "${M[@]}" -c 8 -p "Once upon a time there was a little girl named Lily"
grep -q "has [0-9]* tokens" "$TMP/err" || { echo "FAIL: the prompt-length error does not give the prompt's size"; FAILS=$((FAILS + 1)); }

if [ "$FAILS" -ne 0 ]; then echo "$FAILS failure(s)"; exit 1; fi
echo "all passed"
