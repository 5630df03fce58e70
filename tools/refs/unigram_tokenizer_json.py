"""Writes a tokenizer.json of the XLM-RoBERTa kind (Unigram model with
SentencePiece's precompiled normalizer) from a SentencePiece .model file, as
transformers' XLMRobertaConverter lays it out (fairseq ids: <s> <pad> </s>
<unk>, the pieces, <mask>), or, with --plain, with SentencePiece's own ids
and byte fallback (as a Llama-style Unigram would have).

    /usr/bin/python3 tools/refs/unigram_tokenizer_json.py MODEL OUT_JSON [--plain]

The .model protobuf is read by hand (no protobuf module needed): field 1
the pieces (1 piece, 2 score, 3 type), field 3 the normalizer spec
(2 precompiled_charsmap).
"""
import base64
import json
import struct
import sys


def varint(b, i):
    v = s = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << s
        s += 7
        if c < 0x80:
            return v, i


def fields(b):
    i = 0
    while i < len(b):
        key, i = varint(b, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, i = varint(b, i)
        elif wt == 1:
            v, i = b[i:i + 8], i + 8
        elif wt == 2:
            n, i = varint(b, i)
            v, i = b[i:i + n], i + n
        elif wt == 5:
            v, i = b[i:i + 4], i + 4
        else:
            raise ValueError(f"wire type {wt}")
        yield num, wt, v


def main():
    model, out = sys.argv[1], sys.argv[2]
    plain = "--plain" in sys.argv
    data = open(model, "rb").read()
    pieces, charsmap = [], b""
    for num, _, v in fields(data):
        if num == 1:
            p = {"piece": "", "score": 0.0, "type": 1}
            for n, _, pv in fields(v):
                if n == 1:
                    p["piece"] = pv.decode("utf-8")
                elif n == 2:
                    p["score"] = struct.unpack("<f", pv)[0]
                elif n == 3:
                    p["type"] = pv
            pieces.append(p)
        elif num == 3:
            for n, _, nv in fields(v):
                if n == 2:
                    charsmap = nv
    normalizer = {"type": "Sequence", "normalizers": [
        {"type": "Precompiled", "precompiled_charsmap": base64.b64encode(charsmap).decode()},
        {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "}]}
    if plain:
        vocab = [[p["piece"], p["score"]] for p in pieces]
        unk = next(i for i, p in enumerate(pieces) if p["type"] == 2)
        specials = [(i, p["piece"]) for i, p in enumerate(pieces) if p["type"] in (2, 3)]
        bos, eos = vocab.index(["<s>", 0.0]), vocab.index(["</s>", 0.0])
        pre = {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": True}
        post = {"type": "TemplateProcessing",
                "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
                "pair": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                         {"SpecialToken": {"id": "<s>", "type_id": 1}}, {"Sequence": {"id": "B", "type_id": 1}}],
                "special_tokens": {"<s>": {"id": "<s>", "ids": [bos], "tokens": ["<s>"]}}}
        decoder = {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
            {"type": "ByteFallback"}, {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]}
        model_json = {"type": "Unigram", "unk_id": unk, "vocab": vocab, "byte_fallback": True}
    else:
        vocab = [["<s>", 0.0], ["<pad>", 0.0], ["</s>", 0.0], ["<unk>", 0.0]]
        vocab += [[p["piece"], p["score"]] for p in pieces[3:]]
        vocab.append(["<mask>", 0.0])
        unk, bos, eos = 3, 0, 2
        specials = [(0, "<s>"), (1, "<pad>"), (2, "</s>"), (3, "<unk>"), (len(vocab) - 1, "<mask>")]
        pre = {"type": "Sequence", "pretokenizers": [
            {"type": "WhitespaceSplit"},
            {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": True}]}
        post = {"type": "TemplateProcessing",
                "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                           {"SpecialToken": {"id": "</s>", "type_id": 0}}],
                "pair": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                         {"SpecialToken": {"id": "</s>", "type_id": 0}}, {"SpecialToken": {"id": "</s>", "type_id": 0}},
                         {"Sequence": {"id": "B", "type_id": 0}}, {"SpecialToken": {"id": "</s>", "type_id": 0}}],
                "special_tokens": {"<s>": {"id": "<s>", "ids": [0], "tokens": ["<s>"]},
                                   "</s>": {"id": "</s>", "ids": [2], "tokens": ["</s>"]}}}
        decoder = {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": True}
        model_json = {"type": "Unigram", "unk_id": unk, "vocab": vocab, "byte_fallback": False}
    added = [{"id": i, "content": t, "single_word": False, "lstrip": t == "<mask>", "rstrip": False,
              "normalized": False, "special": True} for i, t in specials]
    tj = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": added, "normalizer": normalizer,
          "pre_tokenizer": pre, "post_processor": post, "decoder": decoder, "model": model_json}
    with open(out, "w") as f:
        json.dump(tj, f, ensure_ascii=False)


main()
