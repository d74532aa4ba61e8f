#!/usr/bin/env bash
# ignis run --chat: template application (model's, file, ChatML fallback), reply-only output, and the
# interactive chat on a terminal (/clear, /exit). stories260K's greedy text is the reference.
set -euo pipefail
: "${IGNIS_BIN:?}" "${IGNIS_SHARED_DIR:?}"
M="$IGNIS_SHARED_DIR/models/stories260K.gguf"
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
ref=$(awk '/-t 0\.0$/{f=1;next} f&&/^```/{exit} f' "$IGNIS_SHARED_DIR/models/stories260K.md" | head -1)
cont=${ref#Once upon a time}

# A template that puts BOS and the user's words back to back renders exactly the raw prompt.
printf '%s' '{{ bos_token }}{% for m in messages %}{{ m["content"] }}{% endfor %}' >"$W/t.jinja"
out=$("$IGNIS_BIN" run --chat --chat-template-file "$W/t.jinja" -m "$M" -p "Once upon a time" --temp 0 -n 30 2>/dev/null)
case "$cont" in "$out"*) ;; *) echo "chat reply is not the reference continuation: [$out]"; exit 1;; esac
[ ${#out} -gt 40 ] || { echo "reply too short: [$out]"; exit 1; }

# No template in the model: ChatML with a warning on stderr.
"$IGNIS_BIN" run --chat -m "$M" -p "hello" --temp 0 -n 5 >"$W/o" 2>"$W/e"
grep -q "no chat template; using ChatML" "$W/e" || { cat "$W/e"; exit 1; }

# --system without --chat is an error; --chat without -p and without a terminal is an error.
if "$IGNIS_BIN" run -m "$M" -p x --system y >/dev/null 2>&1; then echo "--system without --chat accepted"; exit 1; fi
if "$IGNIS_BIN" run --chat -m "$M" </dev/null >/dev/null 2>"$W/e"; then echo "non-tty chat accepted"; exit 1; fi
grep -q "interactive terminal" "$W/e"

# Interactive: two identical turns around /clear give the same reply; /exit ends the session.
if command -v script >/dev/null; then
  printf 'Once upon a time\n/clear\nOnce upon a time\n/exit\n' |
    script -qefc "$IGNIS_BIN run --chat --chat-template-file $W/t.jinja -m $M --temp 0 -n 12" /dev/null >"$W/tty" 2>&1 || true
  n=$(grep -c "there was a little girl" "$W/tty" || true)
  [ "$n" -ge 2 ] || { echo "interactive chat did not answer twice:"; cat "$W/tty"; exit 1; }
  grep -q "conversation cleared" "$W/tty" || { cat "$W/tty"; exit 1; }
fi
echo "run --chat: all passed"
