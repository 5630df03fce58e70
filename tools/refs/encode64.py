#!/usr/bin/python3
"""Float64 reference of the embedding and reranking models hfstatic exports (hf_encode
programs), written from transformers' modeling code and sentence-transformers' modules with
NumPy only, for internal/testckpt/testdata/*/reference64.encode.json (see README.md here).

  python3 encode64.py HF_DIR OUT_JSON [--max-tokens S] [--seed N] [--yes ID --no ID] [--inputs FILE]

Models: BertModel and BertForSequenceClassification (modeling_bert.py), XLMRobertaModel and
XLMRobertaForSequenceClassification (modeling_xlm_roberta.py: positions counted from
pad_token_id + 1, RobertaClassificationHead), Qwen3ForCausalLM as Qwen3-Embedding (last-token
pooling, normalized) or, with --yes/--no, as Qwen3-Reranker (the "yes" and "no" logits at the
last position; modeling_qwen3.py). Embedding models apply the folder's sentence-transformers
modules (Pooling: cls, mean, max, lasttoken; Dense; Normalize), as sentence_transformers.models
computes them. Every sequence runs alone, unpadded (padding changes nothing in these models).

The inputs are drawn with NumPy's seeded generator: lengths 1, 2, 7, 19, S and a few more,
ids in [3, vocab) (never a pad or special id), and for cross-encoders a pair layout (BERT:
token type 1 on the second part). Weights are read as stored (f32, or bf16 widened exactly)
and every operation runs in float64. --inputs FILE takes the inputs from FILE instead (a JSON
list of {"ids": [...], "types": [...], ...}, other fields copied to the output as they are: the
texts whose tokens they are, for tools/refs/encode_texts.py). Writes:

  {"reference": ..., "model": ..., "task": "embed"|"rerank",
   "inputs": [{"ids": [...], "types": [...]}],
   "outputs": [[...], ...],        # embeddings, or [score] per input (the classifier's logit;
                                   # Qwen3-Reranker: logit(yes) - logit(no))
   "relevance": [...]}             # rerank: sigmoid(score) = softmax([no, yes])[yes]
"""
import argparse, json, math, os, struct

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


def layer_norm(x, w, b, eps):
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * w + b


def rms_norm(x, w, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def gelu(x):  # transformers' "gelu": the exact erf form
    erf = np.vectorize(math.erf)
    return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))


def softmax(s):
    s = s - s.max(axis=-1, keepdims=True)
    e = np.exp(s)
    return e / e.sum(axis=-1, keepdims=True)


ACT = {"gelu": gelu, "relu": lambda x: np.maximum(x, 0), "silu": lambda x: x / (1 + np.exp(-x)),
       "gelu_new": lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))}


