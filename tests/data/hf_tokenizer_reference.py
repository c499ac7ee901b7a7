#!/usr/bin/env python3
"""Token ids of Hugging Face's tokenizers library (the Rust implementation,
through its Python binding) for a list of texts and tokenizer.json files, for
hf_tokenizer_reference_test.cpp and llama_tokenizer_reference_test.cpp.

Each file is read with Tokenizer.from_file and each text encoded with
encode(text), the library's default: added tokens found in the text become
their ids, and add_special_tokens=True runs the post-processor (a
TemplateProcessing's beginning-of-text token). data/HfTokenizer accepts only
post-processors that put ids in front of the text, so the ids of
add_special_tokens=False must end the ids; the script checks that rather than
assuming it.

With the ids goes the library's decode(ids, skip_special_tokens=True) of
each text whose ids hold no added token (special tokens are skipped there,
where data/HfTokenizer decodes added tokens to their content), else null.

Usage: hf_tokenizer_reference.py TEXTS_JSON ANSWER_JSON TOKENIZER_JSON...
TEXTS_JSON is an array of strings; ANSWER_JSON gets one object per file,
{"ids": [one id array per text], "decoded": [one string or null per text]}.
Exit status 1, with the reason, when the post-processor adds ids after the
text.
"""
import json
import sys

from tokenizers import Tokenizer


def main(argv):
    if len(argv) < 4:
        print(f"usage: {argv[0]} TEXTS_JSON ANSWER_JSON TOKENIZER_JSON...", file=sys.stderr)
        return 2
    texts_path, answer_path, files = argv[1], argv[2], argv[3:]
    with open(texts_path, encoding="utf-8") as f:
        texts = json.load(f)
    answer = []
    for path in files:
        tokenizer = Tokenizer.from_file(path)
        added_ids = set(tokenizer.get_added_tokens_decoder())
        ids, decoded = [], []
        for i, text in enumerate(texts):
            full = tokenizer.encode(text).ids
            plain = tokenizer.encode(text, add_special_tokens=False).ids
            if full[len(full) - len(plain):] != plain:
                print(f"hf_tokenizer_reference: {path}: text {i} {text!r}: the post-processor "
                      f"adds ids after the text ({full} vs {plain})", file=sys.stderr)
                return 1
            ids.append(full)
            plain_text = not any(t in added_ids for t in plain)
            decoded.append(tokenizer.decode(full, skip_special_tokens=True) if plain_text else None)
        answer.append({"ids": ids, "decoded": decoded})
    with open(answer_path, "w", encoding="utf-8") as f:
        json.dump(answer, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
