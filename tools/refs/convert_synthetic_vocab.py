#!/usr/bin/python3
"""Convert a random-weight Hugging Face folder (no tokenizer) to an f32 GGUF with llama.cpp's
own convert_hf_to_gguf.py, giving it a synthetic SentencePiece-style vocabulary of exactly
vocab_size tokens (<unk> <s> </s>, the 256 byte tokens, then "▁t<i>").

Reference logits are computed from token ids, so the vocabulary's text does not matter; its
size does (llama.cpp sizes the output from it). The released tokenizers of OLMo 2 and Granite
are not available offline, and convert_hf_to_gguf.py refuses a BPE tokenizer it does not know.

Usage (run as the peer tools run convert_hf_to_gguf.py; see tools/peer/README.md):
  LLAMA_CPP_DIR=~/.cache/llama-peer/llama.cpp PEER_SHIM=tools/peer/peer-shim \\
    /usr/bin/python3 convert_synthetic_vocab.py HF_DIR --outtype f32 --outfile OUT.gguf
"""
import json, os, runpy, sys

LLAMA_CPP = os.environ["LLAMA_CPP_DIR"]
sys.path.insert(0, os.path.join(os.environ["PEER_SHIM"], "pyshim"))
sys.path.insert(0, LLAMA_CPP)
sys.path.insert(1, os.path.join(LLAMA_CPP, "gguf-py"))
import torch
for _n in ("float8_e4m3fn", "float8_e5m2", "float8_e8m0fnu", "float8_e4m3fnuz", "float8_e5m2fnuz"):
    if not hasattr(torch, _n):  # dtypes torch 1.13 lacks but the converter names at import time
        setattr(torch, _n, type("_MissingDtype_" + _n, (), {"itemsize": 1})())
import gguf
from conversion import base, llama, qwen


def synthetic_vocab(self):
    n = self.hparams["vocab_size"]
    tokens = ["<unk>", "<s>", "</s>"] + ["<0x%02X>" % b for b in range(256)]
    types = [gguf.TokenType.UNKNOWN, gguf.TokenType.CONTROL, gguf.TokenType.CONTROL] + [gguf.TokenType.BYTE] * 256
    tokens += ["\u2581t%d" % i for i in range(len(tokens), n)]
    types += [gguf.TokenType.NORMAL] * (n - len(types))
    assert len(tokens) == n
    w = self.gguf_writer
    w.add_tokenizer_model("llama")
    w.add_tokenizer_pre("default")
    w.add_token_list(tokens)
    w.add_token_scores([0.0] * n)
    w.add_token_types(types)
    w.add_unk_token_id(0)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_add_bos_token(False)


base.TextModel.set_vocab = synthetic_vocab
llama.LlamaModel.set_vocab = synthetic_vocab
qwen.Qwen2Model.set_vocab = synthetic_vocab  # Qwen2 and Qwen3 (the benchmark shape): their own set_vocab wants a tokenizer
sys.argv = [os.path.join(LLAMA_CPP, "convert_hf_to_gguf.py")] + sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
