#!/usr/bin/python3
"""Convert a random-weight BertModel folder (no tokenizer; cmd/synthckpt -shape
all-minilm-l6-v2) to an f32 GGUF with llama.cpp's own convert_hf_to_gguf.py, for the
llama-embedding side of the encoder benchmark (docs/performance.md, "Embeddings").

The converter needs a WordPiece vocabulary; the released one is not available offline, so this
gives it a synthetic one of exactly vocab_size tokens laid out as bert-base-uncased's is ([PAD] 0,
[unused…] 1-99, [UNK] 100, [CLS] 101, [SEP] 102, [MASK] 103), then words "t<i>": llama.cpp then
tokenizes the text "t200 t201 …" to [CLS], one token per word, [SEP], so a benchmark sentence has
an exact number of tokens. The weights are the checkpoint's, unchanged.

Usage (run as the peer tools run convert_hf_to_gguf.py; see ../shared/tools/peer/README.md):
  LLAMA_CPP_DIR=~/.cache/llama-peer/llama.cpp PEER_SHIM=/work/shared/tools/peer/peer-shim \\
    /usr/bin/python3 gguf_bert_synthetic.py HF_DIR --outtype f32 --outfile OUT.gguf
"""
import os, runpy, sys

LLAMA_CPP = os.environ["LLAMA_CPP_DIR"]
sys.path.insert(0, os.path.join(os.environ["PEER_SHIM"], "pyshim"))
sys.path.insert(0, LLAMA_CPP)
sys.path.insert(1, os.path.join(LLAMA_CPP, "gguf-py"))
import torch
for _n in ("float8_e4m3fn", "float8_e5m2", "float8_e8m0fnu", "float8_e4m3fnuz", "float8_e5m2fnuz"):
    if not hasattr(torch, _n):  # dtypes torch 1.13 lacks but the converter names at import time
        setattr(torch, _n, type("_MissingDtype_" + _n, (), {"itemsize": 1})())
import gguf
from conversion import bert


def synthetic_vocab(self):
    n = self.hparams["vocab_size"]
    C, N = gguf.TokenType.CONTROL, gguf.TokenType.NORMAL
    tokens = ["[PAD]"] + ["[unused%d]" % i for i in range(99)] + ["[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    types = [C] * len(tokens)
    types[100] = gguf.TokenType.UNKNOWN
    tokens += ["\u2581t%d" % i for i in range(len(tokens), n)]  # the converter's phantom-space form
    types += [N] * (n - len(types))
    self.vocab_size = n
    w = self.gguf_writer
    w.add_token_type_count(self.hparams.get("type_vocab_size", 1))
    w.add_tokenizer_model("bert")
    w.add_tokenizer_pre("default")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_unk_token_id(100)
    w.add_bos_token_id(101)   # [CLS]
    w.add_sep_token_id(102)
    w.add_pad_token_id(0)
    w.add_mask_token_id(103)


bert.BertModel.set_vocab = synthetic_vocab
sys.argv = [os.path.join(LLAMA_CPP, "convert_hf_to_gguf.py")] + sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
