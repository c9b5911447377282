#!/usr/bin/python3
"""Writes random-weight Stable Diffusion ONNX pipelines of the published architectures.

SD 1.5, SD 2.1 and SDXL pipelines (tools/sd_arch.py: CLIP text encoders, UNet2DConditionModel,
AutoencoderKL decoder) with fixed-seed random weights, in the folder layouts, tensor names, dtypes
and ranks of real exports (diffusers' legacy ONNX export or Hugging Face Optimum), opset 17.
Width and depth factors scale the same architecture: 1/1 is the full-size model (the published
parameter counts), the default small preset (width 0.1, depth 0.25) keeps every block type at a
size whose 20 steps at 512x512 run on a CPU in seconds, for the tests and `make demo`.

Weights go to external data (model.onnx_data; weights.pb for the legacy layout) for every model
whose weights pass 2 GB, as real exports do, and for the models named by --external-data.
fp16 pipelines have fp16 weights, inputs and outputs; with --fp16-compute fp16 they compute in
fp16 (a real fp16 export, for GPUs); the default, fp32, computes behind Cast nodes so that the CPU
provider, which lacks fp16 kernels for several of these ops, runs them.

--dry-run prints each model's parameter count and multiply-accumulates (Conv/MatMul/Gemm) per call
at --size and --batch without writing anything (--json for a machine-readable form).

Needs numpy and onnx (Debian's python3-onnx 1.12 or newer). Usage:
  gen_sd.py --out DIR [--variant NAME ...] [--width W --depth D] [--fp16-compute fp16|fp32]
            [--external-data MODEL ...] [--clip-merges FILE.gz]
  gen_sd.py --dry-run [--json] [--variant NAME ...] [--width W --depth D] [--size 512] [--batch 2]
Writes DIR/<variant>/ for every variant (default: all) and DIR/.complete when done.
"""

import argparse
import json
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import sd_arch  # noqa: E402
import sd_toy  # noqa: E402
from sd_graph import F16, F32, I32, I64, TWO_GB, Graph  # noqa: E402

SEQ = sd_arch.SEQ

# ------------------------------------------------------------------------------------------------
# Tokenizer files


def write_tokenizer(folder, vocab, merges, pad_token):
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "vocab.json"), "w", encoding="utf-8") as f:
        json.dump(vocab, f, ensure_ascii=False)
    with open(os.path.join(folder, "merges.txt"), "w", encoding="utf-8") as f:
        f.write("#version: 0.2\n")
        f.write("\n".join(merges))
        f.write("\n")
    special = {
        "bos_token": "<|startoftext|>",
        "eos_token": "<|endoftext|>",
        "unk_token": "<|endoftext|>",
        "pad_token": pad_token,
    }
    config = dict(special)
    config.update({
        "model_max_length": SEQ,
        "do_lower_case": True,
        "tokenizer_class": "CLIPTokenizer",
        "errors": "replace",
        "add_prefix_space": False,
    })
    write_json(os.path.join(folder, "tokenizer_config.json"), config)
    write_json(os.path.join(folder, "special_tokens_map.json"), special)


def write_json(path, obj):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=2, sort_keys=True)
        f.write("\n")


# ------------------------------------------------------------------------------------------------
# Pipelines

SCHED_SD15 = {
    "_class_name": "PNDMScheduler", "_diffusers_version": "0.6.0", "beta_end": 0.012,
    "beta_schedule": "scaled_linear", "beta_start": 0.00085, "clip_sample": False,
    "num_train_timesteps": 1000, "set_alpha_to_one": False, "skip_prk_steps": True,
    "steps_offset": 1, "trained_betas": None,
}
SCHED_SD21 = {
    "_class_name": "DDIMScheduler", "_diffusers_version": "0.8.0", "beta_end": 0.012,
    "beta_schedule": "scaled_linear", "beta_start": 0.00085, "clip_sample": False,
    "num_train_timesteps": 1000, "prediction_type": "v_prediction", "set_alpha_to_one": False,
    "skip_prk_steps": True, "steps_offset": 1, "trained_betas": None,
}
SCHED_SDXL = {
    "_class_name": "EulerDiscreteScheduler", "_diffusers_version": "0.19.0.dev0",
    "beta_end": 0.012, "beta_schedule": "scaled_linear", "beta_start": 0.00085,
    "clip_sample": False, "interpolation_type": "linear", "num_train_timesteps": 1000,
    "prediction_type": "epsilon", "sample_max_value": 1.0, "set_alpha_to_one": False,
    "skip_prk_steps": True, "steps_offset": 1, "timestep_spacing": "leading",
    "trained_betas": None, "use_karras_sigmas": False,
}

