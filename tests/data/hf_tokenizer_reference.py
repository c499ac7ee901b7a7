#!/usr/bin/env python3
"""Token ids of Hugging Face's tokenizers library (the Rust implementation,
through its Python binding) for a list of texts and tokenizer.json files, for
hf_tokenizer_reference_test.cpp.

Each file is read with Tokenizer.from_file and each text encoded with
encode(text), the library's default: added tokens found in the text become
their ids, and add_special_tokens=True runs the post-processor. The test's
files have no post-processor that adds ids (ByteLevel or none), which is
also all that data/HfTokenizer accepts, so the ids must equal those of
add_special_tokens=False; the script checks that rather than assuming it.

Usage: hf_tokenizer_reference.py TEXTS_JSON ANSWER_JSON TOKENIZER_JSON...
TEXTS_JSON is an array of strings; ANSWER_JSON gets one array per file, of
one id array per text. Exit status 1, with the reason, when the two
add_special_tokens settings disagree.
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
        ids = [tokenizer.encode(text).ids for text in texts]
        for i, text in enumerate(texts):
            plain = tokenizer.encode(text, add_special_tokens=False).ids
            if plain != ids[i]:
                print(f"hf_tokenizer_reference: {path}: text {i} {text!r}: "
                      f"add_special_tokens changes the ids ({ids[i]} vs {plain})",
                      file=sys.stderr)
                return 1
        answer.append(ids)
    with open(answer_path, "w", encoding="utf-8") as f:
        json.dump(answer, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
