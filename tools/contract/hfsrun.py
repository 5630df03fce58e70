#!/usr/bin/env python3
# hfsrun.py: a second runner for hf_static v1 programs, written from docs/contract.md alone
# (NumPy, float32, one op at a time, slow: for checking the specification, not for use).
#
#   python3 hfsrun.py PROGRAM.hfs TOKENS REFERENCE.f32 [--int8-activations]
#
# TOKENS is a comma-separated id list; REFERENCE.f32 is what `hfstatic logits PROGRAM.hfs
# --tokens TOKENS -o REFERENCE.f32` writes (float32 [n][vocab]). It runs the tokens one decode
# step each and compares every row, then runs them through the planner of section 6 (prefill
# steps with padding, the context-tail fallback) and compares the last row.
# --int8-activations quantizes the input of q8/q4 matrix products per block of 32 as
# hfstatic's fast path does (section 5, "Numerics").
import json, struct, sys
import numpy as np

INT8_ACTIVATIONS = "--int8-activations" in sys.argv

def quantize_rows(x):
    """x rounded through int8 per block of 32: d = max|x|/127, q = round(x/d) (half away from 0)."""
    k = x.shape[1]; nb = (k + 31) // 32
    r = np.zeros((x.shape[0], nb * 32), np.float64); r[:, :k] = x
    r = r.reshape(-1, nb, 32); amax = np.abs(r).max(2, keepdims=True)
    d = (amax.astype(np.float32) / np.float32(127)).astype(np.float32)
    v = r * np.where(amax > 0, 127 / np.where(amax > 0, amax, 1), 0)
    q = np.clip(np.sign(v) * np.floor(np.abs(v) + 0.5), -127, 127)
    return (q * d).reshape(-1, nb * 32)[:, :k].astype(np.float32)

class Program:
    def __init__(self, path):
        f = np.memmap(path, dtype=np.uint8, mode="r")
        self.f = f
        t = bytes(f[-64:])
        assert bytes(f[:8]) == b"HFSTATIC" and t[:8] == b"HFSTTAIL"
        off, n, _, _ = struct.unpack_from("<QQIQ", t, 8)
        self.man = json.loads(bytes(f[off:off + n]))
        self.md = self.man["metadata"]
        self.t = {x["name"]: x for x in self.man["tensors"]}
        self.cache = {}
        self.methods = {m["name"]: m for m in self.man["methods"]}

    def const(self, name):
        if name in self.cache:
            return self.cache[name]
        x = self.t[name]
        raw = self.f[x["offset"]:x["offset"] + x["size"]]
        shape, dt = x["shape"], x["dtype"]
        if dt == "f32":
            a = raw.view("<f4").reshape(shape)
        elif dt == "f16":
            a = raw.view("<f2").astype(np.float32).reshape(shape)
        elif dt == "bf16":
            a = (raw.view("<u2").astype(np.uint32) << 16).view(np.float32).reshape(shape)
        elif dt in ("q8", "q4"):
            rows, cols = shape
            nb = (cols + 31) // 32
            rb = nb * (34 if dt == "q8" else 18)
            r = np.asarray(raw).reshape(rows, rb)
            d = r[:, :2 * nb].copy().view("<f2").astype(np.float32)  # [rows, nb]
            if dt == "q8":
                q = r[:, 2 * nb:].view(np.int8).astype(np.float32).reshape(rows, nb, 32)
            else:
                b = r[:, 2 * nb:].reshape(rows, nb, 16)
                lo, hi = (b & 15).astype(np.int8) - 8, (b >> 4).astype(np.int8) - 8
                q = np.concatenate([lo, hi], axis=2).astype(np.float32)
            a = (q * d[:, :, None]).reshape(rows, nb * 32)[:, :cols]
        else:
            raise ValueError(dt)
        a = np.ascontiguousarray(a, dtype=np.float32)
        self.cache[name] = a
        return a

