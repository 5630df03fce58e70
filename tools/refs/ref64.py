#!/usr/bin/python3
"""Float64 reference forward pass of the decoder-only families hfstatic exports, written from
transformers' modeling code (modeling_llama.py, modeling_olmo2.py, modeling_smollm3.py,
modeling_granite.py) with NumPy only, for the reference summaries in
internal/testckpt/testdata (see README.md here).

  python3 ref64.py HF_DIR IDS OUT_PREFIX [N_GREEDY]

IDS is a comma-separated list of token ids. Writes OUT_PREFIX.logits.f64 (float64
little-endian [n_ids][vocab]: the logits at each prompt position) and OUT_PREFIX.greedy.txt
(N_GREEDY lines "id max_logit", greedy continuation). Weights are read as stored (f32, or
bf16 widened exactly) and every operation runs in float64. Sliding windows: SmolLM3's only
(configuration_smollm3.py's rule).
"""
import json, struct, sys

import numpy as np


def load_safetensors(path):
    raw = open(path, "rb").read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    data = memoryview(raw)[8 + n:]
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        a, b = t["data_offsets"]
        buf = data[a:b]
        if t["dtype"] == "F32":
            x = np.frombuffer(buf, "<f4").astype(np.float64)
        elif t["dtype"] == "BF16":
            x = (np.frombuffer(buf, "<u2").astype(np.uint32) << 16).view(np.float32).astype(np.float64)
        else:
            raise ValueError(f"{name}: dtype {t['dtype']}")
        out[name] = x.reshape(t["shape"])
    return out


