#!/usr/bin/env python3
"""Builds the Llama-family tokenizer.json files of
llama_tokenizer_reference_test.cpp with Hugging Face's tokenizers library,
trained on the texts it is given (nothing is downloaded):

  llama3_style.json      byte-level BPE as Llama 3's file has it: a Split by
                         Llama 3's pattern then ByteLevel(use_regex=False),
                         ignore_merges, special tokens after the vocabulary
                         (<|begin_of_text|>, <|end_of_text|>, <|eot_id|>, ...),
                         a TemplateProcessing that puts <|begin_of_text|>
                         first, ByteLevel decoder
  sentencepiece_llama2.json  SentencePiece-style BPE as Llama 2's and
                         Mistral's files have it: normalizer
                         [Prepend("▁"), Replace(" ", "▁")], no pre-tokenizer,
                         byte_fallback with <0x00>..<0xFF> after <unk> <s> </s>,
                         fuse_unk, <s> first (TemplateProcessing), decoder
                         [Replace("▁", " "), ByteFallback, Fuse, Strip]
  sentencepiece_metaspace.json  the same model with a Metaspace
                         pre-tokenizer (prepend_scheme "first", split) instead
                         of the normalizer, as newer conversions write it
  sentencepiece_unk.json the library's own SentencePieceBPETokenizer: NFKC,
                         Metaspace (prepend_scheme "always"), no byte
                         fallback (characters outside the vocabulary are
                         <unk>, fused), Metaspace decoder, </s> added

The SentencePiece models keep a limited alphabet, so that characters of the
texts fall outside their vocabulary. TRAINING_EXTRAS joins the training
texts.

Usage: hf_tokenizer_train.py TEXTS_JSON ANSWER_JSON OUT_DIR
TEXTS_JSON is the training corpus, an array of strings; ANSWER_JSON gets
the array of the paths written.
"""
import json
import os
import sys

from tokenizers import Regex, Tokenizer, decoders, models, normalizers
from tokenizers import pre_tokenizers, processors, trainers

LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
                  r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
LLAMA3_SPECIAL = ["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>",
                  "<|end_header_id|>", "<|eot_id|>", "<|reserved_special_token_0|>"]
SPACE = "\u2581"
# Added to the training texts so that merges reach across the places where
# the pre-tokenizers' alternatives differ (a contraction before letters, long
# s, upper case, digit groups, whitespace before newlines): a wrong split
# there changes the ids, where without such merges it would not show.
TRAINING_EXTRAS = [
    "The Congre\u017Fs 'Self 'SELF 'SELVES 'Sell IT'SELF 'LLama 'LLAMA 'REd 'VEry 'Dog "
    "'Mom 'Tea '\u017Fe '\u017Ft '\u017Ftate \u017Ftate \u017Fe",
    "1234567890 2024 12345 99999 0000 31415926 \u0661\u0662\u0663\u0664",
    "line  \n  next \t\r\n more \r\r text  \n\n\n  end",
] * 20


def llama3_style(texts):
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(LLAMA3_PATTERN), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=False),
    ])
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=1500, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tokenizer.train_from_iterator(texts, trainer)
    # As in Llama 3, the special tokens come after the vocabulary.
    tokenizer.add_special_tokens(LLAMA3_SPECIAL)
    bos = tokenizer.token_to_id("<|begin_of_text|>")
    tokenizer.post_processor = processors.Sequence([
        processors.ByteLevel(trim_offsets=False),
        processors.TemplateProcessing(
            single="<|begin_of_text|> $A",
            pair="<|begin_of_text|> $A <|begin_of_text|> $B",
            special_tokens=[("<|begin_of_text|>", bos)]),
    ])
    spec = json.loads(tokenizer.to_str())
    spec["model"]["ignore_merges"] = True
    return spec


def sentencepiece_model(texts, split):
    """A byte-fallback BPE trained on ▁-spelled words; with split False the
    merges may cross words, as they do when nothing pre-tokenizes."""
    tokenizer = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True, fuse_unk=True))
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace(replacement=SPACE,
                                                       prepend_scheme="first", split=split)
    trainer = trainers.BpeTrainer(vocab_size=700, show_progress=False, limit_alphabet=150,
                                  special_tokens=["<unk>", "<s>", "</s>"])
    tokenizer.train_from_iterator(texts, trainer)
    spec = json.loads(tokenizer.to_str())
    # Llama 2's layout: <unk> <s> </s>, the 256 byte tokens, then the rest.
    by_id = sorted(spec["model"]["vocab"].items(), key=lambda item: item[1])
    vocab = {}
    for token, _ in by_id[:3]:
        vocab[token] = len(vocab)
    for byte in range(256):
        vocab.setdefault(f"<0x{byte:02X}>", len(vocab))
    for token, _ in by_id[3:]:
        vocab.setdefault(token, len(vocab))
    spec["model"]["vocab"] = vocab
    for added in spec["added_tokens"]:
        added["id"] = vocab[added["content"]]
    return spec


def with_llama2_pipeline(spec, metaspace):
    tokenizer = Tokenizer.from_str(json.dumps(spec))
    if metaspace:
        tokenizer.normalizer = None
        tokenizer.pre_tokenizer = pre_tokenizers.Metaspace(replacement=SPACE,
                                                           prepend_scheme="first", split=True)
    else:
        tokenizer.normalizer = normalizers.Sequence([normalizers.Prepend(SPACE),
                                                     normalizers.Replace(" ", SPACE)])
        tokenizer.pre_tokenizer = None
    tokenizer.post_processor = processors.TemplateProcessing(
        single="<s> $A", pair="<s> $A <s> $B", special_tokens=[("<s>", 1)])
    tokenizer.decoder = decoders.Sequence([decoders.Replace(SPACE, " "), decoders.ByteFallback(),
                                           decoders.Fuse(), decoders.Strip(" ", 1, 0)])
    return json.loads(tokenizer.to_str())


def sentencepiece_unk(texts):
    from tokenizers import SentencePieceBPETokenizer
    tokenizer = SentencePieceBPETokenizer(unk_token="<unk>")
    tokenizer.train_from_iterator(texts, vocab_size=500, limit_alphabet=120,
                                  special_tokens=["<unk>"], show_progress=False)
    tokenizer.add_special_tokens(["</s>"])
    spec = json.loads(tokenizer.to_str())
    spec["model"]["fuse_unk"] = True
    return spec


def main(argv):
    if len(argv) != 4:
        print(f"usage: {argv[0]} TEXTS_JSON ANSWER_JSON OUT_DIR", file=sys.stderr)
        return 2
    with open(argv[1], encoding="utf-8") as f:
        texts = json.load(f) + TRAINING_EXTRAS
    out_dir = argv[3]
    os.makedirs(out_dir, exist_ok=True)
    files = {
        "llama3_style.json": llama3_style(texts),
        "sentencepiece_llama2.json": with_llama2_pipeline(sentencepiece_model(texts, False),
                                                          metaspace=False),
        "sentencepiece_metaspace.json": with_llama2_pipeline(sentencepiece_model(texts, True),
                                                             metaspace=True),
        "sentencepiece_unk.json": sentencepiece_unk(texts),
    }
    paths = []
    for name, spec in files.items():
        path = os.path.join(out_dir, name)
        # Loading it back checks that the library accepts what was written.
        Tokenizer.from_str(json.dumps(spec))
        with open(path, "w", encoding="utf-8") as f:
            json.dump(spec, f, ensure_ascii=False, indent=1)
        paths.append(path)
    with open(argv[2], "w", encoding="utf-8") as f:
        json.dump(paths, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
