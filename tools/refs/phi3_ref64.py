#!/usr/bin/python3
"""A float64 NumPy Phi3ForCausalLM, written from transformers' modeling_phi3.py and
modeling_rope_utils.py (_compute_longrope_parameters), for the reference summaries of
internal/testckpt/testdata/phi3* (see README.md here). Same interface as ref64.py:

  python3 phi3_ref64.py HF_DIR IDS OUT_PREFIX [N_GREEDY]

IDS is a comma-separated list of token ids. Writes OUT_PREFIX.logits.f64 (float64
little-endian [n_ids][vocab]: the logits at each prompt position) and OUT_PREFIX.greedy.txt
(N_GREEDY lines "id max_logit", greedy continuation; each step reruns the whole sequence, as
transformers does without a cache). Weights are read as stored (f32, or bf16 widened
exactly) and every operation runs in float64.

What it computes, as transformers does:
- RMSNorm: w * x / sqrt(mean(x^2) + eps).
- qkv_proj rows are q, k, v; gate_up_proj rows are gate, up; MLP = down(up * silu(gate)).
- RoPE rotate-half on the first int(head_dim * partial_rotary_factor) dims of each head.
- longrope: inv_freq = 1 / (ext * theta^(2j/dim)), ext = long_factor when the sequence
  length exceeds original_max_position_embeddings, else short_factor; cos and sin times
  sqrt(1 + ln(f)/ln(original)), f = max_position_embeddings / original (1 when f <= 1).
- sliding_window W (when not null): position q sees keys k with q - W < k <= q.
"""
import json
import math
import struct
import sys

import numpy as np


def load_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        a, b = t["data_offsets"]
        raw = data[a:b]
        if t["dtype"] == "F32":
            v = np.frombuffer(raw, dtype="<f4")
        elif t["dtype"] == "BF16":
            v = (np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16).view(np.float32)
        else:
            raise SystemExit(f"{name}: dtype {t['dtype']} unsupported")
        out[name] = v.astype(np.float64).reshape(t["shape"])
    return out


def rms_norm(x, w, eps):
    return w * (x / np.sqrt((x * x).mean(-1, keepdims=True) + eps))


def rope_tables(cfg, head_dim, seq_len):
    theta = cfg.get("rope_theta", 10000.0)
    dim = int(head_dim * cfg.get("partial_rotary_factor", 1.0))
    scaling = cfg.get("rope_scaling")
    ext, attn = np.ones(dim // 2), 1.0
    if scaling is not None:
        kind = scaling.get("rope_type", scaling.get("type"))
        assert kind == "longrope", kind
        orig = cfg.get("original_max_position_embeddings", 4096)
        factor = cfg.get("max_position_embeddings", 4096) / orig
        attn = scaling.get("attention_factor") or (1.0 if factor <= 1 else math.sqrt(1 + math.log(factor) / math.log(orig)))
        ext = np.array(scaling["long_factor"] if seq_len > orig else scaling["short_factor"], dtype=np.float64)
        assert len(ext) == dim // 2
    inv = 1.0 / (ext * theta ** (np.arange(0, dim, 2, dtype=np.float64) / dim))
    ang = np.arange(seq_len, dtype=np.float64)[:, None] * inv[None, :]
    emb = np.concatenate([ang, ang], axis=-1)  # [S, dim]
    return np.cos(emb) * attn, np.sin(emb) * attn, dim


def apply_rope(x, cos, sin, dim):  # x: [heads, S, head_dim]
    rot, rest = x[..., :dim], x[..., dim:]
    half = dim // 2
    rotated = np.concatenate([-rot[..., half:], rot[..., :half]], axis=-1)
    return np.concatenate([rot * cos + rotated * sin, rest], axis=-1)


def forward(cfg, w, ids):
    D, H = cfg["hidden_size"], cfg["num_attention_heads"]
    KV = cfg.get("num_key_value_heads") or H
    hd = cfg.get("head_dim") or D // H
    F, eps, S = cfg["intermediate_size"], cfg.get("rms_norm_eps", 1e-5), len(ids)
    window = cfg.get("sliding_window")
    cos, sin, dim = rope_tables(cfg, hd, S)
    q_idx, k_idx = np.arange(S)[:, None], np.arange(S)[None, :]
    allowed = k_idx <= q_idx
    if window is not None:
        allowed &= k_idx > q_idx - window
    x = w["model.embed_tokens.weight"][ids]
    for l in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{l}."
        h = rms_norm(x, w[p + "input_layernorm.weight"], eps)
        qkv = h @ w[p + "self_attn.qkv_proj.weight"].T
        q = qkv[:, :H * hd].reshape(S, H, hd).transpose(1, 0, 2)
        k = qkv[:, H * hd:(H + KV) * hd].reshape(S, KV, hd).transpose(1, 0, 2)
        v = qkv[:, (H + KV) * hd:].reshape(S, KV, hd).transpose(1, 0, 2)
        q, k = apply_rope(q, cos, sin, dim), apply_rope(k, cos, sin, dim)
        k, v = np.repeat(k, H // KV, axis=0), np.repeat(v, H // KV, axis=0)
        scores = q @ k.transpose(0, 2, 1) / math.sqrt(hd)
        scores = np.where(allowed[None], scores, -np.inf)
        scores -= scores.max(-1, keepdims=True)
        prob = np.exp(scores)
        prob /= prob.sum(-1, keepdims=True)
        o = (prob @ v).transpose(1, 0, 2).reshape(S, H * hd)
        x = x + o @ w[p + "self_attn.o_proj.weight"].T
        h = rms_norm(x, w[p + "post_attention_layernorm.weight"], eps)
        gu = h @ w[p + "mlp.gate_up_proj.weight"].T
        gate, up = gu[:, :F], gu[:, F:]
        x = x + (up * (gate / (1 + np.exp(-gate)))) @ w[p + "mlp.down_proj.weight"].T
    x = rms_norm(x, w["model.norm.weight"], eps)
    head = w["model.embed_tokens.weight"] if cfg.get("tie_word_embeddings") else w["lm_head.weight"]
    return x @ head.T


def main():
    hf, ids, prefix = sys.argv[1], [int(t) for t in sys.argv[2].split(",")], sys.argv[3]
    n_greedy = int(sys.argv[4]) if len(sys.argv) > 4 else 16
    cfg = json.load(open(hf + "/config.json"))
    assert cfg["architectures"][0] == "Phi3ForCausalLM"
    w = load_safetensors(hf + "/model.safetensors")
    logits = forward(cfg, w, ids)
    logits.astype("<f8").tofile(prefix + ".logits.f64")
    seq, last = list(ids), logits[-1]
    with open(prefix + ".greedy.txt", "w") as g:
        for _ in range(n_greedy):
            nxt = int(np.argmax(last))
            g.write(f"{nxt} {last[nxt]:.9f}\n")
            seq.append(nxt)
            last = forward(cfg, w, seq)[-1]


if __name__ == "__main__":
    main()
