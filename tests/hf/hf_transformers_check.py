#!/usr/bin/env python3
"""cmpi-train's Hugging Face files against the `transformers` package itself
(GPTNeoXForCausalLM, GPT2LMHeadModel), offline: models are built from configs
here, never fetched.

  save ARCH DIR --seed S [--shards DIR2] [--with-buffers] [shape options]
      A randomly initialised transformers model (torch.manual_seed(S)) saved
      with save_pretrained: DIR holds one model.safetensors; DIR2, when given,
      the same weights in several shards (max_shard_size small enough for at
      least three) with model.safetensors.index.json. --with-buffers adds, to
      every file and index, the non-parameter buffers published checkpoints
      carry and transformers 5 no longer writes: causal masks as BOOL and U8
      (GPT-NeoX attention.bias, GPT-2 attn.bias), masked_bias scalars and
      GPT-NeoX's rotary_emb.inv_freq; and an I64 position_ids (all three
      architectures). cmpi-train must skip them.

  retype DIR TENSOR DTYPE
      Rewrites the header of the file of DIR holding TENSOR so that it claims
      DTYPE (of the same element size): a weight in a dtype no loader widens.

  compare DIR DUMP --expect-type gpt_neox|gpt2 [--metrics METRICS.jsonl]
      Loads DIR with from_pretrained (no weight missing or of another shape;
      only buffers unexpected), checks that transformers read the rotary
      settings config.json states, runs the batch cmpi-train dumped
      (--dump-tensors DUMP: forward_tokens.i64) and compares its logits with
      cmpi-train's (forward_logits.f32) and its loss with forward_loss.txt
      and, given METRICS, with the loss of cmpi-train's first step.

Tolerances (float32 on both sides): the two run the same arithmetic in other
orders (transformers splits the fused qkv and runs SDPA, its rotary angles
are float32 where cmpi-train rounds double ones), so they differ by
accumulated rounding only, a few float32 ulps of the values involved. The
logits must agree within --logits-tolerance (default 1e-5) times
max(1, largest |logit|), and the losses within a relative --loss-tolerance
(default 1e-5); the measured differences are printed and are one to two
orders of magnitude below. A tensor in the wrong layout (transposed, q and k
swapped, heads regrouped) changes logits by about their own size.

Exit status: 0 when everything agrees, 1 otherwise, 2 on malformed input.
"""
import argparse
import json
import math
import os
import struct
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import torch  # noqa: E402

# The dump's reader is the plain reference's (this script's folder is on sys.path).
from hf_reference import read_forward_dump  # noqa: E402

BUFFER_SUFFIXES = (".attn.bias", ".attn.masked_bias", ".attention.bias", ".attention.masked_bias",
                   ".rotary_emb.inv_freq", ".position_ids")


def model_classes(arch):
    import transformers
    if arch in ("neox", "gpt_neox"):
        return transformers.GPTNeoXConfig, transformers.GPTNeoXForCausalLM
    if arch == "llama":
        return transformers.LlamaConfig, transformers.LlamaForCausalLM
    return transformers.GPT2Config, transformers.GPT2LMHeadModel