# name -> description. style: legacy | optimum. timestep: (dtype, shape).
VARIANTS = {
    # diffusers' legacy export of SD 1.5: int32 ids, float timestep [1], unet weights in weights.pb.
    "sd15-legacy": dict(style="legacy", kind="sd1", fp16=False, ids=I32, timestep=(F32, [1])),
    # Optimum <= 1.23 export of SD 1.5: int64 ids, int64 timestep [B], model.onnx_data.
    "sd15-optimum": dict(style="optimum", kind="sd1", fp16=False, ids=I64,
                         timestep=(I64, ["batch_size"])),
    # Optimum fp16 export: fp16 tensors, rank-0 fp16 timestep (Optimum >= 1.24 style).
    "sd15-optimum-fp16": dict(style="optimum", kind="sd1", fp16=True, ids=I64, timestep=(F16, [])),
    # SD 2.1: hidden 1024, pad id 0, v-prediction scheduler, rank-0 float timestep.
    "sd21-optimum": dict(style="optimum", kind="sd2", fp16=False, ids=I64, timestep=(F32, [])),
    # SDXL base: two encoders, text_embeds/time_ids, VAE scaling 0.13025.
    "sdxl-optimum": dict(style="optimum", kind="sdxl", fp16=False, ids=I64,
                         timestep=(I64, ["batch_size"])),
    # SDXL fp16 unet/encoders with the fp32 VAE that SDXL needs.
    "sdxl-optimum-fp16": dict(style="optimum", kind="sdxl", fp16=True, ids=I64,
                              timestep=(F16, [])),
    # The toy (tools/sd_toy.py): the legacy SD 1.5 layout around a few ops, for the server's
    # lifecycle tests only (they need large-lane jobs that cost a second, not minutes).
    "sd15-toy": dict(style="legacy", kind="sd1", fp16=False, ids=I32, timestep=(F32, [1]),
                     toy=True),
    # Broken on purpose: the unet expects SD 2's wider text states, the encoder gives SD 1's.
    "bad-shape-mismatch": dict(style="optimum", kind="sd1", fp16=False, ids=I64,
                               timestep=(I64, ["batch_size"]), unet_ctx="openclip-h"),
}

SMALL = (0.1, 0.25)  # (width, depth) of the pipelines the build writes for the tests and demo
EXTERNAL_LIMIT = TWO_GB - (64 << 20)  # weights beyond this cannot share a protobuf with the graph


