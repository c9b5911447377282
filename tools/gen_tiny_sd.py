#!/usr/bin/python3
"""Writes tiny random-weight Stable Diffusion ONNX pipelines for tests and `make demo`.

Each pipeline has exactly the folder layout and the tensor names, dtypes and ranks of a real
export (diffusers' legacy ONNX export or Hugging Face Optimum), but every model is a handful of
small ops, so 20 steps at 512x512 (64x64 latents) run in about a second on a CPU:

  text_encoder: Gather over (ids mod 256) + position table, N tanh layers
                -> last_hidden_state, pooler_output (+ hidden_states.K, text_embeds for SDXL)
  unet:         two 3x3 convs on the latents plus a timestep term and a pooled-text term
                (+ text_embeds / time_ids terms for SDXL) -> out_sample
  vae_decoder:  1x1 conv to 192 channels + DepthToSpace(8) + tanh -> sample [B,3,8h,8w]

Weights are random but fixed (numpy RandomState per model), so outputs are reproducible.
fp16 variants have fp16 inputs, outputs and initializers; compute happens in fp32 behind Cast
nodes because ONNX Runtime's CPU provider lacks fp16 kernels for some ops.

Needs Debian's /usr/bin/python3 with python3-onnx (1.12) and numpy. Usage:
  gen_tiny_sd.py --out DIR [--clip-merges FILE.gz] [--variant NAME ...]
Writes DIR/<variant>/ for every variant (default: all) and DIR/.complete when done.
"""

import argparse
import json
import os
import shutil
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from clip_vocab import load_clip_vocab  # tools/ is on sys.path when run as a script

OPSET = 17
SEQ = 77
TABLE_ROWS = 256  # ids are folded into a small embedding table (a full 49408 x D table is MBs)

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
# Graph building helpers


class Graph:
    """Small builder: unique node names, initializers stored in the model's float dtype."""

    def __init__(self, name, seed, fp16):
        self.name = name
        self.rng = np.random.RandomState(seed)
        self.fp16 = fp16
        self.nodes = []
        self.inits = []
        self.inputs = []
        self.outputs = []
        self.count = 0

    def fresh(self, prefix):
        self.count += 1
        return "%s_%d" % (prefix, self.count)

    def op(self, op_type, inputs, **attrs):
        out = self.fresh(op_type.lower())
        self.nodes.append(helper.make_node(op_type, inputs, [out], name=out, **attrs))
        return out

    def op_to(self, op_type, inputs, output, **attrs):
        self.nodes.append(helper.make_node(op_type, inputs, [output], name=self.fresh(op_type),
                                           **attrs))
        return output

    def const_int(self, values):
        name = self.fresh("shape")
        self.inits.append(numpy_helper.from_array(np.array(values, dtype=np.int64), name))
        return name

    def weight(self, shape, scale):
        """A random float weight, stored as fp16 in fp16 models and cast to fp32 for compute."""
        value = (self.rng.standard_normal(shape) * scale).astype(np.float32)
        name = self.fresh("w")
        if self.fp16:
            self.inits.append(numpy_helper.from_array(value.astype(np.float16), name))
            return self.op("Cast", [name], to=TensorProto.FLOAT)
        self.inits.append(numpy_helper.from_array(value, name))
        return name

    def scalar(self, value):
        """A float32 compute-time constant (not a weight: identical in fp16 and fp32 models)."""
        name = self.fresh("c")
        self.inits.append(numpy_helper.from_array(np.array(value, dtype=np.float32), name))
        return name

    def fdtype(self):
        return TensorProto.FLOAT16 if self.fp16 else TensorProto.FLOAT

    def float_input(self, name, shape, force_fp32=False):
        dtype = TensorProto.FLOAT if force_fp32 else self.fdtype()
        self.inputs.append(helper.make_tensor_value_info(name, dtype, shape))
        if dtype == TensorProto.FLOAT:
            return name
        return self.op("Cast", [name], to=TensorProto.FLOAT)

    def raw_input(self, name, dtype, shape):
        self.inputs.append(helper.make_tensor_value_info(name, dtype, shape))
        return name

    def float_output(self, value, name, shape, force_fp32=False):
        dtype = TensorProto.FLOAT if force_fp32 else self.fdtype()
        if dtype == TensorProto.FLOAT:
            self.op_to("Identity", [value], name)
        else:
            self.op_to("Cast", [value], name, to=dtype)
        self.outputs.append(helper.make_tensor_value_info(name, dtype, shape))

    def model(self):
        graph = helper.make_graph(self.nodes, self.name, self.inputs, self.outputs, self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                                  producer_name="truegreen-gen-tiny-sd")
        model.ir_version = 8
        onnx.checker.check_model(model)
        return model


