#!/usr/bin/env python3
"""Write an f32 GGUF from a Hugging Face folder of float32 safetensors, for the llama.cpp side of
the benchmark comparison (docs/performance.md).

llama.cpp's own convert_hf_to_gguf.py imports torch and transformers, which cannot be installed on
the benchmark machine (no PyPI); this script needs only numpy and llama.cpp's gguf-py package (its
GGUF writer and tensor-name map), so the checkpoint llama.cpp runs is the same one hfstatic
exports. It handles the dense decoder layouts the benchmark shapes use (qwen3, qwen2, llama) with
a byte-level BPE tokenizer.json; it is not a general converter.

usage: PYTHONPATH=/path/to/llama.cpp/gguf-py python3 gguf_from_safetensors.py MODEL_DIR OUT.gguf
then:  llama-quantize OUT.gguf OUT-q8_0.gguf Q8_0   (and Q4_0)
"""
import json
import struct
import sys
from pathlib import Path

import numpy as np
import gguf

ARCHS = {"qwen3": gguf.MODEL_ARCH.QWEN3, "qwen2": gguf.MODEL_ARCH.QWEN2, "llama": gguf.MODEL_ARCH.LLAMA}
PRE = {"qwen3": "qwen2", "qwen2": "qwen2", "llama": "llama-bpe"}


def read_safetensors(path):
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        base = 8 + n
    data = np.memmap(path, dtype=np.uint8, mode="r")
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if info["dtype"] != "F32":
            sys.exit(f"{path}: {name} is {info['dtype']}; this script reads float32 checkpoints only")
        lo, hi = info["data_offsets"]
        yield name, data[base + lo: base + hi].view(np.float32).reshape(info["shape"])


def permute_llama(w, n_head):
    # llama.cpp's LLAMA rope is the interleaved (GPT-J) form; HF stores q/k for the rotate-half form.
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def main():
    src, out = Path(sys.argv[1]), sys.argv[2]
    cfg = json.loads((src / "config.json").read_text())
    mt = cfg["model_type"]
    if mt not in ARCHS:
        sys.exit(f"model_type {mt!r} not handled (have {sorted(ARCHS)})")
    arch = ARCHS[mt]
    name = gguf.MODEL_ARCH_NAMES[arch]
    w = gguf.GGUFWriter(out, name)
    n_layer, n_head = cfg["num_hidden_layers"], cfg["num_attention_heads"]
    n_kv = cfg.get("num_key_value_heads", n_head)
    head_dim = cfg.get("head_dim") or cfg["hidden_size"] // n_head
    w.add_name(src.name)
    w.add_context_length(cfg.get("max_position_embeddings", 4096))
    w.add_embedding_length(cfg["hidden_size"])
    w.add_block_count(n_layer)
    w.add_feed_forward_length(cfg["intermediate_size"])
    w.add_head_count(n_head)
    w.add_head_count_kv(n_kv)
    w.add_key_length(head_dim)
    w.add_value_length(head_dim)
    w.add_rope_freq_base(cfg.get("rope_theta", 10000.0))
    w.add_layer_norm_rms_eps(cfg["rms_norm_eps"])
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    if mt == "llama":
        w.add_rope_dimension_count(head_dim)

    # Tokenizer: byte-level BPE from tokenizer.json, padded to the embedding's row count.
    tj = json.loads((src / "tokenizer.json").read_text())
    vocab = dict(tj["model"]["vocab"])
    special = {}
    for t in tj.get("added_tokens", []):
        vocab[t["content"]] = t["id"]
        special[t["id"]] = t.get("special", False)
    n_vocab = cfg["vocab_size"]
    rev = {i: s for s, i in vocab.items()}
    tokens, types = [], []
    for i in range(n_vocab):
        if i not in rev:
            tokens.append(f"[PAD{i}]")
            types.append(gguf.TokenType.UNUSED)
        elif i in special:
            tokens.append(rev[i])
            types.append(gguf.TokenType.CONTROL if special[i] else gguf.TokenType.USER_DEFINED)
        else:
            tokens.append(rev[i])
            types.append(gguf.TokenType.NORMAL)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre(PRE[mt])
    w.add_token_list(tokens)
    w.add_token_types(types)
    gguf.SpecialVocab(src, load_merges=True).add_to_gguf(w)

    names = gguf.get_tensor_name_map(arch, n_layer)
    for hf_name, t in read_safetensors(src / "model.safetensors"):
        gname = names.get_name(hf_name, try_suffixes=(".weight", ".bias"))
        if gname is None:
            sys.exit(f"no GGUF name for {hf_name}")
        if mt == "llama" and hf_name.endswith("q_proj.weight"):
            t = permute_llama(t, n_head)
        elif mt == "llama" and hf_name.endswith("k_proj.weight"):
            t = permute_llama(t, n_kv)
        w.add_tensor(gname, np.ascontiguousarray(t))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file(progress=False)
    w.close()


if __name__ == "__main__":
    main()
