# Sourced by the script tests (not a test itself): expect_cli_error SUBCOMMAND WORDS ARGS... runs
# `ignis SUBCOMMAND ARGS...` and passes when it exits 1 with nothing on stdout and exactly one line on
# stderr that contains every one of WORDS ('|'-separated). Uses IGNIS_BIN and TMP; counts failures in
# FAILS.
expect_cli_error() {
  local sub=$1 words=$2 w ok=1 rc lines
  shift 2
  timeout 60 "$IGNIS_BIN" "$sub" "$@" > "$TMP/out" 2> "$TMP/err"
  rc=$?
  lines=$(wc -l < "$TMP/err")
  IFS='|' read -ra ws <<< "$words"
  for w in "${ws[@]}"; do grep -qF -- "$w" "$TMP/err" || ok=0; done
  if [ $rc -ne 1 ] || [ -s "$TMP/out" ] || [ "$lines" -ne 1 ] || [ $ok -ne 1 ]; then
    echo "FAIL: $sub $* -> rc $rc, stdout $(wc -c < "$TMP/out") bytes, stderr $lines line(s): $(head -c 400 "$TMP/err")"
    FAILS=$((FAILS + 1))
  else
    echo "ok: $sub $* -> $(cat "$TMP/err")"
  fi
}
