#!/usr/bin/python3
"""Independent PyTorch forward pass of llama / qwen2 / qwen3 GGUF models (reference for goldens).

Follows the Hugging Face modeling code's math (LlamaForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM):
RMSNorm, rotary embedding with rotate_half, grouped-query attention, SwiGLU MLP, tied or separate
lm_head, Qwen2's q/k/v biases, Qwen3's per-head q/k RMSNorm. Computes in float64.

GGUF detail: llama.cpp's converter stores a llama model's Q and K rows permuted so that ggml's
"normal" rope (rotating adjacent pairs) equals HF's rotate_half rope. We undo that permutation and
apply HF's rope, so the llama path is checked against the HF formulation, not against ggml's.
qwen2/qwen3 are stored unpermuted and use the rotate_half ("neox") rope directly.

Usage:
  torch_forward.py MODEL.gguf --tokens 1,2,3 [--greedy N] [--out OUT.json]
Output JSON: {"tokens": [...], "logits": [[n_vocab floats] per input position],
              "greedy": [N ids], "greedy_top5": [[[id, logit] x 5] per step]
              (if --greedy; each step re-runs the full sequence, no cache)}
"""
import argparse
import json
import math
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gguf_read import GgufReader  # noqa: E402

DT = torch.float64


class Model:
    def __init__(self, path):
        g = GgufReader(path)
        a = g.meta["general.architecture"]
        if a not in ("llama", "qwen2", "qwen3"):
            raise SystemExit(f"{path}: architecture {a} not handled")
        self.arch = a
        m = g.meta
        self.n_embd = m[f"{a}.embedding_length"]
        self.n_layer = m[f"{a}.block_count"]
        self.n_head = m[f"{a}.attention.head_count"]
        self.n_head_kv = m.get(f"{a}.attention.head_count_kv", self.n_head)
        self.head_dim = m.get(f"{a}.attention.key_length", self.n_embd // self.n_head)
        self.eps = float(m[f"{a}.attention.layer_norm_rms_epsilon"])
        self.theta = float(m.get(f"{a}.rope.freq_base", 10000.0))

        def t(name):
            return torch.from_numpy(np.ascontiguousarray(g.tensor(name))).to(DT)

        self.embed = t("token_embd.weight")                     # [n_vocab, n_embd]
        self.norm = t("output_norm.weight")
        self.lm_head = t("output.weight") if g.has("output.weight") else self.embed
        self.layers = []
        for il in range(self.n_layer):
            p = f"blk.{il}."
            L = {k: t(p + v) for k, v in {
                "in_norm": "attn_norm.weight", "q": "attn_q.weight", "k": "attn_k.weight",
                "v": "attn_v.weight", "o": "attn_output.weight", "post_norm": "ffn_norm.weight",
                "gate": "ffn_gate.weight", "up": "ffn_up.weight", "down": "ffn_down.weight"}.items()}
            if a == "llama":
                L["q"] = self._unpermute(L["q"], self.n_head)
                L["k"] = self._unpermute(L["k"], self.n_head_kv)
            if a == "qwen2":
                for k in ("q", "k", "v"):
                    L[k + "_bias"] = t(p + f"attn_{k}.bias")
            if a == "qwen3":
                L["q_norm"] = t(p + "attn_q_norm.weight")
                L["k_norm"] = t(p + "attn_k_norm.weight")
            self.layers.append(L)

    def _unpermute(self, w, n_head):
        # GGUF row order per head: (i, half) pairs interleaved -> HF order: first half then second half.
        out_dim, in_dim = w.shape
        hd = out_dim // n_head
        return w.reshape(n_head, hd // 2, 2, in_dim).transpose(1, 2).reshape(out_dim, in_dim)

    def rms_norm(self, x, w):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * w

    @staticmethod
    def rotate_half(x):
        h = x.shape[-1] // 2
        return torch.cat((-x[..., h:], x[..., :h]), dim=-1)

    def forward(self, tokens):
        T = len(tokens)
        hd = self.head_dim
        x = self.embed[torch.tensor(tokens, dtype=torch.long)]          # [T, n_embd]
        inv_freq = 1.0 / (self.theta ** (torch.arange(0, hd, 2, dtype=DT) / hd))
        pos = torch.arange(T, dtype=DT)
        freqs = torch.outer(pos, inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)                          # [T, hd]
        cos, sin = emb.cos()[:, None, :], emb.sin()[:, None, :]
        mask = torch.full((T, T), float("-inf"), dtype=DT).triu(1)
        rep = self.n_head // self.n_head_kv
        for L in self.layers:
            h = self.rms_norm(x, L["in_norm"])
            q = h @ L["q"].T
            k = h @ L["k"].T
            v = h @ L["v"].T
            if self.arch == "qwen2":
                q, k, v = q + L["q_bias"], k + L["k_bias"], v + L["v_bias"]
            q = q.view(T, self.n_head, hd)
            k = k.view(T, self.n_head_kv, hd)
            v = v.view(T, self.n_head_kv, hd)
            if self.arch == "qwen3":
                q = self.rms_norm(q, L["q_norm"])
                k = self.rms_norm(k, L["k_norm"])
            q = q * cos + self.rotate_half(q) * sin
            k = k * cos + self.rotate_half(k) * sin
            k = k.repeat_interleave(rep, dim=1)                          # [T, n_head, hd]
            v = v.repeat_interleave(rep, dim=1)
            scores = torch.einsum("thd,shd->hts", q, k) / math.sqrt(hd) + mask
            att = torch.softmax(scores, dim=-1)
            o = torch.einsum("hts,shd->thd", att, v).reshape(T, self.n_head * hd)
            x = x + o @ L["o"].T
            h = self.rms_norm(x, L["post_norm"])
            f = torch.nn.functional.silu(h @ L["gate"].T) * (h @ L["up"].T)
            x = x + f @ L["down"].T
        return self.rms_norm(x, self.norm) @ self.lm_head.T             # [T, n_vocab]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--tokens", required=True, help="comma-separated token ids")
    ap.add_argument("--greedy", type=int, default=0, help="also generate N tokens greedily")
    ap.add_argument("--out", default="-")
    args = ap.parse_args()
    torch.set_num_threads(2)
    m = Model(args.model)
    toks = [int(x) for x in args.tokens.split(",") if x]
    with torch.no_grad():
        logits = m.forward(toks)
        res = {"reference": f"torch {torch.__version__} float64 (scripts/ref/torch_forward.py)",
               "tokens": toks, "logits": [[round(float(v), 6) for v in row] for row in logits]}
        if args.greedy:
            seq = list(toks)
            gen, top = [], []
            for _ in range(args.greedy):
                last = m.forward(seq)[-1]
                # top 5, ties to the lower id (stable sort of -logit)
                order = sorted(range(last.shape[0]), key=lambda j: (-float(last[j]), j))[:5]
                top.append([[j, round(float(last[j]), 5)] for j in order])
                gen.append(order[0])
                seq.append(order[0])
            res["greedy"] = gen
            res["greedy_top5"] = top
    s = json.dumps(res)
    if args.out == "-":
        print(s)
    else:
        with open(args.out, "w") as f:
            f.write(s)


if __name__ == "__main__":
    main()