def model_plan(spec, width, depth, batch, lat_hw):
    """[(folder, seed offset, build(g))] for one pipeline, in writing order."""
    kind = spec["kind"]
    if spec.get("toy"):
        plan = [("text_encoder", 1, lambda g: sd_toy.text_encoder(g, 768, spec["ids"], 2, False,
                                                                  False)),
                ("unet", 3, lambda g: sd_toy.unet(g, 768, spec["timestep"], False)),
                ("vae_decoder", 4, sd_toy.vae_decoder)]
        return plan, dict(ctx=768, text_embeds=None, encoders=[], unet=None, vae=None)
    clip = lambda n: sd_arch.scaled_clip(sd_arch.CLIP[n], width, depth)  # noqa: E731
    plan = []
    if kind == "sdxl":
        e1, e2 = clip("clip-l"), clip("openclip-bigg")
        plan.append(("text_encoder", 1, lambda g: sd_arch.clip_text(g, e1, spec["ids"], batch,
                                                                    hidden_states=True)))
        plan.append(("text_encoder_2", 2, lambda g: sd_arch.clip_text(g, e2, spec["ids"], batch,
                                                                      hidden_states=True)))
        ctx, text_embeds, arch = e1["hidden"] + e2["hidden"], e2["proj"], "sdxl"
        encoders = [e1, e2]
    else:
        enc = clip("openclip-h" if kind == "sd2" else "clip-l")
        plan.append(("text_encoder", 1, lambda g: sd_arch.clip_text(g, enc, spec["ids"], batch)))
        ctx = clip(spec["unet_ctx"])["hidden"] if "unet_ctx" in spec else enc["hidden"]
        text_embeds, arch = None, "sd21" if kind == "sd2" else "sd15"
        encoders = [enc]
    ucfg = sd_arch.scaled_unet(sd_arch.UNET[arch], width, depth)
    plan.append(("unet", 3, lambda g: sd_arch.unet(g, ucfg, spec["timestep"], ctx, batch, lat_hw,
                                                   text_embeds)))
    vcfg = sd_arch.scaled_vae(width, depth)
    plan.append(("vae_decoder", 4, lambda g: sd_arch.vae_decoder(g, vcfg, 1, lat_hw)))
    info = dict(ctx=ctx, text_embeds=text_embeds, encoders=encoders, unet=ucfg, vae=vcfg)
    return plan, info


def dtypes(spec, folder, fp16_compute):
    """(store, compute) of one model: SDXL keeps its VAE in fp32, as its fp16 exports do."""
    if not spec["fp16"] or (spec["kind"] == "sdxl" and folder == "vae_decoder"):
        return F32, F32
    return F16, (F16 if fp16_compute == "fp16" else F32)


def build_model(spec, folder, seed, build, fp16_compute, out_dir=None, external=None):
    store, compute = dtypes(spec, folder, fp16_compute)
    g = Graph(folder, seed, store, compute, dry=out_dir is None)
    if out_dir is not None and external:
        os.makedirs(out_dir, exist_ok=True)
        g.stream_weights_to(os.path.join(out_dir, external), external)
    build(g)
    if out_dir is not None:
        os.makedirs(out_dir, exist_ok=True)
        g.save(out_dir)
    return g


def write_pipeline(root, name, spec, vocab, merges, args):
    out = os.path.join(root, name)
    if os.path.exists(out):
        shutil.rmtree(out)
    os.makedirs(out)
    legacy = spec["style"] == "legacy"
    seed = 1000 + sorted(VARIANTS).index(name) * 10
    plan, info = model_plan(spec, args.width, args.depth, 1, (64, 64))
    for folder, k, build in plan:
        forced = folder in (args.external_data or [])
        if not forced:
            probe = build_model(spec, folder, seed + k, build, args.fp16_compute)
            forced = probe.weight_bytes > EXTERNAL_LIMIT
        ext = ("weights.pb" if legacy else "model.onnx_data") if forced else None
        build_model(spec, folder, seed + k, build, args.fp16_compute, os.path.join(out, folder),
                    ext)
    write_configs(out, spec, info, vocab, merges)


def text_config(cfg, projection):
    """transformers' CLIPTextConfig fields of one encoder (the loader reads hidden_act)."""
    c = {
        "architectures": ["CLIPTextModelWithProjection" if projection else "CLIPTextModel"],
        "hidden_size": cfg["hidden"], "intermediate_size": cfg["mlp"],
        "num_attention_heads": cfg["heads"], "num_hidden_layers": cfg["layers"],
        "hidden_act": cfg["act"], "max_position_embeddings": SEQ, "vocab_size": sd_arch.VOCAB,
        "model_type": "clip_text_model",
    }
    if projection:
        c["projection_dim"] = cfg["proj"]
    return c