def save_model(model, folder, external_data=None):
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "model.onnx")
    if external_data:
        onnx.save_model(model, path, save_as_external_data=True, all_tensors_to_one_file=True,
                        location=external_data, size_threshold=256)
    else:
        onnx.save_model(model, path)


# ------------------------------------------------------------------------------------------------
# The three models


def text_encoder(seed, hidden, ids_dtype, fp16, layers, hidden_states, projection):
    """CLIPTextModel(-WithProjection)-shaped encoder."""
    g = Graph("text_encoder", seed, fp16)
    ids = g.raw_input("input_ids", ids_dtype, ["batch_size", "sequence_length"])
    if ids_dtype != TensorProto.INT64:
        ids = g.op("Cast", [ids], to=TensorProto.INT64)
    folded = g.op("Mod", [ids, g.const_int(TABLE_ROWS)])
    h = g.op("Gather", [g.weight([TABLE_ROWS, hidden], 1.0), folded], axis=0)
    h = g.op("Add", [h, g.weight([SEQ, hidden], 0.5)])
    states = [h]
    for _ in range(layers):
        h = g.op("Tanh", [g.op("Add", [g.op("Mul", [h, g.weight([hidden], 0.8)]),
                                       g.weight([hidden], 0.2)])])
        states.append(h)
    seq_shape = ["batch_size", "sequence_length", hidden]
    pooled = g.op("ReduceMean", [h], axes=[1], keepdims=0)
    if projection:
        g.float_output(g.op("Mul", [pooled, g.weight([hidden], 1.0)]), "text_embeds",
                       ["batch_size", hidden])
    g.float_output(h, "last_hidden_state", seq_shape)
    if not projection:
        g.float_output(pooled, "pooler_output", ["batch_size", hidden])
    if hidden_states:
        for i, s in enumerate(states):
            g.float_output(s, "hidden_states.%d" % i, seq_shape)
    return g.model()


