"""Writes tokenizer.json files of the BERT (WordPiece) kind from a vocabulary,
laid out like the Hub's all-MiniLM-L6-v2 / bert-base-uncased files.

    python3 tools/refs/bert_tokenizer_json.py VOCAB_JSON OUT_DIR

VOCAB_JSON is a JSON list of tokens in id order (bert-base-uncased's
30,522). Writes OUT_DIR/bert-uncased.tokenizer.json (BertNormalizer with
lowercase and accent stripping, TemplateProcessing) and
OUT_DIR/bert-cased.tokenizer.json (no lowercasing, accents kept,
BertProcessing: the older post-processor some cross-encoders ship).
"""
import json
import sys


def special(i, tok):
    return {"id": i, "content": tok, "single_word": False, "lstrip": False, "rstrip": False,
            "normalized": False, "special": True}


def main():
    vocab_path, out = sys.argv[1], sys.argv[2]
    vocab = json.load(open(vocab_path))
    ids = {t: i for i, t in enumerate(vocab)}
    added = [special(ids[t], t) for t in ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]]
    model = {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
             "max_input_chars_per_word": 100, "vocab": ids}
    cls, sep = ids["[CLS]"], ids["[SEP]"]
    template = {
        "type": "TemplateProcessing",
        "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                   {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
        "pair": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                 {"SpecialToken": {"id": "[SEP]", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}},
                 {"SpecialToken": {"id": "[SEP]", "type_id": 1}}],
        "special_tokens": {"[CLS]": {"id": "[CLS]", "ids": [cls], "tokens": ["[CLS]"]},
                           "[SEP]": {"id": "[SEP]", "ids": [sep], "tokens": ["[SEP]"]}},
    }
    for name, norm, post in [
        ("bert-uncased", {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True,
                          "strip_accents": None, "lowercase": True}, template),
        ("bert-cased", {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True,
                        "strip_accents": None, "lowercase": False},
         {"type": "BertProcessing", "sep": ["[SEP]", sep], "cls": ["[CLS]", cls]}),
    ]:
        tj = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
              "normalizer": norm, "pre_tokenizer": {"type": "BertPreTokenizer"}, "post_processor": post,
              "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True}, "model": model}
        with open(f"{out}/{name}.tokenizer.json", "w") as f:
            json.dump(tj, f, ensure_ascii=False)


main()