def write_configs(out, spec, info, vocab, merges):
    kind, legacy = spec["kind"], spec["style"] == "legacy"
    ctx, text_embeds, ucfg = info["ctx"], info["text_embeds"], info["unet"]
    scaling = 0.13025 if kind == "sdxl" else 0.18215
    sched = {"sd1": SCHED_SD15, "sd2": SCHED_SD21, "sdxl": SCHED_SDXL}[kind]
    write_json(os.path.join(out, "scheduler", "scheduler_config.json"), sched)
    pad1 = "!" if kind == "sd2" else "<|endoftext|>"
    write_tokenizer(os.path.join(out, "tokenizer"), vocab, merges, pad1)
    if kind == "sdxl":
        write_tokenizer(os.path.join(out, "tokenizer_2"), vocab, merges, "!")

    vae = {
        "_class_name": "AutoencoderKL", "latent_channels": 4, "out_channels": 3,
        "sample_size": 1024 if kind == "sdxl" else (768 if kind == "sd2" else 512),
        "scaling_factor": scaling, "force_upcast": kind == "sdxl",
    }
    if info["vae"]:
        vae["block_out_channels"] = info["vae"]["blocks"]
        vae["layers_per_block"] = info["vae"]["layers"]
    write_json(os.path.join(out, "vae_decoder", "config.json"), vae)
    if not legacy:
        write_json(os.path.join(out, "unet", "config.json"), {
            "_class_name": "UNet2DConditionModel", "in_channels": 4, "out_channels": 4,
            "cross_attention_dim": ctx, "sample_size": 128 if kind == "sdxl" else 64,
            "block_out_channels": ucfg["blocks"], "layers_per_block": ucfg["layers"],
            "attention_head_dim": ucfg["heads"], "transformer_layers_per_block": ucfg["depth"],
            "use_linear_projection": ucfg["linear_proj"], "norm_num_groups": 32,
            "addition_embed_type": "text_time" if kind == "sdxl" else None,
            "addition_time_embed_dim": ucfg["add_time_dim"],
            "projection_class_embeddings_input_dim": (
                text_embeds + 6 * ucfg["add_time_dim"] if kind == "sdxl" else None),
        })
        write_json(os.path.join(out, "text_encoder", "config.json"),
                   text_config(info["encoders"][0], False))
        if kind == "sdxl":
            write_json(os.path.join(out, "text_encoder_2", "config.json"),
                       text_config(info["encoders"][1], True))

    if legacy:
        index = {
            "_class_name": "OnnxStableDiffusionPipeline", "_diffusers_version": "0.6.0",
            "feature_extractor": ["transformers", "CLIPFeatureExtractor"],
            "requires_safety_checker": False, "safety_checker": [None, None],
            "scheduler": ["diffusers", "PNDMScheduler"],
            "text_encoder": ["onnxruntime", "OnnxRuntimeModel"],
            "tokenizer": ["transformers", "CLIPTokenizer"],
            "unet": ["onnxruntime", "OnnxRuntimeModel"],
            "vae_decoder": ["onnxruntime", "OnnxRuntimeModel"],
            "vae_encoder": [None, None],
        }
    else:
        index = {
            "_class_name": ("StableDiffusionXLPipeline" if kind == "sdxl" else
                            "StableDiffusionPipeline"),
            "_diffusers_version": "0.21.4",
            "scheduler": ["diffusers", sched["_class_name"]],
            "text_encoder": ["transformers", "CLIPTextModel"],
            "tokenizer": ["transformers", "CLIPTokenizer"],
            "unet": ["diffusers", "UNet2DConditionModel"],
            "vae": ["diffusers", "AutoencoderKL"],
        }
        if kind == "sdxl":
            index["text_encoder_2"] = ["transformers", "CLIPTextModelWithProjection"]
            index["tokenizer_2"] = ["transformers", "CLIPTokenizer"]
            index["force_zeros_for_empty_prompt"] = True
        else:
            index["requires_safety_checker"] = False
    write_json(os.path.join(out, "model_index.json"), index)




