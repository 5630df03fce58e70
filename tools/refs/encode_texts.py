#!/usr/bin/python3
"""Inputs for encode64.py --inputs from a tokenizer's test vectors (tokenizer/testdata/*.jsonl.gz,
written by the Hugging Face tokenizers library): texts with the ids and type ids that library
gave them, so that a reference computed on them checks hfstatic from text to vector.

  python3 encode_texts.py VECTORS.jsonl.gz --embed S  > inputs.json   # single texts
  python3 encode_texts.py VECTORS.jsonl.gz --pairs S  > inputs.json   # query, document pairs

--embed S: 10 texts of 4 to S tokens (special tokens included), evenly spaced over the file, then the first text of more than S + 8 tokens cut to S as the library truncates one sequence
(its first S - 1 tokens and the closing special token; "truncate": true).
--pairs S: every pair with a non-empty query and document, as the library encoded it whole or, if longer than S, truncated to S
(longest_first; its "truncated" vectors); "truncate" says which.
"""
import argparse, gzip, json, sys

ap = argparse.ArgumentParser()
ap.add_argument("vectors")
g = ap.add_mutually_exclusive_group(required=True)
g.add_argument("--embed", type=int)
g.add_argument("--pairs", type=int)
a = ap.parse_args()
rows = [json.loads(l) for l in gzip.open(a.vectors, "rt", encoding="utf-8")]
out = []
if a.embed:
    S = a.embed
    singles = [r for r in rows if "b" not in r]
    fit = [r for r in singles if 4 <= len(r["ids_with_special"]) <= S]
    for k in range(10):
        r = fit[round(k * (len(fit) - 1) / 9)]
        out.append({"text": r["text"], "ids": r["ids_with_special"], "types": r["type_ids"]})
    long = next(r for r in singles if len(r["ids_with_special"]) > S + 8)
    ids = long["ids_with_special"][:S - 1] + long["ids_with_special"][-1:]
    out.append({"text": long["text"], "ids": ids, "types": long["type_ids"][:S], "truncate": True})
else:
    S = a.pairs
    for r in rows:
        if "b" not in r or r["text"] == "" or r["b"] == "":
            continue  # rerank refuses an empty query or document
        cut = len(r["ids"]) > S
        v = r["truncated"][str(S)] if cut else r
        out.append({"text": r["text"], "b": r["b"], "ids": v["ids"], "types": v["type_ids"], "truncate": cut})
json.dump(out, sys.stdout, ensure_ascii=False)
sys.stdout.write("\n")