class Encoder:
    """BertModel / XLMRobertaModel and their ForSequenceClassification heads."""

    def __init__(self, folder, cfg, w):
        self.cfg, self.arch = cfg, cfg["architectures"][0]
        self.roberta = self.arch.startswith("XLMRoberta") or self.arch.startswith("Roberta")
        prefix = ("roberta." if self.roberta else "bert.")
        if not any(k.startswith(prefix) for k in w):
            prefix = ""
        self.w = {k[len(prefix):] if k.startswith(prefix) else k: v for k, v in w.items()}
        self.heads = cfg["num_attention_heads"]
        self.eps = cfg.get("layer_norm_eps", 1e-12)
        self.act = ACT[cfg.get("hidden_act", "gelu")]
        self.pad = cfg.get("pad_token_id", 1 if self.roberta else 0)

    def positions(self, ids):
        if self.roberta:  # create_position_ids_from_input_ids
            mask = (np.array(ids) != self.pad).astype(np.int64)
            return np.cumsum(mask) * mask + self.pad
        return np.arange(len(ids))

    def hidden(self, ids, types):
        w, n = self.w, len(ids)
        x = w["embeddings.word_embeddings.weight"][ids]
        x = x + w["embeddings.token_type_embeddings.weight"][types]
        x = x + w["embeddings.position_embeddings.weight"][self.positions(ids)]
        x = layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], self.eps)
        H = self.heads
        D = x.shape[1]
        hd = D // H
        for l in range(self.cfg["num_hidden_layers"]):
            p = f"encoder.layer.{l}."
            lin = lambda h, name: h @ w[p + name + ".weight"].T + w[p + name + ".bias"]
            q = lin(x, "attention.self.query").reshape(n, H, hd).transpose(1, 0, 2)
            k = lin(x, "attention.self.key").reshape(n, H, hd).transpose(1, 0, 2)
            v = lin(x, "attention.self.value").reshape(n, H, hd).transpose(1, 0, 2)
            probs = softmax(q @ k.transpose(0, 2, 1) / math.sqrt(hd))
            ctx = (probs @ v).transpose(1, 0, 2).reshape(n, D)
            a = lin(ctx, "attention.output.dense")
            x = layer_norm(a + x, w[p + "attention.output.LayerNorm.weight"], w[p + "attention.output.LayerNorm.bias"], self.eps)
            h = self.act(lin(x, "intermediate.dense"))
            a = lin(h, "output.dense")
            x = layer_norm(a + x, w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"], self.eps)
        return x

    def score(self, ids, types):
        x, w = self.hidden(ids, types)[0], self.w
        if self.roberta:  # RobertaClassificationHead
            h = np.tanh(x @ w["classifier.dense.weight"].T + w["classifier.dense.bias"])
            return h @ w["classifier.out_proj.weight"].T + w["classifier.out_proj.bias"]
        pooled = np.tanh(x @ w["pooler.dense.weight"].T + w["pooler.dense.bias"])  # BertPooler
        return pooled @ w["classifier.weight"].T + w["classifier.bias"]


class Qwen3:
    """Qwen3ForCausalLM (modeling_qwen3.py), one unpadded sequence."""

    def __init__(self, folder, cfg, w):
        self.cfg = c = cfg
        self.w = {("model." + k if not k.startswith(("model.", "lm_head.")) else k): v for k, v in w.items()}
        self.heads, self.hidden_size = c["num_attention_heads"], c["hidden_size"]
        self.kv = c.get("num_key_value_heads") or self.heads
        self.hd = c.get("head_dim") or self.hidden_size // self.heads
        self.eps = c["rms_norm_eps"]
        theta = c.get("rope_theta", 10000.0)
        self.inv_freq = 1.0 / theta ** (np.arange(0, self.hd, 2, dtype=np.float64) / self.hd)
        if c.get("rope_scaling"):
            raise ValueError("rope_scaling is not implemented here")

    def hidden(self, ids):
        w, n, hd, H, KV = self.w, len(ids), self.hd, self.heads, self.kv
        x = w["model.embed_tokens.weight"][ids]
        ang = np.outer(np.arange(n), self.inv_freq)
        cos, sin = np.cos(np.concatenate([ang, ang], 1)), np.sin(np.concatenate([ang, ang], 1))
        rot = lambda t: t * cos + np.concatenate([-t[..., hd // 2:], t[..., :hd // 2]], -1) * sin
        causal = np.triu(np.full((n, n), -np.inf), 1)
        for l in range(self.cfg["num_hidden_layers"]):
            p = f"model.layers.{l}."
            h = rms_norm(x, w[p + "input_layernorm.weight"], self.eps)
            q = (h @ w[p + "self_attn.q_proj.weight"].T).reshape(n, H, hd)
            k = (h @ w[p + "self_attn.k_proj.weight"].T).reshape(n, KV, hd)
            v = (h @ w[p + "self_attn.v_proj.weight"].T).reshape(n, KV, hd)
            q = rot(rms_norm(q, w[p + "self_attn.q_norm.weight"], self.eps).transpose(1, 0, 2))
            k = rot(rms_norm(k, w[p + "self_attn.k_norm.weight"], self.eps).transpose(1, 0, 2))
            v = v.transpose(1, 0, 2)
            k, v = np.repeat(k, H // KV, 0), np.repeat(v, H // KV, 0)
            probs = softmax(q @ k.transpose(0, 2, 1) * hd ** -0.5 + causal)
            o = (probs @ v).transpose(1, 0, 2).reshape(n, H * hd)
            x = x + o @ w[p + "self_attn.o_proj.weight"].T
            h = rms_norm(x, w[p + "post_attention_layernorm.weight"], self.eps)
            g = h @ w[p + "mlp.gate_proj.weight"].T
            u = h @ w[p + "mlp.up_proj.weight"].T
            x = x + (g / (1 + np.exp(-g)) * u) @ w[p + "mlp.down_proj.weight"].T
        return rms_norm(x, w["model.norm.weight"], self.eps)

    def logits_last(self, ids, rows):
        out = self.w.get("lm_head.weight")
        if out is None or self.cfg.get("tie_word_embeddings", True):
            out = self.w["model.embed_tokens.weight"]
        return self.hidden(ids)[-1] @ out[rows].T


def sentence_modules(folder, x, types_mask):
    """sentence_transformers.models: Pooling, Dense, Normalize over token rows x."""
    mods = json.load(open(os.path.join(folder, "modules.json")))
    for m in sorted(mods, key=lambda m: m["idx"]):
        t, path = m["type"].rsplit(".", 1)[1], os.path.join(folder, m["path"])
        if t == "Transformer":
            continue
        if t == "Pooling":
            c = json.load(open(os.path.join(path, "config.json")))
            if c.get("pooling_mode_cls_token"):
                x = x[0]
            elif c.get("pooling_mode_mean_tokens"):
                x = x.sum(0) / max(len(x), 1e-9)
            elif c.get("pooling_mode_max_tokens"):
                x = x.max(0)
            elif c.get("pooling_mode_lasttoken"):
                x = x[-1]
            else:
                raise ValueError(f"pooling {c}")
        elif t == "Dense":
            c = json.load(open(os.path.join(path, "config.json")))
            dw = load_safetensors(os.path.join(path, "model.safetensors"))
            x = x @ dw["linear.weight"].T + (dw["linear.bias"] if c.get("bias", True) else 0)
            act = c.get("activation_function", "torch.nn.modules.activation.Tanh").rsplit(".", 1)[1]
            x = {"Tanh": np.tanh, "Identity": lambda v: v, "ReLU": lambda v: np.maximum(v, 0)}[act](x)
        elif t == "Normalize":
            x = x / max(np.linalg.norm(x), 1e-12)
        else:
            raise ValueError(f"module {t}")
    return x


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("folder")
    ap.add_argument("out")
    ap.add_argument("--max-tokens", type=int)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--yes", type=int)
    ap.add_argument("--no", type=int)
    ap.add_argument("--inputs")
    a = ap.parse_args()
    cfg = json.load(open(os.path.join(a.folder, "config.json")))
    w = load_safetensors(os.path.join(a.folder, "model.safetensors"))
    arch, V, S = cfg["architectures"][0], cfg["vocab_size"], a.max_tokens
    rng = np.random.default_rng(a.seed)
    lengths = [1, 2, 7, 19, S, 3, 12, S - 1] if S else []
    rerank = arch.endswith("ForSequenceClassification") or a.yes is not None
    inputs = []
    if a.inputs:
        inputs, lengths = json.load(open(a.inputs)), []
        for inp in inputs:
            inp.setdefault("types", [0] * len(inp["ids"]))
    for n in lengths:
        ids = [int(i) for i in rng.integers(3, V, n)]
        types = [0] * n
        if rerank and arch.startswith("Bert") and n > 1:
            types = [0] * (n // 2) + [1] * (n - n // 2)  # [CLS] query [SEP] | document [SEP]
        inputs.append({"ids": ids, "types": types})
    outputs, relevance = [], []
    if arch.startswith(("Bert", "XLMRoberta", "Roberta")):
        m = Encoder(a.folder, cfg, w)
        for inp in inputs:
            if rerank:
                s = m.score(inp["ids"], inp["types"])
                outputs.append([float(v) for v in s])
                relevance.append(float(1 / (1 + math.exp(-s[0]))))
            else:
                x = m.hidden(inp["ids"], inp["types"])
                outputs.append([float(v) for v in sentence_modules(a.folder, x, None)])
    elif arch == "Qwen3ForCausalLM":
        m = Qwen3(a.folder, cfg, w)
        for inp in inputs:
            if rerank:
                no, yes = m.logits_last(inp["ids"], [a.no, a.yes])
                outputs.append([float(yes - no)])
                p = softmax(np.array([no, yes]))[1]  # the model card's log_softmax, exp
                relevance.append(float(p))
            else:
                x = m.hidden(inp["ids"])
                outputs.append([float(v) for v in sentence_modules(a.folder, x, None)])
            inp.pop("types")
    else:
        raise ValueError(f"architecture {arch}")
    res = {"reference": "float64 NumPy (tools/refs/encode64.py, from transformers' modeling code and sentence-transformers' modules)",
           "model": os.path.basename(os.path.normpath(a.folder)), "task": "rerank" if rerank else "embed",
           "inputs": inputs, "outputs": outputs}
    if rerank:
        res["relevance"] = relevance
    with open(a.out, "w") as f:
        json.dump(res, f, indent=None, separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    main()
