#!/usr/bin/python3
"""Float64 reference logits of a Hugging Face decoder checkpoint, written from transformers'
modeling code (modeling_llama.py, modeling_qwen3.py, modeling_qwen3_moe.py,
modeling_mixtral.py), with NumPy only: no torch, no transformers, no hfstatic code.

    moe64.py HF_DIR IDS OUT.json      # IDS: comma-separated token ids

Writes a summary in the format of internal/testckpt's reference.summary.json (per position:
argmax, log-sum-exp, top-10, the logits at 64 probe ids) for the prompt IDS processed in one
causal pass, plus, for mixture-of-experts models, the smallest router margin seen (the gap
between the k-th and (k+1)-th router logit of any token in any layer): where it is small,
a float32 runner may choose another expert.

Supported classes: LlamaForCausalLM, MistralForCausalLM (no sliding window within the
prompt), Qwen3ForCausalLM, Qwen3MoeForCausalLM, MixtralForCausalLM.
"""
import json
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
        lo, hi = t["data_offsets"]
        raw = data[lo:hi]
        if t["dtype"] == "F32":
            a = np.frombuffer(raw, dtype="<f4")
        elif t["dtype"] == "BF16":
            a = (np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16).view(np.float32)
        elif t["dtype"] == "F16":
            a = np.frombuffer(raw, dtype="<f2")
        else:
            raise SystemExit(f"{name}: dtype {t['dtype']} not supported")
        out[name] = a.astype(np.float64).reshape(t["shape"])
    return out


def rms_norm(x, w, eps):
    # transformers' *RMSNorm: x * rsqrt(mean(x^2) + eps), then weight * x
    return w * (x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps))