def dry_run(args):
    """{variant: {model: {params, macs, batch, weight_bytes, external_data}}} at args.size."""
    lat = (args.size // 8, args.size // 8)
    result = {"width": args.width, "depth": args.depth, "size": args.size, "pipelines": {}}
    for name in args.variant or sorted(VARIANTS):
        spec = VARIANTS[name]
        plan, _ = model_plan(spec, args.width, args.depth, args.batch, lat)
        models = {}
        for folder, k, build in plan:
            g = build_model(spec, folder, k, build, args.fp16_compute)
            models[folder] = {
                "params": g.params, "macs": g.macs,
                "batch": 1 if folder == "vae_decoder" else args.batch,
                "weight_bytes": g.weight_bytes,
                "external_data": g.weight_bytes > EXTERNAL_LIMIT or
                                 folder in (args.external_data or []),
            }
        result["pipelines"][name] = models
    return result


def print_dry_run(result):
    print("width %g, depth %g, %dx%d (latents %d), MACs per call (Conv/MatMul/Gemm)" % (
        result["width"], result["depth"], result["size"], result["size"], result["size"] // 8))
    for name, models in result["pipelines"].items():
        print(name)
        for folder, m in models.items():
            print("  %-15s %10.2f M params %10.3f GMAC (batch %d) %8.1f MB%s" % (
                folder, m["params"] / 1e6, m["macs"] / 1e9, m["batch"], m["weight_bytes"] / 1e6,
                ", external data" if m["external_data"] else ""))


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    default_merges = os.path.join(here, "..", "data", "clip", "bpe_simple_vocab_16e6.txt.gz")
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", help="directory to write the pipelines into")
    parser.add_argument("--clip-merges", default=default_merges,
                        help="CLIP bpe_simple_vocab_16e6.txt.gz")
    parser.add_argument("--variant", action="append", choices=sorted(VARIANTS),
                        help="write only this variant (repeatable; default all)")
    parser.add_argument("--width", type=float, default=SMALL[0],
                        help="channel factor (1 = published size; default %g)" % SMALL[0])
    parser.add_argument("--depth", type=float, default=SMALL[1],
                        help="layer-count factor (1 = published size; default %g)" % SMALL[1])
    parser.add_argument("--fp16-compute", choices=["fp32", "fp16"], default="fp32",
                        help="what fp16 pipelines compute in (fp16: a real fp16 export, for GPUs)")
    parser.add_argument("--external-data", action="append",
                        choices=["text_encoder", "text_encoder_2", "unet", "vae_decoder"],
                        help="also write this model's weights as external data (repeatable)")
    parser.add_argument("--dry-run", action="store_true",
                        help="print parameters and MACs per call; write nothing")
    parser.add_argument("--json", action="store_true", help="--dry-run output as JSON")
    parser.add_argument("--size", type=int, default=512, help="--dry-run image side (pixels)")
    parser.add_argument("--batch", type=int, default=2,
                        help="--dry-run UNet/text-encoder batch (2: one guided step)")
    args = parser.parse_args()
    if not (0 < args.width <= 1 and 0 < args.depth <= 1):
        sys.exit("gen_sd.py: --width and --depth must be in (0, 1]; got %g and %g" %
                 (args.width, args.depth))
    if args.size < 64 or args.size % 64 or args.batch < 1:
        sys.exit("gen_sd.py: --size must be a multiple of 64 and --batch >= 1")
    if args.dry_run:
        result = dry_run(args)
        if args.json:
            json.dump(result, sys.stdout, indent=1, sort_keys=True)
            print()
        else:
            print_dry_run(result)
        return
    if not args.out:
        sys.exit("gen_sd.py: --out DIR is required (or --dry-run)")
    if not os.path.isfile(args.clip_merges):
        sys.exit("gen_sd.py: CLIP merges file not found: %s" % args.clip_merges)
    from clip_vocab import load_clip_vocab
    vocab, merges = load_clip_vocab(args.clip_merges)
    os.makedirs(args.out, exist_ok=True)
    stamp = os.path.join(args.out, ".complete")
    if os.path.exists(stamp):
        os.remove(stamp)
    for name in args.variant or sorted(VARIANTS):
        write_pipeline(args.out, name, VARIANTS[name], vocab, merges, args)
    with open(stamp, "w") as f:
        f.write("\n".join(args.variant or sorted(VARIANTS)) + "\n")


if __name__ == "__main__":
    main()