class Session:
    def __init__(self, p):
        self.p, md = p, p.md
        cdt = np.float16 if md["cache_dtype"] == "f16" else np.float32
        self.state = {}
        for l, ly in enumerate(md["layers"]):
            self.state[f"k_cache_{l}"] = np.zeros((1, ly["kv_heads"], ly["cache_rows"], ly["k_head_dim"]), cdt)
            self.state[f"v_cache_{l}"] = np.zeros((1, ly["kv_heads"], ly["cache_rows"], ly["v_head_dim"]), cdt)
            self.state[f"counter_{l}"] = np.zeros((), np.int64)
        self.pos = 0

    def step(self, method, toks):
        p, m = self.p, self.p.methods[method]
        S, C, n, pos = m["step"], p.md["max_context"], len(toks), self.pos
        ids = np.full((1, S), p.md["tokens"]["pad"], np.int64); ids[0, :n] = toks
        positions = (pos + np.arange(S, dtype=np.int64))[None, :]
        j = np.arange(C)
        mask = np.stack([j <= pos + min(i, n - 1) for i in range(S)])[None, None]
        b = dict(self.state, input_ids=ids, position_ids=positions, attention_mask=mask)
        for io in m["outputs"]:
            if io["name"] not in b:
                b[io["name"]] = np.zeros(io["shape"], np.float32)
        for a in m["activations"]:
            b[a["name"]] = np.zeros(a["shape"], np.float32)
        get = lambda name: b[name] if name in b else p.const(name)
        for op in m["ops"]:
            k, ins, out, at = op["op"], op["in"], op["out"][0], op.get("attr", {})
            if k == "embed":
                b[out][:n] = get(ins[1])[ids[0, :n]] * np.float32(at.get("scale", 0))
            elif k == "rms_norm":
                x = get(ins[0]); w = at["width"]; X = x.reshape(x.shape[0], -1)[:n]
                g = X.reshape(n, -1, w)
                y = g / np.sqrt((g * g).mean(axis=2, keepdims=True) + np.float32(at["eps"]))
                if len(ins) == 2:
                    y = y * get(ins[1])
                b[out].reshape(b[out].shape[0], -1)[:n] = y.reshape(n, -1)
            elif k == "linear":
                x, W = get(ins[0]), get(ins[1])
                X = x.reshape(-1, x.shape[-1])
                rows = X[n - 1:n] if at.get("last_row") else X[:n]
                if INT8_ACTIVATIONS and p.t[ins[1]]["dtype"] in ("q8", "q4"):
                    rows = quantize_rows(rows)
                y = rows @ W.T
                if len(ins) == 3:
                    y = y + get(ins[2])
                o = b[out].reshape(-1, W.shape[0]); o[:len(y)] = y
            elif k == "rope":
                x, pid, cos, sin = get(ins[0]), get(ins[1]), get(ins[2]), get(ins[3])
                hd, half = at["head_dim"], cos.shape[1]
                for i in range(n):
                    q = pid[0, i]; c, s = cos[q], sin[q]
                    for h in range(0, x.shape[1], hd):
                        x1, x2 = x[i, h:h + half].copy(), x[i, h + half:h + 2 * half].copy()
                        x[i, h:h + half] = x1 * c - x2 * s
                        x[i, h + half:h + 2 * half] = x2 * c + x1 * s
            elif k == "attention":
                q, kk, vv, kc, vc = (get(x) for x in ins[:5])
                Hq, Hkv, Dk, Dv = at["heads"], at["kv_heads"], at["head_dim"], at["v_head_dim"]
                sc, cap, win = np.float32(at["scale"]), at.get("soft_cap", 0), at.get("window", 0)
                L = kc.shape[2]; f16 = kc.dtype == np.float16
                cur_k = kk[:n].reshape(n, Hkv, Dk); cur_v = vv[:n].reshape(n, Hkv, Dv)
                if f16:
                    cur_k = cur_k.astype(np.float16).astype(np.float32); cur_v = cur_v.astype(np.float16).astype(np.float32)
                o = b[out]
                for i in range(n):
                    lo = max(0, pos - L)
                    vis = [a for a in range(lo, pos + i + 1) if mask[0, 0, i, a] and (win == 0 or a > pos + i - win)]
                    for h in range(Hq):
                        g = h // (Hq // Hkv)
                        K = np.stack([kc[0, g, a % L].astype(np.float32) if a < pos else cur_k[a - pos, g] for a in vis])
                        V = np.stack([vc[0, g, a % L].astype(np.float32) if a < pos else cur_v[a - pos, g] for a in vis])
                        s = (K @ q[i, h * Dk:(h + 1) * Dk]) * sc
                        if cap:
                            s = cap * np.tanh(s / cap)
                        e = np.exp(s - s.max()); pr = e / e.sum()
                        o[i, h * Dv:(h + 1) * Dv] = pr @ V
            elif k == "cache_write":
                x, cache = get(ins[0]), b[ins[1]]
                H, L, D = cache.shape[1:]
                for i in range(max(0, n - L), n):
                    cache[0, :, (pos + i) % L] = x[i].reshape(H, D)
            elif k == "advance":
                b[out][...] = b[out] + n
            elif k == "add":
                x, y = get(ins[0]), get(ins[1])
                b[out][:n] = x[:n] + y[:n]
            elif k == "glu":
                g, u = get(ins[0])[:n], get(ins[1])[:n]
                a = g / (1 + np.exp(-g)) if at["activation"] == "silu" else \
                    0.5 * g * (1 + np.tanh(np.float32(0.7978845608028654) * (g + np.float32(0.044715) * g ** 3)))
                b[out][:n] = a * u
            elif k == "moe":  # op set 2: mixture of experts (contract section 5)
                x, E, K = get(ins[0])[:n], (len(ins) - 2) // 3, at["top_k"]
                lg = (x @ get(ins[1]).T).astype(np.float64)
                y = np.zeros_like(x)
                for i in range(n):
                    top = np.argsort(-lg[i], kind="stable")[:K]
                    e_ = np.exp(lg[i] - lg[i].max())
                    w = e_[top] / (e_[top].sum() if at.get("norm_top_k") else e_.sum())
                    for e, we in sorted(zip(top, w)):
                        G, U, Dn = (get(ins[2 + j * E + e]) for j in range(3))
                        xi = x[i:i + 1]
                        if INT8_ACTIVATIONS and p.t[ins[2 + e]]["dtype"] in ("q8", "q4"):
                            xi = quantize_rows(xi)
                        g, u = xi @ G.T, xi @ U.T
                        a = g / (1 + np.exp(-g)) if at["activation"] == "silu" else \
                            0.5 * g * (1 + np.tanh(np.float32(0.7978845608028654) * (g + np.float32(0.044715) * g ** 3)))
                        h = a * u
                        if INT8_ACTIVATIONS and p.t[ins[2 + 2 * E + e]]["dtype"] in ("q8", "q4"):
                            h = quantize_rows(h)
                        y[i] += np.float32(we) * (h @ Dn.T)[0]
                b[out][:n] = y
            elif k == "soft_cap":
                x = b[out].reshape(-1, b[out].shape[-1]); c = at["soft_cap"]
                r = n if x.shape[0] == S else x.shape[0]
                x[:r] = c * np.tanh(x[:r] / c)
            elif k == "scale":
                x = b[out].reshape(-1, b[out].shape[-1])
                r = n if x.shape[0] == S else x.shape[0]
                x[:r] = x[:r] * np.float32(at["scale"])
            else:
                raise ValueError(k)
        for l in range(len(p.md["layers"])):
            assert int(self.state[f"counter_{l}"]) == pos + n
        self.pos += n
        lg = b["logits"].reshape(-1, p.md["vocab_size"])
        return lg[:n] if m["logits"] == "all" else lg[:1]

    def append_each(self, toks):  # decode steps: logits of every token
        return np.concatenate([self.step("decode", [t]) for t in toks])

    def append_plan(self, toks):  # the planner of section 6; returns the last logits
        P = self.p.methods.get("prefill", {}).get("step", 0); C = self.p.md["max_context"]
        k = 0
        while k < len(toks):
            if P and self.pos + P <= C:
                last = self.step("prefill", toks[k:k + P]); k += min(P, len(toks) - k)
            else:
                last = self.step("decode", [toks[k]]); k += 1
        return last[-1]

if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    prog, toks = Program(args[0]), [int(x) for x in args[1].split(",")]
    ref = np.fromfile(args[2], "<f4").reshape(len(toks), -1)
    got = Session(prog).append_each(toks)
    print("decode steps: max |diff| %.3g, argmax equal %d/%d" % (np.abs(got - ref).max(), (got.argmax(1) == ref.argmax(1)).sum(), len(toks)))
    last = Session(prog).append_plan(toks)
    print("planned (prefill+decode): last row max |diff| %.3g" % np.abs(last - ref[-1]).max())