def silu(x):
    return x / (1 + np.exp(-x))


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def rope(x, pos, theta, hd):
    # rotate-half RoPE (apply_rotary_pos_emb) with default inv_freq
    inv = 1.0 / theta ** (np.arange(0, hd, 2, dtype=np.float64) / hd)
    ang = pos[:, None] * inv[None, :]
    cos = np.concatenate([np.cos(ang)] * 2, axis=-1)[:, None, :]
    sin = np.concatenate([np.sin(ang)] * 2, axis=-1)[:, None, :]
    x1, x2 = x[..., : hd // 2], x[..., hd // 2:]
    return x * cos + np.concatenate([-x2, x1], axis=-1) * sin


def main():
    folder, ids_arg, out_path = sys.argv[1:4]
    cfg = json.load(open(f"{folder}/config.json"))
    W = load_safetensors(f"{folder}/model.safetensors")
    cls = cfg["architectures"][0]
    ids = [int(t) for t in ids_arg.split(",")]
    D, L, H = cfg["hidden_size"], cfg["num_hidden_layers"], cfg["num_attention_heads"]
    KV = cfg.get("num_key_value_heads", H)
    hd = cfg.get("head_dim") or D // H
    eps, theta = cfg["rms_norm_eps"], cfg.get("rope_theta", 10000.0)
    qk_norm = cls in ("Qwen3ForCausalLM", "Qwen3MoeForCausalLM")
    S = len(ids)
    margin = np.inf

    def mlp(p, h, gate="gate_proj", up="up_proj", down="down_proj"):
        return (silu(h @ W[f"{p}.{gate}.weight"].T) * (h @ W[f"{p}.{up}.weight"].T)) @ W[f"{p}.{down}.weight"].T

    def moe(p, h, E, K, norm, names):
        # Qwen3MoeSparseMoeBlock / MixtralSparseMoeBlock: softmax over all experts, top-k,
        # renormalize (Mixtral always), experts summed in expert order.
        nonlocal margin
        logits = h @ W[f"{p}.gate.weight"].T
        probs = softmax(logits)
        out = np.zeros_like(h)
        for r in range(h.shape[0]):
            order = np.argsort(-logits[r], kind="stable")
            top = order[:K]
            if K < E:
                margin = min(margin, logits[r, order[K - 1]] - logits[r, order[K]])
            w = probs[r, top]
            if norm:
                w = w / w.sum()
            for e, we in sorted(zip(top, w)):
                out[r] += we * mlp(f"{p}.experts.{e}", h[r:r + 1], *names)[0]
        return out

    def forward(ids):
        S = len(ids)
        pos = np.arange(S, dtype=np.float64)
        x = W["model.embed_tokens.weight"][ids]
        causal = np.triu(np.full((S, S), -np.inf), 1)
        for l in range(L):
            p = f"model.layers.{l}"
            h = rms_norm(x, W[f"{p}.input_layernorm.weight"], eps)
            q = (h @ W[f"{p}.self_attn.q_proj.weight"].T).reshape(S, H, hd)
            k = (h @ W[f"{p}.self_attn.k_proj.weight"].T).reshape(S, KV, hd)
            v = (h @ W[f"{p}.self_attn.v_proj.weight"].T).reshape(S, KV, hd)
            if qk_norm:
                q = rms_norm(q, W[f"{p}.self_attn.q_norm.weight"], eps)
                k = rms_norm(k, W[f"{p}.self_attn.k_norm.weight"], eps)
            q, k = rope(q, pos, theta, hd), rope(k, pos, theta, hd)
            o = np.zeros((S, H, hd))
            for i in range(H):
                g = i // (H // KV)
                s = q[:, i] @ k[:, g].T / np.sqrt(hd) + causal
                o[:, i] = softmax(s) @ v[:, g]
            x = x + o.reshape(S, H * hd) @ W[f"{p}.self_attn.o_proj.weight"].T
            h = rms_norm(x, W[f"{p}.post_attention_layernorm.weight"], eps)
            if cls == "Qwen3MoeForCausalLM":
                E, K = cfg.get("num_experts", 128), cfg.get("num_experts_per_tok", 8)
                step, only = cfg.get("decoder_sparse_step", 1), cfg.get("mlp_only_layers") or []
                if l not in only and E > 0 and (l + 1) % step == 0:
                    x = x + moe(f"{p}.mlp", h, E, K, cfg.get("norm_topk_prob", False), ())
                else:
                    x = x + mlp(f"{p}.mlp", h)
            elif cls == "MixtralForCausalLM":
                E, K = cfg.get("num_local_experts", 8), cfg.get("num_experts_per_tok", 2)
                x = x + moe(f"{p}.block_sparse_moe", h, E, K, True, ("w1", "w3", "w2"))
            else:
                x = x + mlp(f"{p}.mlp", h)
        x = rms_norm(x, W["model.norm.weight"], eps)
        head = W["model.embed_tokens.weight"] if cfg.get("tie_word_embeddings") else W["lm_head.weight"]
        logits = x @ head.T
        return logits

    logits = forward(ids)
    prompt_margin = margin  # the continuation's margins are not reported
    greedy, greedy_max, cur = [], [], list(ids)
    for _ in range(16):  # greedy continuation, each step a fresh causal pass
        row = forward(cur)[-1] if greedy else logits[-1]
        t = int(np.argmax(row))
        greedy.append(t); greedy_max.append(float(row[t])); cur.append(t)
    V = logits.shape[1]
    probes = [k * (V // 64) for k in range(64)]
    positions = []
    for i in range(S):
        row = logits[i]
        top = np.argsort(-row, kind="stable")[:10]
        m = row.max()
        positions.append({"pos": i, "argmax": int(top[0]),
                          "logsumexp": float(m + np.log(np.exp(row - m).sum())),
                          "top10": [[int(t), float(row[t])] for t in top],
                          "probe_logits": [float(row[t]) for t in probes]})
    summary = {"reference": "tools/refs/moe64.py (NumPy float64, from transformers' modeling code)",
               "model": cls, "n_vocab": V, "n_positions": S, "input_ids": ids, "greedy_ids": greedy, "greedy_max_logits": greedy_max,
               "probe_ids": probes, "positions": positions}
    if np.isfinite(prompt_margin):
        summary["min_router_margin"] = float(prompt_margin)
    with open(out_path, "w") as f:
        json.dump(summary, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