def build_config(args):
    config_class, _ = model_classes(args.arch)
    if args.arch == "neox":
        # Pythia's architecture: rotary on part of each head, parallel
        # residual, untied head, exact GeLU. transformers 5 stores the rotary
        # settings in rope_parameters.
        return config_class(
            vocab_size=args.vocab, hidden_size=args.hidden, num_hidden_layers=args.layers,
            num_attention_heads=args.heads, intermediate_size=args.mlp_ratio * args.hidden,
            hidden_act="gelu", max_position_embeddings=args.positions,
            rope_parameters={"rope_type": "default", "rope_theta": args.rotary_base,
                             "partial_rotary_factor": args.rotary_pct},
            use_parallel_residual=True, tie_word_embeddings=False, layer_norm_eps=1e-5,
            initializer_range=args.init_std, attention_dropout=0.0, hidden_dropout=0.0,
            bos_token_id=0, eos_token_id=0)
    if args.arch == "llama":
        # Llama 3's architecture: grouped-query attention, RMSNorm, SwiGLU,
        # no biases, rotary over the whole head with Llama 3's frequency
        # scaling, untied head.
        return config_class(
            vocab_size=args.vocab, hidden_size=args.hidden, num_hidden_layers=args.layers,
            num_attention_heads=args.heads, num_key_value_heads=args.kv_heads,
            intermediate_size=args.intermediate, hidden_act="silu",
            max_position_embeddings=args.positions, rms_norm_eps=1e-5,
            rope_parameters={"rope_type": "llama3", "rope_theta": args.rotary_base, "factor": 8.0,
                             "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                             "original_max_position_embeddings": 16},
            attention_bias=False, mlp_bias=False, tie_word_embeddings=False,
            initializer_range=args.init_std, attention_dropout=0.0, bos_token_id=0, eos_token_id=0)
    # GPT-2: learned positions (n_positions rows, more than cmpi-train's
    # seq_len uses), tied head, the tanh GeLU.
    return config_class(
        vocab_size=args.vocab, n_embd=args.hidden, n_layer=args.layers, n_head=args.heads,
        n_inner=args.mlp_ratio * args.hidden, n_positions=args.positions,
        activation_function="gelu_new", layer_norm_epsilon=1e-5, initializer_range=args.init_std,
        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, bos_token_id=0, eos_token_id=0)


def buffers_for(arch, config):
    """{name: tensor} of the buffers older checkpoints store, masks as BOOL
    (layer 0) and U8 (the others), as Pythia's and GPT-2's files did; and,
    for every architecture, an I64 `position_ids` as other models' files
    carry: a tensor no loader reads, in a dtype none could."""
    root = {"neox": "gpt_neox", "gpt2": "transformer", "llama": "model"}[arch]
    out = {root + ".position_ids": torch.arange(16, dtype=torch.int64).view(1, 16)}
    if arch == "llama":
        return out  # transformers' Llama stores no buffers
    if arch == "neox":
        rows, layers = config.max_position_embeddings, config.num_hidden_layers
        head_dim = config.hidden_size // config.num_attention_heads
        dims = int(head_dim * config.rope_parameters["partial_rotary_factor"])
        prefix = "gpt_neox.layers.{}.attention."
    else:
        rows, layers = config.n_positions, config.n_layer
        prefix = "transformer.h.{}.attn."
    for i in range(layers):
        mask = torch.tril(torch.ones(rows, rows, dtype=torch.bool)).view(1, 1, rows, rows)
        out[prefix.format(i) + "bias"] = mask if i == 0 else mask.to(torch.uint8)
        out[prefix.format(i) + "masked_bias"] = torch.tensor(-1e9 if arch == "neox" else -1e4)
        if arch == "neox":
            base = config.rope_parameters["rope_theta"]
            inv_freq = 1.0 / base ** (torch.arange(0, dims, 2).float() / dims)
            out[prefix.format(i) + "rotary_emb.inv_freq"] = inv_freq.to(torch.float16 if i else torch.float32)
    return out


def add_buffers(directory, buffers):
    """Adds `buffers` to the files of a saved directory: each into the file
    holding its layer's first weight, and into the index's weight_map."""
    from safetensors.torch import load_file, save_file
    index_path = os.path.join(directory, "model.safetensors.index.json")
    index = json.load(open(index_path)) if os.path.exists(index_path) else None
    by_file = {}
    for name, tensor in buffers.items():
        if index is None:
            file = "model.safetensors"
        else:
            layer = name.rsplit(".", 2)[0] if name.endswith("rotary_emb.inv_freq") else name.rsplit(".", 1)[0]
            layer = layer.rsplit(".", 1)[0] + "."  # gpt_neox.layers.<i>. / transformer.h.<i>.
            file = next(f for n, f in sorted(index["weight_map"].items()) if n.startswith(layer))
            index["weight_map"][name] = file
        by_file.setdefault(file, {})[name] = tensor
    for file, extra in by_file.items():
        path = os.path.join(directory, file)
        tensors = load_file(path)
        tensors.update(extra)
        save_file(tensors, path, metadata={"format": "pt"})
    if index is not None:
        json.dump(index, open(index_path, "w"), indent=2)


def save(args):
    _, model_class = model_classes(args.arch)
    torch.manual_seed(args.seed)
    config = build_config(args)
    model = model_class(config).eval()
    model.save_pretrained(args.dir)  # safetensors, one file at this size
    files = [f for f in os.listdir(args.dir) if f.endswith(".safetensors")]
    if files != ["model.safetensors"]:
        sys.exit(f"{args.dir}: expected one model.safetensors, save_pretrained wrote {files}")
    if args.shards:
        total = sum(p.numel() * p.element_size() for p in model.state_dict().values())
        model.save_pretrained(args.shards, max_shard_size=max(total // 4, 1))
        shards = [f for f in os.listdir(args.shards) if f.endswith(".safetensors")]
        if len(shards) < 3 or not os.path.exists(os.path.join(args.shards, "model.safetensors.index.json")):
            sys.exit(f"{args.shards}: expected at least 3 shards and an index, got {sorted(shards)}")
    dtypes = ""
    if args.with_buffers:
        buffers = buffers_for(args.arch, config)
        for directory in [args.dir] + ([args.shards] if args.shards else []):
            add_buffers(directory, buffers)
        dtypes = ", ".join(sorted({str(t.dtype).replace("torch.", "") for t in buffers.values()}))
    parameters = sum(p.numel() for p in model.parameters())
    print(f"saved {model_class.__name__} ({parameters} parameters, seed {args.seed}) to {args.dir}" +
          (f" and in {len(shards)} shards to {args.shards}" if args.shards else "") +
          (f" with {len(buffers)} buffers ({dtypes})" if args.with_buffers else ""))
    return 0


def retype(args):
    index_path = os.path.join(args.dir, "model.safetensors.index.json")
    file = (json.load(open(index_path))["weight_map"][args.tensor] if os.path.exists(index_path)
            else "model.safetensors")
    path = os.path.join(args.dir, file)
    data = open(path, "rb").read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    header[args.tensor]["dtype"] = args.dtype
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    # The header may change length: the data follow it unchanged.
    open(path, "wb").write(struct.pack("<Q", len(text)) + text + data[8 + n:])
    print(f"{path}: {args.tensor} now claims {args.dtype}")
    return 0


def first_step_loss(path):
    for line in open(path):
        record = json.loads(line)
        if record.get("step") == 1 and "loss" in record:
            return float(record["loss"])
    sys.exit(f"{path}: no loss of step 1")


def check_rotary_read(model, config_json):
    """transformers must have read the rotary settings config.json states,
    whichever spelling it uses (equal defaults would hide a misread)."""
    rope = config_json.get("rope_parameters") or {}
    want_pct = rope.get("partial_rotary_factor", config_json.get("rotary_pct"))
    want_base = rope.get("rope_theta", config_json.get("rotary_emb_base"))
    got = model.config.rope_parameters
    if want_pct is None or want_base is None:
        sys.exit("config.json states no rotary_pct / rotary_emb_base (or rope_parameters)")
    if got["partial_rotary_factor"] != want_pct or got["rope_theta"] != want_base:
        print(f"FAIL: transformers read rope_parameters {got}; config.json says "
              f"partial_rotary_factor {want_pct}, rope_theta {want_base}")
        return False
    print(f"transformers reads partial_rotary_factor {want_pct}, rope_theta {want_base}")
    return True


def check_llama_rope_read(model, config_json):
    """transformers must read rope_theta and the llama3 scaling config.json states."""
    rope = config_json.get("rope_parameters") or {}
    want_theta = rope.get("rope_theta", config_json.get("rope_theta"))
    want_scaling = config_json.get("rope_scaling") or (rope if rope.get("rope_type") == "llama3" else None)
    if want_theta is None:
        sys.exit("config.json states no rope_theta (or rope_parameters.rope_theta)")
    got = model.config.rope_parameters
    if got.get("rope_theta") != want_theta:
        print(f"FAIL: transformers read rope_theta {got.get('rope_theta')}; config.json says {want_theta}")
        return False
    if want_scaling and (got.get("rope_type") != want_scaling["rope_type"] or got.get("factor") != want_scaling["factor"]):
        print(f"FAIL: transformers read rope_parameters {got}; config.json says rope_scaling {want_scaling}")
        return False
    print(f"transformers reads rope_parameters {got}")
    return True


def compare(args):
    _, model_class = model_classes(args.expect_type)
    with open(os.path.join(args.dir, "config.json")) as f:
        config_json = json.load(f)
    if config_json.get("model_type") != args.expect_type:
        sys.exit(f"config.json: model_type {config_json.get('model_type')}, expected {args.expect_type}")
    model, info = model_class.from_pretrained(args.dir, dtype=torch.float32, output_loading_info=True)
    model.eval()
    unexpected = [n for n in info["unexpected_keys"] if not n.endswith(BUFFER_SUFFIXES)]
    problems = {"missing": info["missing_keys"], "of another shape": info["mismatched_keys"],
                "unexpected (not buffers)": unexpected}
    for what, names in problems.items():
        if names:
            print(f"FAIL: from_pretrained({args.dir}): tensors {what}: {sorted(names)}")
            return 1
    ok = True
    if args.expect_type == "gpt_neox":
        ok = check_rotary_read(model, config_json)
    elif args.expect_type == "llama":
        ok = check_llama_rope_read(model, config_json)

    vocab = model.config.vocab_size
    inputs, targets, expected, dumped_loss = read_forward_dump(args.dump, vocab)

    with torch.no_grad():
        logits = model(input_ids=inputs).logits.float()
    loss = torch.nn.functional.cross_entropy(logits.reshape(-1, vocab), targets.reshape(-1)).item()
    largest = expected.abs().max().item()
    max_abs = (logits - expected).abs().max().item()
    logits_bound = args.logits_tolerance * max(1.0, largest)
    losses = {"forward_loss.txt": dumped_loss}
    if args.metrics:
        losses["first step"] = first_step_loss(args.metrics)
    print(f"{model_class.__name__}.from_pretrained({args.dir}) "
          f"[{model.config._attn_implementation} attention]: logits {list(expected.shape)} "
          f"max |diff| {max_abs:.3e} (largest |logit| {largest:.3f}, bound {logits_bound:.1e}); "
          f"loss transformers {loss:.9f}")
    if not max_abs <= logits_bound:
        print(f"FAIL: logits differ by {max_abs:.3e} > {logits_bound:.1e}")
        ok = False
    for what, value in losses.items():
        rel = abs(value - loss) / abs(loss)
        print(f"  cmpi-train {what} loss {value:.9f}: rel diff {rel:.3e} (bound {args.loss_tolerance:.0e})")
        if not (math.isfinite(value) and rel <= args.loss_tolerance):
            print(f"FAIL: cmpi-train {what} loss {value} vs transformers {loss}")
            ok = False
    return 0 if ok else 1


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    s = sub.add_parser("save")
    s.add_argument("arch", choices=["neox", "gpt2", "llama"])
    s.add_argument("dir")
    s.add_argument("--shards", help="also save the weights here in several shards")
    s.add_argument("--with-buffers", action="store_true")
    s.add_argument("--seed", type=int, required=True)
    s.add_argument("--vocab", type=int, default=256)
    s.add_argument("--hidden", type=int, default=64)
    s.add_argument("--heads", type=int, default=4)
    s.add_argument("--layers", type=int, default=2)
    s.add_argument("--mlp-ratio", type=int, default=4)
    s.add_argument("--kv-heads", type=int, default=2, help="llama: num_key_value_heads")
    s.add_argument("--intermediate", type=int, default=160, help="llama: intermediate_size")
    s.add_argument("--positions", type=int, default=64, help="max_position_embeddings / n_positions")
    s.add_argument("--rotary-pct", type=float, default=0.25)
    s.add_argument("--rotary-base", type=float, default=10000.0)
    s.add_argument("--init-std", type=float, default=0.02, help="initializer_range")
    r = sub.add_parser("retype")
    r.add_argument("dir")
    r.add_argument("tensor")
    r.add_argument("dtype")
    c = sub.add_parser("compare")
    c.add_argument("dir")
    c.add_argument("dump")
    c.add_argument("--expect-type", choices=["gpt_neox", "gpt2", "llama"], required=True)
    c.add_argument("--metrics", help="cmpi-train's metrics.jsonl: compare its step-1 loss too")
    c.add_argument("--logits-tolerance", type=float, default=1e-5,
                   help="max |difference| over max(1, largest |logit|)")
    c.add_argument("--loss-tolerance", type=float, default=1e-5, help="relative")
    args = parser.parse_args()
    torch.set_num_threads(1)
    return {"save": save, "retype": retype, "compare": compare}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
