"""Minimal stand-in for the `transformers` package, so that llama.cpp's
convert_hf_to_gguf.py (and llama2.c's export.py) run without transformers.

- AutoConfig.from_pretrained raises -> convert_hf_to_gguf falls back to config.json.
- AutoTokenizer.from_pretrained reads tokenizer.json / tokenizer_config.json;
  encode/decode are delegated to the official HF `tokenizers` Rust library
  (npm package tokenizers@0.23.2) through a node subprocess.
- LlamaConfig: just enough for llama2.c export.py's hf_export().
(Written for the peer tools; our own code.)
"""
import json, os, subprocess, atexit
from pathlib import Path

# tok_server.js sits in peer-shim/, two levels up; `require('tokenizers')` is resolved through
# NODE_PATH (to-gguf.sh points it at $PEER_HOME/npm/node_modules).
NODE_TOK_SERVER = os.environ.get(
    "TOK_SERVER_JS", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tok_server.js"))
__version__ = "0.0.0-shim"


class AutoConfig:
    @staticmethod
    def from_pretrained(*args, **kwargs):
        raise RuntimeError("transformers shim: AutoConfig unavailable, use config.json")


class AddedToken:
    def __init__(self, d):
        self.content = d["content"]
        self.special = d.get("special", False)
        self.normalized = d.get("normalized", True)
        self.lstrip = d.get("lstrip", False)
        self.rstrip = d.get("rstrip", False)
        self.single_word = d.get("single_word", False)

    def __str__(self):
        return self.content


class _NodeTokenizer:
    is_fast = True

    def __init__(self, path):
        path = Path(path).resolve()
        self.dir = path
        tj = json.loads((path / "tokenizer.json").read_text(encoding="utf-8"))
        self._tj = tj
        cfg_path = path / "tokenizer_config.json"
        self.config = json.loads(cfg_path.read_text(encoding="utf-8")) if cfg_path.is_file() else {}
        vocab = dict(tj["model"]["vocab"]) if isinstance(tj["model"].get("vocab"), dict) else {
            p[0]: i for i, p in enumerate(tj["model"]["vocab"])}
        self.added_tokens_decoder = {}
        for d in tj.get("added_tokens", []):
            self.added_tokens_decoder[d["id"]] = AddedToken(d)
            vocab[d["content"]] = d["id"]
        self.vocab = vocab
        self._proc = subprocess.Popen(
            ["node", NODE_TOK_SERVER, str(path / "tokenizer.json")],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, encoding="utf-8")
        atexit.register(self._proc.kill)

    def _call(self, req):
        self._proc.stdin.write(json.dumps(req) + "\n")
        self._proc.stdin.flush()
        res = json.loads(self._proc.stdout.readline())
        if "error" in res:
            raise RuntimeError(res["error"])
        return res

    @property
    def vocab_size(self):
        return len(self._tj["model"]["vocab"])

    @property
    def all_special_tokens(self):
        out = []
        for k in ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"):
            t = self.config.get(k)
            if isinstance(t, dict):
                t = t.get("content")
            if t is not None and t not in out:
                out.append(t)
        for t in self.config.get("additional_special_tokens") or []:
            t = t.get("content") if isinstance(t, dict) else t
            if t not in out:
                out.append(t)
        return [t for t in out if t in self.vocab]

    @property
    def all_special_ids(self):
        return [self.vocab[t] for t in self.all_special_tokens]

    def get_vocab(self):
        return dict(self.vocab)

    def get_added_vocab(self):
        return {t.content: i for i, t in sorted(self.added_tokens_decoder.items())}

    def encode(self, text, add_special_tokens=True, **kw):
        return self._call({"op": "encode", "text": text, "add_special": add_special_tokens})["ids"]

    def decode(self, ids, skip_special_tokens=False, **kw):
        if isinstance(ids, int):
            ids = [ids]
        return self._call({"op": "decode", "ids": list(ids), "skip_special": skip_special_tokens})["text"]

    def convert_ids_to_tokens(self, ids):
        inv = {v: k for k, v in self.vocab.items()}
        return [inv.get(i) for i in ids] if isinstance(ids, list) else inv.get(ids)

    def __getattr__(self, name):
        # bos_token / eos_token / ..._id lookups from tokenizer_config.json
        cfg = self.__dict__.get("config", {})
        if name.endswith("_token_id"):
            t = cfg.get(name[:-3])
            if isinstance(t, dict):
                t = t.get("content")
            return self.__dict__["vocab"].get(t) if t is not None else None
        if name.endswith("_token"):
            t = cfg.get(name)
            return t.get("content") if isinstance(t, dict) else t
        raise AttributeError(name)


class AutoTokenizer:
    @staticmethod
    def from_pretrained(path, *args, **kwargs):
        return _NodeTokenizer(path)


class LlamaConfig:
    def __init__(self, **kw):
        self.__dict__.update(kw)
        self.model_type = "llama"

    def to_dict(self):
        return dict(self.__dict__)

    def save_pretrained(self, d):
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "config.json"), "w") as f:
            json.dump(self.to_dict(), f, indent=2, sort_keys=True)