def rms_norm(x, w, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def rotate_half(x):
    h = x.shape[-1] // 2
    return np.concatenate([-x[..., h:], x[..., :h]], axis=-1)


class Model:
    def __init__(self, folder):
        self.cfg = c = json.load(open(folder + "/config.json"))
        self.w = load_safetensors(folder + "/model.safetensors")
        self.arch = c["architectures"][0]
        self.heads, self.hidden = c["num_attention_heads"], c["hidden_size"]
        self.kv = c.get("num_key_value_heads") or self.heads
        self.head_dim = c.get("head_dim") or self.hidden // self.heads
        self.eps = c["rms_norm_eps"]
        self.layers = c["num_hidden_layers"]
        theta = c.get("rope_theta", 10000.0)
        self.inv_freq = 1.0 / theta ** (np.arange(0, self.head_dim, 2, dtype=np.float64) / self.head_dim)
        if c.get("rope_scaling"):
            raise ValueError("rope_scaling is not implemented here")
        self.scaling = self.head_dim ** -0.5
        self.embed_mul = self.residual_mul = self.logits_div = 1.0
        self.rope_layers = [True] * self.layers
        self.windows = [None] * self.layers  # sliding window per layer (None: full attention)
        if self.arch == "GraniteForCausalLM":  # modeling_granite.py
            self.scaling = c.get("attention_multiplier", 1.0)
            self.embed_mul = c.get("embedding_multiplier", 1.0)
            self.residual_mul = c.get("residual_multiplier", 1.0)
            self.logits_div = c.get("logits_scaling", 1.0)
        if self.arch == "SmolLM3ForCausalLM":  # configuration_smollm3.py
            nrl = c.get("no_rope_layers")
            if nrl is None:
                k = c.get("no_rope_layer_interval", 4)
                nrl = [int((i + 1) % k != 0) for i in range(self.layers)]
            self.rope_layers = [bool(x) for x in nrl[:self.layers]]
            if c.get("use_sliding_window") and c.get("sliding_window") is not None:
                types = c.get("layer_types") or ["full_attention" if r else "sliding_attention" for r in self.rope_layers]
                self.windows = [c["sliding_window"] if t == "sliding_attention" else None for t in types]
        self.olmo2 = self.arch == "Olmo2ForCausalLM"
        tied = c.get("tie_word_embeddings", self.arch in ("SmolLM3ForCausalLM",))
        self.lm_head = self.w["model.embed_tokens.weight"] if tied else self.w["lm_head.weight"]

    def p(self, l, name):
        return self.w[f"model.layers.{l}.{name}"]

    def attention(self, l, h, pos):
        S, H, KV, D = h.shape[0], self.heads, self.kv, self.head_dim
        q = h @ self.p(l, "self_attn.q_proj.weight").T
        k = h @ self.p(l, "self_attn.k_proj.weight").T
        v = h @ self.p(l, "self_attn.v_proj.weight").T
        if self.olmo2:  # q/k norm over the whole projection, before the split into heads
            q = rms_norm(q, self.p(l, "self_attn.q_norm.weight"), self.eps)
            k = rms_norm(k, self.p(l, "self_attn.k_norm.weight"), self.eps)
        q, k, v = (t.reshape(S, -1, D).transpose(1, 0, 2) for t in (q, k, v))
        if self.rope_layers[l]:
            ang = pos[:, None] * self.inv_freq[None, :]
            emb = np.concatenate([ang, ang], axis=-1)
            cos, sin = np.cos(emb), np.sin(emb)
            q = q * cos + rotate_half(q) * sin
            k = k * cos + rotate_half(k) * sin
        rep = H // KV
        k, v = np.repeat(k, rep, axis=0), np.repeat(v, rep, axis=0)
        s = q @ k.transpose(0, 2, 1) * self.scaling
        s = s + np.triu(np.full((S, S), -np.inf), 1)
        if self.windows[l] is not None:  # row i sees positions a with i - window < a <= i
            s = s + np.tril(np.full((S, S), -np.inf), -self.windows[l])
        s = np.exp(s - s.max(axis=-1, keepdims=True))
        s /= s.sum(axis=-1, keepdims=True)
        o = (s @ v).transpose(1, 0, 2).reshape(S, H * D)
        return o @ self.p(l, "self_attn.o_proj.weight").T

    def mlp(self, l, h):
        g = h @ self.p(l, "mlp.gate_proj.weight").T
        u = h @ self.p(l, "mlp.up_proj.weight").T
        return (g / (1 + np.exp(-g)) * u) @ self.p(l, "mlp.down_proj.weight").T

    def forward(self, ids):
        x = self.w["model.embed_tokens.weight"][ids] * self.embed_mul
        pos = np.arange(len(ids), dtype=np.float64)
        for l in range(self.layers):
            if self.olmo2:  # norms after each sublayer, none before (modeling_olmo2.py)
                x = x + rms_norm(self.attention(l, x, pos), self.p(l, "post_attention_layernorm.weight"), self.eps)
                x = x + rms_norm(self.mlp(l, x), self.p(l, "post_feedforward_layernorm.weight"), self.eps)
                continue
            h = rms_norm(x, self.p(l, "input_layernorm.weight"), self.eps)
            x = x + self.attention(l, h, pos) * self.residual_mul
            h = rms_norm(x, self.p(l, "post_attention_layernorm.weight"), self.eps)
            x = x + self.mlp(l, h) * self.residual_mul
        x = rms_norm(x, self.w["model.norm.weight"], self.eps)
        return (x @ self.lm_head.T) / self.logits_div


def main():
    folder, ids, prefix = sys.argv[1], [int(t) for t in sys.argv[2].split(",")], sys.argv[3]
    n_greedy = int(sys.argv[4]) if len(sys.argv) > 4 else 16
    m = Model(folder)
    logits = m.forward(np.array(ids))
    logits.astype("<f8").tofile(prefix + ".logits.f64")
    seq, last = list(ids), logits[-1]
    with open(prefix + ".greedy.txt", "w") as g:
        for _ in range(n_greedy):
            nxt = int(np.argmax(last))
            g.write(f"{nxt} {last[nxt]:.9f}\n")
            seq.append(nxt)
            last = m.forward(np.array(seq))[-1]


if __name__ == "__main__":
    main()