def unet(seed, ctx_dim, timestep, fp16, sdxl):
    """UNet2DConditionModel-shaped denoiser. `timestep` is (dtype, shape) of its input."""
    g = Graph("unet", seed, fp16)
    lat = ["batch_size", 4, "height", "width"]
    x = g.float_input("sample", lat)
    t_dtype, t_shape = timestep
    t = g.raw_input("timestep", t_dtype, t_shape)
    t = g.op("Cast", [t], to=TensorProto.FLOAT)
    t = g.op("Reshape", [t, g.const_int([-1, 1, 1, 1])])
    # A timestep embedding: sin(t * w + b), 4 channels, broadcast over the batch and the pixels.
    temb = g.op("Sin", [g.op("Add", [g.op("Mul", [t, g.weight([1, 4, 1, 1], 0.01)]),
                                     g.weight([1, 4, 1, 1], 1.0)])])
    ctx = g.float_input("encoder_hidden_states", ["batch_size", "sequence_length", ctx_dim])
    pooled = g.op("ReduceMean", [ctx], axes=[1], keepdims=0)
    cond = g.op("MatMul", [pooled, g.weight([ctx_dim, 4], 1.0 / np.sqrt(ctx_dim))])
    if sdxl:
        te = g.float_input("text_embeds", ["batch_size", 1280])
        ti = g.float_input("time_ids", ["batch_size", 6])
        cond = g.op("Add", [cond, g.op("MatMul", [te, g.weight([1280, 4], 1.0 / np.sqrt(1280))])])
        cond = g.op("Add", [cond, g.op("MatMul", [ti, g.weight([6, 4], 1e-4)])])
    cond = g.op("Reshape", [cond, g.const_int([-1, 4, 1, 1])])
    # One down/up level with cross-attention to the text tokens at half resolution, as in SD's
    # UNet (whose blocks repeat this pattern): conv in, strided conv down, attention from every
    # latent position to the 77 text tokens (an unfused MatMul-Softmax-MatMul chain, as a plain
    # export has), nearest upsampling back to the input size (odd sizes included), skip
    # connection, conv out. It costs a few milliseconds per step on CPU, keeping 20 steps far
    # below the "about a second" while giving the host-overhead benchmark a UNet whose
    # work has the structure of the real one.
    ch = 32
    h = g.op("Conv", [x, g.weight([ch, 4, 3, 3], 0.3), g.weight([ch], 0.1)], pads=[1, 1, 1, 1])
    temb_ch = g.op("Sin", [g.op("Add", [g.op("Mul", [t, g.weight([1, ch, 1, 1], 0.01)]),
                                        g.weight([1, ch, 1, 1], 1.0)])])
    h = g.op("Tanh", [g.op("Add", [h, temb_ch])])
    d = g.op("Conv", [h, g.weight([ch, ch, 3, 3], 0.06), g.weight([ch], 0.1)], pads=[1, 1, 1, 1],
             strides=[2, 2])
    tokens = g.op("Transpose", [g.op("Reshape", [d, g.const_int([0, ch, -1])])], perm=[0, 2, 1])
    q = g.op("MatMul", [tokens, g.weight([ch, ch], 1.0 / np.sqrt(ch))])
    k = g.op("MatMul", [ctx, g.weight([ctx_dim, ch], 1.0 / np.sqrt(ctx_dim))])
    v = g.op("MatMul", [ctx, g.weight([ctx_dim, ch], 1.0 / np.sqrt(ctx_dim))])
    scores = g.op("Mul", [g.op("MatMul", [q, g.op("Transpose", [k], perm=[0, 2, 1])]),
                          g.scalar(1.0 / np.sqrt(ch))])
    attn = g.op("MatMul", [g.op("Softmax", [scores], axis=-1), v])
    attn = g.op("MatMul", [attn, g.weight([ch, ch], 0.5 / np.sqrt(ch))])
    attn = g.op("Reshape", [g.op("Transpose", [attn], perm=[0, 2, 1]), g.op("Shape", [d])])
    d = g.op("Tanh", [g.op("Add", [d, attn])])
    up = g.op("Resize", [d, "", "", g.op("Shape", [h])], mode="nearest")
    h = g.op("Add", [h, up])
    o = g.op("Conv", [h, g.weight([4, ch, 3, 3], 0.12), g.weight([4], 0.1)], pads=[1, 1, 1, 1])
    o = g.op("Add", [g.op("Add", [o, temb]), cond])
    # Keep the prediction close to the input noise so sampling stays bounded for every scheduler.
    o = g.op("Add", [g.op("Mul", [x, g.weight([1, 4, 1, 1], 0.05)]), g.op("Mul", [o, g.weight(
        [1, 1, 1, 1], 0.1)])])
    g.float_output(o, "out_sample", lat)
    return g.model()


def vae_decoder(seed, fp16):
    g = Graph("vae_decoder", seed, fp16)
    x = g.float_input("latent_sample", ["batch_size", 4, "latent_height", "latent_width"])
    y = g.op("Conv", [x, g.weight([192, 4, 1, 1], 0.25), g.weight([192], 0.1)])
    z = g.op("Tanh", [g.op("DepthToSpace", [y], blocksize=8, mode="DCR")])
    g.float_output(z, "sample", ["batch_size", 3, "height", "width"])
    return g.model()


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

F32, F16, I32, I64 = TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.INT32, TensorProto.INT64

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
    # Broken on purpose: the unet expects 1024-wide text states, the encoder gives 768.
    "bad-shape-mismatch": dict(style="optimum", kind="sd1", fp16=False, ids=I64,
                               timestep=(I64, ["batch_size"]), unet_ctx=1024),
}


