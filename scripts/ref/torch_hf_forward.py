#!/usr/bin/python3
"""Independent reference forward pass of Hugging Face's Llama / Mistral / Qwen2 / Qwen3 causal LMs.

Reads a Hugging Face folder (config.json + model.safetensors or the shards of
model.safetensors.index.json) with numpy/torch only -- no transformers, no ignis -- and runs the math of
transformers' modeling_llama / modeling_qwen2 / modeling_qwen3 in float64: RMSNorm, rotate-half RoPE
(with Llama 3 rope_scaling), grouped-query causal attention, SwiGLU MLP, tied or separate lm_head.
Writes the logits of every position for a fixed token list as a JSON golden (a sample of vocabulary
entries per row plus full-row statistics) for tests/hf/convert_test.cpp.

usage: torch_hf_forward.py DIR OUT.json TOKEN_ID...
"""
import json
import math
import os
import struct
import sys

import numpy as np
import torch


def read_safetensors(path):
    with open(path, "rb") as f:
        raw = f.read()
    (hlen,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + hlen])
    base = 8 + hlen
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        b, e = info["data_offsets"]
        buf = raw[base + b:base + e]
        shape = info["shape"]
        dt = info["dtype"]
        if dt == "F32":
            a = torch.from_numpy(np.frombuffer(buf, dtype="<f4").copy())
        elif dt == "F16":
            a = torch.from_numpy(np.frombuffer(buf, dtype="<f2").copy()).float()
        elif dt == "BF16":
            a = torch.from_numpy(np.frombuffer(buf, dtype="<i2").copy()).view(torch.bfloat16).float()
        else:
            raise SystemExit(f"{path}: dtype {dt} not handled")
        out[name] = a.reshape(shape).double()
    return out


def load_weights(d):
    idx = os.path.join(d, "model.safetensors.index.json")
    if os.path.exists(idx):
        files = sorted(set(json.load(open(idx))["weight_map"].values()))
        w = {}
        for f in files:
            w.update(read_safetensors(os.path.join(d, f)))
        return w
    return read_safetensors(os.path.join(d, "model.safetensors"))


def inv_freq(cfg, head_dim):
    theta = cfg.get("rope_theta", 10000.0)
    inv = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim))
    rs = cfg.get("rope_scaling")
    if rs:
        t = rs.get("rope_type", rs.get("type"))
        if t == "linear":
            inv = inv / rs["factor"]
        elif t == "llama3":
            factor, lo, hi = rs["factor"], rs.get("low_freq_factor", 1.0), rs.get("high_freq_factor", 4.0)
            old = rs["original_max_position_embeddings"]
            low_wl, high_wl = old / lo, old / hi
            out = []
            for f in inv.tolist():
                wl = 2 * math.pi / f
                if wl < high_wl:
                    out.append(f)
                elif wl > low_wl:
                    out.append(f / factor)
                else:
                    s = (old / wl - lo) / (hi - lo)
                    out.append((1 - s) * f / factor + s * f)
            inv = torch.tensor(out, dtype=torch.float64)
        elif t != "default":
            raise SystemExit(f"rope_scaling {t} not handled")
    return inv


def rms(x, w, eps):
    return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + eps) * w


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


def forward(d, tokens):
    cfg = json.load(open(os.path.join(d, "config.json")))
    mt = cfg["model_type"]
    w = load_weights(d)
    E, nh = cfg["hidden_size"], cfg["num_attention_heads"]
    nkv = cfg.get("num_key_value_heads", nh)
    hd = cfg.get("head_dim") or E // nh
    eps = cfg["rms_norm_eps"]
    T = len(tokens)
    x = w["model.embed_tokens.weight"][torch.tensor(tokens)]
    inv = inv_freq(cfg, hd)
    ang = torch.outer(torch.arange(T, dtype=torch.float64), inv)
    emb = torch.cat((ang, ang), dim=-1)
    cos, sin = emb.cos(), emb.sin()
    mask = torch.full((T, T), float("-inf"), dtype=torch.float64).triu(1)
    for il in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{il}."
        h = rms(x, w[p + "input_layernorm.weight"], eps)

        def lin(name):
            y = h @ w[p + name + ".weight"].T
            if p + name + ".bias" in w:
                y = y + w[p + name + ".bias"]
            return y

        q = lin("self_attn.q_proj").view(T, nh, hd)
        k = lin("self_attn.k_proj").view(T, nkv, hd)
        v = lin("self_attn.v_proj").view(T, nkv, hd)
        if mt == "qwen3":
            q = rms(q, w[p + "self_attn.q_norm.weight"], eps)
            k = rms(k, w[p + "self_attn.k_norm.weight"], eps)
        q = q * cos[:, None, :] + rotate_half(q) * sin[:, None, :]
        k = k * cos[:, None, :] + rotate_half(k) * sin[:, None, :]
        rep = nh // nkv
        k = k.repeat_interleave(rep, dim=1)
        v = v.repeat_interleave(rep, dim=1)
        s = torch.einsum("thd,shd->hts", q, k) / math.sqrt(hd) + mask
        a = torch.softmax(s, dim=-1)
        o = torch.einsum("hts,shd->thd", a, v).reshape(T, nh * hd)
        x = x + o @ w[p + "self_attn.o_proj.weight"].T
        h = rms(x, w[p + "post_attention_layernorm.weight"], eps)
        g = h @ w[p + "mlp.gate_proj.weight"].T
        u = h @ w[p + "mlp.up_proj.weight"].T
        x = x + (torch.nn.functional.silu(g) * u) @ w[p + "mlp.down_proj.weight"].T
    x = rms(x, w["model.norm.weight"], eps)
    head = w["lm_head.weight"] if "lm_head.weight" in w else w["model.embed_tokens.weight"]
    return x @ head.T, cfg


def main():
    d, out = sys.argv[1], sys.argv[2]
    tokens = [int(t) for t in sys.argv[3:]]
    logits, cfg = forward(d, tokens)
    n_vocab = logits.shape[1]
    stride = 997
    idx = list(range(0, n_vocab, stride))
    rows = []
    for t in range(len(tokens)):
        r = logits[t]
        rows.append({
            "sample": [float(r[i]) for i in idx],
            "argmax": int(r.argmax()),
            "max": float(r.max()),
            "logsumexp": float(torch.logsumexp(r, 0)),
            "top5": [int(i) for i in torch.topk(r, 5).indices],
        })
    json.dump({"source": "scripts/ref/torch_hf_forward.py (float64 torch, Debian python3-torch "
               + torch.__version__ + ")", "architecture": cfg["architectures"][0], "n_vocab": n_vocab,
               "tokens": tokens, "sample_stride": stride, "rows": rows}, open(out, "w"), indent=1)


if __name__ == "__main__":
    main()
