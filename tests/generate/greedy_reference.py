#!/usr/bin/env python3
"""Greedy decoding by its definition, in plain PyTorch, from a Hugging Face
model directory: the logits come from tests/hf/hf_reference.py (an
independent implementation of GPT-NeoX, GPT-2 and Llama written from their
published definitions, reading Hugging Face's names), and every new token
reruns the whole sequence and takes the highest logit. Prints the new ids
on one line, space-separated, as cmpi-generate --emit ids does.

usage: greedy_reference.py MODEL_DIR --ids 1,2,3 --max-new-tokens N [--eos ID]
"""
import argparse
import json
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "hf"))
import hf_reference  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("model_dir")
    parser.add_argument("--ids", required=True)
    parser.add_argument("--max-new-tokens", type=int, required=True)
    parser.add_argument("--eos", type=int, default=-1)
    args = parser.parse_args()
    torch.set_num_threads(1)
    with open(os.path.join(args.model_dir, "config.json")) as f:
        config = json.load(f)
    weights = hf_reference.Weights(
        hf_reference.read_safetensors(os.path.join(args.model_dir, "model.safetensors")))
    forward = {"gpt_neox": hf_reference.neox_logits, "gpt2": hf_reference.gpt2_logits,
               "llama": hf_reference.llama_logits}[config["model_type"]]
    sequence = [int(i) for i in args.ids.split(",")]
    new = []
    with torch.no_grad():
        for _ in range(args.max_new_tokens):
            logits = forward(torch.tensor([sequence]), weights, config)[0, -1]
            token = int(logits.argmax())
            new.append(token)
            sequence.append(token)
            if token == args.eos:
                break
    print(" ".join(str(t) for t in new))
    return 0


if __name__ == "__main__":
    sys.exit(main())