def write_pipeline(root, name, spec, vocab, merges):
    out = os.path.join(root, name)
    if os.path.exists(out):
        shutil.rmtree(out)
    os.makedirs(out)
    kind, fp16, legacy = spec["kind"], spec["fp16"], spec["style"] == "legacy"
    external = "weights.pb" if legacy else "model.onnx_data"
    seed = 1000 + sorted(VARIANTS).index(name) * 10

    if kind == "sdxl":
        save_model(text_encoder(seed + 1, 768, spec["ids"], fp16, 3, True, False),
                   os.path.join(out, "text_encoder"))
        save_model(text_encoder(seed + 2, 1280, spec["ids"], fp16, 4, True, True),
                   os.path.join(out, "text_encoder_2"))
        ctx = 2048
    else:
        hidden = 1024 if kind == "sd2" else 768
        save_model(text_encoder(seed + 1, hidden, spec["ids"], fp16, 2, False, False),
                   os.path.join(out, "text_encoder"))
        ctx = spec.get("unet_ctx", hidden)
    save_model(unet(seed + 3, ctx, spec["timestep"], fp16, kind == "sdxl"),
               os.path.join(out, "unet"), external_data=external)
    vae_fp16 = fp16 and kind != "sdxl"
    save_model(vae_decoder(seed + 4, vae_fp16), os.path.join(out, "vae_decoder"))

    scaling = 0.13025 if kind == "sdxl" else 0.18215
    sched = {"sd1": SCHED_SD15, "sd2": SCHED_SD21, "sdxl": SCHED_SDXL}[kind]
    write_json(os.path.join(out, "scheduler", "scheduler_config.json"), sched)
    pad1 = "!" if kind == "sd2" else "<|endoftext|>"
    write_tokenizer(os.path.join(out, "tokenizer"), vocab, merges, pad1)
    if kind == "sdxl":
        write_tokenizer(os.path.join(out, "tokenizer_2"), vocab, merges, "!")

    write_json(os.path.join(out, "vae_decoder", "config.json"), {
        "_class_name": "AutoencoderKL", "latent_channels": 4, "out_channels": 3,
        "sample_size": 1024 if kind == "sdxl" else (768 if kind == "sd2" else 512),
        "scaling_factor": scaling, "force_upcast": kind == "sdxl",
    })
    if not legacy:
        write_json(os.path.join(out, "unet", "config.json"), {
            "_class_name": "UNet2DConditionModel", "in_channels": 4, "out_channels": 4,
            "cross_attention_dim": ctx, "sample_size": 128 if kind == "sdxl" else 64,
            "addition_embed_type": "text_time" if kind == "sdxl" else None,
        })
        write_json(os.path.join(out, "text_encoder", "config.json"), {
            "architectures": ["CLIPTextModel"], "hidden_size": 768 if kind != "sd2" else 1024,
            "max_position_embeddings": SEQ, "model_type": "clip_text_model",
        })
        if kind == "sdxl":
            write_json(os.path.join(out, "text_encoder_2", "config.json"), {
                "architectures": ["CLIPTextModelWithProjection"], "hidden_size": 1280,
                "max_position_embeddings": SEQ, "model_type": "clip_text_model",
                "projection_dim": 1280,
            })

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


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    default_merges = os.path.join(here, "..", "data", "clip", "bpe_simple_vocab_16e6.txt.gz")
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", required=True, help="directory to write the pipelines into")
    parser.add_argument("--clip-merges", default=default_merges,
                        help="CLIP bpe_simple_vocab_16e6.txt.gz")
    parser.add_argument("--variant", action="append", choices=sorted(VARIANTS),
                        help="write only this variant (repeatable; default all)")
    args = parser.parse_args()
    if not os.path.isfile(args.clip_merges):
        sys.exit("gen_tiny_sd.py: CLIP merges file not found: %s" % args.clip_merges)
    vocab, merges = load_clip_vocab(args.clip_merges)
    os.makedirs(args.out, exist_ok=True)
    stamp = os.path.join(args.out, ".complete")
    if os.path.exists(stamp):
        os.remove(stamp)
    for name in args.variant or sorted(VARIANTS):
        write_pipeline(args.out, name, VARIANTS[name], vocab, merges)
    with open(stamp, "w") as f:
        f.write("\n".join(args.variant or sorted(VARIANTS)) + "\n")


if __name__ == "__main__":
    main()
