#!/usr/bin/python3
"""Render every chat template in ../shared/chat-templates with Python's Jinja2, configured as
transformers' apply_chat_template does, over the conversations in tests/data/chat/conversations.json.

Writes tests/data/chat/goldens/<template-id>.json: {conversation name: {"output": str} or
{"error": message, "error_type": class name}}, and tests/data/chat/snippets.golden.json: the
interpreter snippets of tests/data/chat/snippets.json ({"t": template, "v": variables}) rendered the
same way (messages from "v", add_generation_prompt false, the other variables as extra kwargs), and
tests/data/chat/cli_goldens.json: what `ignis template` must print for a few GGUF models (template,
bos and eos read from the GGUF here; ChatML when the model has no template). Needs /usr/bin/python3 with python3-jinja2 (Debian).
strftime_now uses a fixed clock (IGNIS_FIXED_NOW, default below) so goldens are stable.

Usage: /usr/bin/python3 scripts/ref/render_templates.py [SHARED_DIR]
"""
import json
import os
import struct
import sys
from datetime import datetime

import jinja2
import jinja2.ext
from jinja2 import nodes
from jinja2.sandbox import ImmutableSandboxedEnvironment

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXED_NOW = os.environ.get("IGNIS_FIXED_NOW", "2026-01-15 10:30:00")
BOS = "<s>"
EOS = "</s>"


class AssistantTracker(jinja2.ext.Extension):
    # transformers' {% generation %} tag; with return_assistant_tokens_mask off it renders its body.
    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return nodes.CallBlock(self.call_method("_render", []), [], [], body).set_lineno(lineno)

    def _render(self, caller):
        return caller()


def compile_template(source):
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                          sort_keys=sort_keys)

    def strftime_now(fmt):
        return datetime.strptime(FIXED_NOW, "%Y-%m-%d %H:%M:%S").strftime(fmt)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[AssistantTracker, jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env.from_string(source)


def render(source, conv, bos=BOS, eos=EOS):
    try:
        tmpl = compile_template(source)
        kwargs = dict(conv.get("kwargs", {}))
        out = tmpl.render(messages=conv["messages"], tools=conv.get("tools"),
                          documents=conv.get("documents"),
                          add_generation_prompt=conv.get("add_generation_prompt", True),
                          bos_token=bos, eos_token=eos, **kwargs)
        return {"output": out}
    except Exception as e:  # noqa: BLE001 - every failure is a golden too
        return {"error": str(e), "error_type": type(e).__name__}


def render_snippets():
    path = os.path.join(ROOT, "tests/data/chat/snippets.json")
    with open(path, encoding="utf-8") as f:
        snippets = json.load(f)
    out = []
    for sn in snippets:
        v = dict(sn.get("v", {}))
        conv = {"messages": v.pop("messages", []), "add_generation_prompt": False, "kwargs": v}
        out.append(render(sn["t"], conv))
    with open(os.path.join(ROOT, "tests/data/chat/snippets.golden.json"), "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print(f"snippets: {len(out)}")


CHATML = ("{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + "
          "'<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}"
          "{% endif %}")


def read_gguf_kv(path, keys):
    """The metadata values named in `keys` of a GGUF file (a minimal reader, independent of ignis)."""
    scalars = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q",
               12: "<d"}
    out = {}
    with open(path, "rb") as f:
        if f.read(4) != b"GGUF":
            raise ValueError(f"{path}: not a GGUF file")
        f.read(4 + 8)
        (n_kv,) = struct.unpack("<Q", f.read(8))

        def rstr():
            (n,) = struct.unpack("<Q", f.read(8))
            return f.read(n).decode("utf-8", "replace")

        def rval(t):
            if t == 8:
                return rstr()
            if t == 9:
                (it,) = struct.unpack("<I", f.read(4))
                (n,) = struct.unpack("<Q", f.read(8))
                return [rval(it) for _ in range(n)]
            fmt = scalars[t]
            return struct.unpack(fmt, f.read(struct.calcsize(fmt)))[0]

        for _ in range(n_kv):
            key = rstr()
            (t,) = struct.unpack("<I", f.read(4))
            val = rval(t)
            if key in keys:
                out[key] = val
    return out


def render_cli_goldens(shared, convs):
    models = ["tokenizer-vectors/ggml-vocab-phi-3.gguf", "models/stories260K.gguf"]
    by_name = {c["name"]: c for c in convs}
    out = []
    for rel in models:
        kv = read_gguf_kv(os.path.join(shared, rel), {"tokenizer.chat_template", "tokenizer.ggml.tokens",
                                                      "tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id"})
        tokens = kv["tokenizer.ggml.tokens"]
        source = kv.get("tokenizer.chat_template", "")
        for name, agp in [("multi_turn", True), ("assistant_prefill", False), ("system_user", True)]:
            conv = dict(by_name[name])
            conv["add_generation_prompt"] = agp
            res = render(source or CHATML, conv, tokens[kv["tokenizer.ggml.bos_token_id"]],
                         tokens[kv["tokenizer.ggml.eos_token_id"]])
            out.append({"model": rel, "conversation": name, "add_generation_prompt": agp,
                        "fallback": not source, **res})
    with open(os.path.join(ROOT, "tests/data/chat/cli_goldens.json"), "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
        f.write("\n")


def template_id(rel):
    return rel.replace("/", "__").removesuffix(".jinja")


def main():
    shared = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "..", "shared")
    tdir = os.path.join(shared, "chat-templates")
    with open(os.path.join(ROOT, "tests/data/chat/conversations.json"), encoding="utf-8") as f:
        convs = json.load(f)
    render_snippets()
    render_cli_goldens(shared, convs)
    outdir = os.path.join(ROOT, "tests/data/chat/goldens")
    os.makedirs(outdir, exist_ok=True)
    index = []
    for dirpath, _, files in sorted(os.walk(tdir)):
        for name in sorted(files):
            if not name.endswith(".jinja"):
                continue
            rel = os.path.relpath(os.path.join(dirpath, name), tdir)
            with open(os.path.join(dirpath, name), encoding="utf-8", newline="") as f:
                source = f.read()
            res = {c["name"]: render(source, c) for c in convs}
            tid = template_id(rel)
            index.append({"id": tid, "path": rel})
            with open(os.path.join(outdir, tid + ".json"), "w", encoding="utf-8") as f:
                json.dump(res, f, ensure_ascii=False, indent=1, sort_keys=True)
                f.write("\n")
            n_err = sum(1 for r in res.values() if "error" in r)
            print(f"{rel}: {len(res) - n_err} rendered, {n_err} errors")
    with open(os.path.join(outdir, "index.json"), "w", encoding="utf-8") as f:
        json.dump({"fixed_now": FIXED_NOW, "bos_token": BOS, "eos_token": EOS, "templates": index},
                  f, ensure_ascii=False, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
