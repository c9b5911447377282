"""The Stable Diffusion architectures the generator writes (tools/gen_sd.py), as published:

  CLIP text transformers (transformers' CLIPTextModel / CLIPTextModelWithProjection): token and
  position embeddings, pre-LN blocks of causal self-attention and an MLP (quick-GELU for OpenAI's
  ViT-L/14, GELU for OpenCLIP's ViT-H and ViT-bigG), a final LayerNorm, the pooled state at the
  end-of-text token and, for SDXL's second encoder, the text projection;
  the UNet (diffusers' UNet2DConditionModel): sinusoidal timestep embedding and its MLP, conv_in,
  down blocks of ResNet blocks (GroupNorm(32), SiLU, 3x3 conv, time embedding added) and
  Transformer2D blocks (self-attention, cross-attention over the text states, GEGLU
  feed-forward) with a strided-conv downsampler, a mid block, up blocks with skip concatenation
  and nearest x2 upsampling, conv_out, and for SDXL the added time and text embeddings;
  the VAE decoder (diffusers' AutoencoderKL decoder, with post_quant_conv as Optimum exports it):
  a mid block with attention, up blocks of ResNet blocks with upsampling, GroupNorm and conv_out.

Configurations are the published ones (Hugging Face model configs of runwayml/stable-diffusion-v1-5,
stabilityai/stable-diffusion-2-1 and stabilityai/stable-diffusion-xl-base-1.0). `scaled(cfg, width,
depth)` shrinks channel counts (to multiples of 32, for GroupNorm(32)) and layer counts while
keeping every block type, so a small model has the real op mix.
"""

import math

import numpy as np

from sd_graph import F32, I32, I64

SEQ = 77
VOCAB = 49408

CLIP = {
    # OpenAI CLIP ViT-L/14 text tower (SD 1.x, SDXL encoder 1).
    "clip-l": dict(hidden=768, layers=12, heads=12, mlp=3072, act="quick_gelu", proj=None),
    # OpenCLIP ViT-H/14, as SD 2.x ships it (23 of 24 layers: the penultimate state).
    "openclip-h": dict(hidden=1024, layers=23, heads=16, mlp=4096, act="gelu", proj=None),
    # OpenCLIP ViT-bigG/14 with its projection (SDXL encoder 2).
    "openclip-bigg": dict(hidden=1280, layers=32, heads=20, mlp=5120, act="gelu", proj=1280),
}

UNET = {
    "sd15": dict(blocks=[320, 640, 1280, 1280], attn=[True, True, True, False], layers=2,
                 depth=[1, 1, 1, 1], heads=[8, 8, 8, 8], mid_depth=1, linear_proj=False,
                 add_time_dim=None),
    "sd21": dict(blocks=[320, 640, 1280, 1280], attn=[True, True, True, False], layers=2,
                 depth=[1, 1, 1, 1], heads=[5, 10, 20, 20], mid_depth=1, linear_proj=True,
                 add_time_dim=None),
    "sdxl": dict(blocks=[320, 640, 1280], attn=[False, True, True], layers=2, depth=[1, 2, 10],
                 heads=[5, 10, 20], mid_depth=10, linear_proj=True, add_time_dim=256),
}

VAE = dict(blocks=[128, 256, 512, 512], layers=2)


def _ch(c, width):
    return max(32, 32 * int(round(c * width / 32.0)))


def _heads(heads, channels, width):
    h = max(1, int(round(heads * width)))
    while channels % h:
        h -= 1
    return h


def _n(n, depth):
    return max(1, int(round(n * depth)))


def scaled_clip(cfg, width, depth):
    c = dict(cfg)
    if width != 1.0:
        c["hidden"] = _ch(cfg["hidden"], width)
        c["heads"] = _heads(cfg["heads"], c["hidden"], width)
        c["mlp"] = 4 * c["hidden"]
        c["proj"] = _ch(cfg["proj"], width) if cfg["proj"] else None
    c["layers"] = _n(cfg["layers"], depth)
    return c


def scaled_unet(cfg, width, depth):
    c = dict(cfg)
    if width != 1.0:
        c["blocks"] = [_ch(b, width) for b in cfg["blocks"]]
        c["heads"] = [_heads(h, b, width) for h, b in zip(cfg["heads"], c["blocks"])]
        if cfg["add_time_dim"]:
            c["add_time_dim"] = max(8, 2 * int(round(cfg["add_time_dim"] * width / 2)))
    c["layers"] = _n(cfg["layers"], depth)
    c["depth"] = [_n(d, depth) for d in cfg["depth"]]
    c["mid_depth"] = _n(cfg["mid_depth"], depth)
    return c


def scaled_vae(width, depth):
    return dict(blocks=[_ch(b, width) for b in VAE["blocks"]], layers=_n(VAE["layers"], depth))


# ------------------------------------------------------------------------------------------------
# CLIP text encoder


def clip_text(g, cfg, ids_dtype, batch, hidden_states=False):
    """Outputs: last_hidden_state and pooler_output (or text_embeds with a projection), plus
    hidden_states.0..N when asked (SDXL conditions on the penultimate one)."""
    d, heads = cfg["hidden"], cfg["heads"]
    ids = g.raw_input("input_ids", ids_dtype, ["batch_size", "sequence_length"])
    ids64 = ids if ids_dtype == I64 else g.op("Cast", [ids], to=I64)
    seq = g.op("Slice", [g.op("Shape", [ids]), g.ints([1]), g.ints([2])])
    tok = g.weight("text_model.embeddings.token_embedding.weight", [VOCAB, d], scale=0.5)
    pos = g.weight("text_model.embeddings.position_embedding.weight", [SEQ, d], scale=0.5)
    position_ids = g.op("Slice", [g.ints([list(range(SEQ))]), g.ints([0]), seq, g.ints([1])])
    h = g.op("Add", [g.op("Gather", [tok, ids64], axis=0),
                     g.op("Gather", [pos, position_ids], axis=0)])
    big = float(np.finfo(np.float16 if g.compute != F32 else np.float32).min)
    causal = np.triu(np.full((SEQ, SEQ), big, dtype=np.float64), k=1)
    mask = g.op("Slice", [g.const(causal), g.ints([0, 0]), g.op("Concat", [seq, seq], axis=0),
                          g.ints([0, 1])])
    states = [h]
    rows = batch * SEQ
    for i in range(cfg["layers"]):
        p = "text_model.encoder.layers.%d" % i
        x = g.layer_norm(h, p + ".layer_norm1", d)
        h = g.op("Add", [h, g.attention(x, x, p + ".self_attn", d, d, heads, rows, SEQ, SEQ,
                                        batch, mask=mask, qkv_bias=True)])
        x = g.layer_norm(h, p + ".layer_norm2", d)
        x = g.linear(x, p + ".mlp.fc1", d, cfg["mlp"], rows)
        x = g.quick_gelu(x) if cfg["act"] == "quick_gelu" else g.gelu(x)
        h = g.op("Add", [h, g.linear(x, p + ".mlp.fc2", cfg["mlp"], d, rows,
                                     scale=0.5 / math.sqrt(cfg["mlp"]))])
        states.append(h)
    last = g.layer_norm(h, "text_model.final_layer_norm", d)
    # The pooled state is the one at the end-of-text token, the largest id (transformers takes
    # the argmax of the ids cast to int32).
    eot = g.op("ArgMax", [g.op("Cast", [ids], to=I32)], axis=-1, keepdims=1)
    pooled = g.op("GatherND", [last, eot], batch_dims=1)
    seq_shape = ["batch_size", "sequence_length", d]
    if cfg["proj"]:
        g.float_output(g.linear(pooled, "text_projection", d, cfg["proj"], batch, bias=False),
                       "text_embeds", ["batch_size", cfg["proj"]])
    g.float_output(last, "last_hidden_state", seq_shape)
    if not cfg["proj"]:
        g.float_output(pooled, "pooler_output", ["batch_size", d])
    if hidden_states:
        for i, s in enumerate(states):
            g.float_output(s, "hidden_states.%d" % i, seq_shape)


# ------------------------------------------------------------------------------------------------
# Shared blocks


def timestep_embedding(g, t, dim):
    """diffusers' Timesteps(dim, flip_sin_to_cos=True, freq_shift=0): [N] float32 -> [N, dim]."""
    half = dim // 2
    freqs = np.exp(-math.log(10000.0) * np.arange(half, dtype=np.float64) / half)
    arg = g.op("Mul", [g.op("Unsqueeze", [t, g.ints([1])]), g.const(freqs[None, :], F32)])
    emb = g.op("Concat", [g.op("Cos", [arg]), g.op("Sin", [arg])], axis=-1)
    return emb if g.compute == F32 else g.op("Cast", [emb], to=g.compute)


def resnet(g, x, p, c_in, c_out, hw, batch, emb=None, emb_dim=0, eps=1e-5):
    h = g.conv(g.silu(g.group_norm(x, p + ".norm1", c_in, eps=eps)), p + ".conv1", c_in, c_out, 3,
               hw, batch)
    if emb is not None:
        t = g.linear(g.silu(emb), p + ".time_emb_proj", emb_dim, c_out, batch)
        h = g.op("Add", [h, g.op("Unsqueeze", [t, g.ints([2, 3])])])
    h = g.conv(g.silu(g.group_norm(h, p + ".norm2", c_out, eps=eps)), p + ".conv2", c_out, c_out,
               3, hw, batch, scale=0.5 / math.sqrt(9 * c_out))
    if c_in != c_out:
        x = g.conv(x, p + ".conv_shortcut", c_in, c_out, 1, hw, batch)
    return g.op("Add", [x, h])


def to_tokens(g, x, c):
    """[B, C, H, W] -> [B, H*W, C]."""
    return g.op("Transpose", [g.op("Reshape", [x, g.ints([0, c, -1])])], perm=[0, 2, 1])


def from_tokens(g, t, like):
    """[B, H*W, C] -> the shape of `like` ([B, C, H, W])."""
    return g.op("Reshape", [g.op("Transpose", [t], perm=[0, 2, 1]), g.op("Shape", [like])])


def transformer2d(g, x, p, c, heads, depth, ctx, ctx_dim, hw, batch, linear_proj):
    rows = batch * hw[0] * hw[1]
    h = g.group_norm(x, p + ".norm", c, eps=1e-6)
    if linear_proj:
        t = g.linear(to_tokens(g, h, c), p + ".proj_in", c, c, rows)
    else:
        t = to_tokens(g, g.conv(h, p + ".proj_in", c, c, 1, hw, batch), c)
    for i in range(depth):
        b = "%s.transformer_blocks.%d" % (p, i)
        n = hw[0] * hw[1]
        t = g.op("Add", [t, g.attention(g.layer_norm(t, b + ".norm1", c), None, b + ".attn1", c, c,
                                        heads, rows, n, n, batch)])
        t = g.op("Add", [t, g.attention(g.layer_norm(t, b + ".norm2", c), ctx, b + ".attn2", c,
                                        ctx_dim, heads, rows, n, SEQ, batch)])
        f = g.linear(g.layer_norm(t, b + ".norm3", c), b + ".ff.net.0.proj", c, 8 * c, rows)
        a, gate = g.op("Split", [f, g.ints([4 * c, 4 * c])], n_out=2, axis=-1)
        f = g.linear(g.op("Mul", [a, g.gelu(gate)]), b + ".ff.net.2", 4 * c, c, rows,
                     scale=0.5 / math.sqrt(4 * c))
        t = g.op("Add", [t, f])
    if linear_proj:
        out = from_tokens(g, g.linear(t, p + ".proj_out", c, c, rows, scale=0.5 / math.sqrt(c)), x)
    else:
        out = g.conv(from_tokens(g, t, x), p + ".proj_out", c, c, 1, hw, batch,
                     scale=0.5 / math.sqrt(c))
    return g.op("Add", [out, x])


def upsample_to(g, x, like):
    """Nearest x2 to the spatial size of `like` (the next skip), as diffusers passes
    upsample_size, so odd latent sizes come back exactly."""
    sizes = g.op("Concat", [g.op("Slice", [g.op("Shape", [x]), g.ints([0]), g.ints([2])]),
                            g.op("Slice", [g.op("Shape", [like]), g.ints([2]), g.ints([4])])],
                 axis=0)
    return g.op("Resize", [x, "", "", sizes], mode="nearest",
                coordinate_transformation_mode="asymmetric", nearest_mode="floor")


# ------------------------------------------------------------------------------------------------
# UNet


def _unet_inputs(g, cfg, timestep, ctx_dim, text_embeds_dim):
    sample = g.float_input("sample", ["batch_size", 4, "height", "width"])
    t_dtype, t_shape = timestep
    t = g.op("Cast", [g.raw_input("timestep", t_dtype, t_shape)], to=F32)
    batch_dim = g.op("Slice", [g.op("Shape", [sample]), g.ints([0]), g.ints([1])])
    t = g.op("Expand", [g.op("Reshape", [t, g.ints([-1])]), batch_dim])
    ctx = g.float_input("encoder_hidden_states", ["batch_size", "sequence_length", ctx_dim])
    extra = None
    if cfg["add_time_dim"]:
        te = g.float_input("text_embeds", ["batch_size", text_embeds_dim])
        ti = g.float_input("time_ids", ["batch_size", 6])
        if g.compute != F32:
            ti = g.op("Cast", [ti], to=F32)
        d = cfg["add_time_dim"]
        tt = timestep_embedding(g, g.op("Reshape", [ti, g.ints([-1])]), d)
        extra = g.op("Concat", [te, g.op("Reshape", [tt, g.ints([-1, 6 * d])])], axis=-1)
    return sample, t, ctx, extra


def unet(g, cfg, timestep, ctx_dim, batch, lat_hw, text_embeds_dim=None):
    blocks, c0 = cfg["blocks"], cfg["blocks"][0]
    emb_dim = 4 * c0
    sample, t, ctx, extra = _unet_inputs(g, cfg, timestep, ctx_dim, text_embeds_dim)
    emb = g.linear(timestep_embedding(g, t, c0), "time_embedding.linear_1", c0, emb_dim, batch)
    emb = g.linear(g.silu(emb), "time_embedding.linear_2", emb_dim, emb_dim, batch)
    if extra is not None:
        a_in = text_embeds_dim + 6 * cfg["add_time_dim"]
        aug = g.linear(extra, "add_embedding.linear_1", a_in, emb_dim, batch)
        aug = g.linear(g.silu(aug), "add_embedding.linear_2", emb_dim, emb_dim, batch)
        emb = g.op("Add", [emb, aug])

    hw = list(lat_hw)
    h = g.conv(sample, "conv_in", 4, c0, 3, hw, batch)
    skips = [(h, c0, list(hw))]
    c = c0
    for i, co in enumerate(blocks):
        p = "down_blocks.%d" % i
        for j in range(cfg["layers"]):
            h = resnet(g, h, "%s.resnets.%d" % (p, j), c, co, hw, batch, emb, emb_dim)
            c = co
            if cfg["attn"][i]:
                h = transformer2d(g, h, "%s.attentions.%d" % (p, j), c, cfg["heads"][i],
                                  cfg["depth"][i], ctx, ctx_dim, hw, batch, cfg["linear_proj"])
            skips.append((h, c, list(hw)))
        if i < len(blocks) - 1:
            hw = [(hw[0] + 1) // 2, (hw[1] + 1) // 2]
            h = g.conv(h, p + ".downsamplers.0.conv", c, c, 3, hw, batch, stride=2)
            skips.append((h, c, list(hw)))

    h = resnet(g, h, "mid_block.resnets.0", c, c, hw, batch, emb, emb_dim)
    h = transformer2d(g, h, "mid_block.attentions.0", c, cfg["heads"][-1], cfg["mid_depth"], ctx,
                      ctx_dim, hw, batch, cfg["linear_proj"])
    h = resnet(g, h, "mid_block.resnets.1", c, c, hw, batch, emb, emb_dim)

    n = len(blocks)
    for i in range(n):
        lvl = n - 1 - i
        co = blocks[lvl]
        p = "up_blocks.%d" % i
        for j in range(cfg["layers"] + 1):
            s, sc, _ = skips.pop()
            h = resnet(g, g.op("Concat", [h, s], axis=1), "%s.resnets.%d" % (p, j), c + sc, co,
                       hw, batch, emb, emb_dim)
            c = co
            if cfg["attn"][lvl]:
                h = transformer2d(g, h, "%s.attentions.%d" % (p, j), c, cfg["heads"][lvl],
                                  cfg["depth"][lvl], ctx, ctx_dim, hw, batch, cfg["linear_proj"])
        if i < n - 1:
            like, _, hw = skips[-1]
            hw = list(hw)
            h = g.conv(upsample_to(g, h, like), p + ".upsamplers.0.conv", c, c, 3, hw, batch)
    h = g.silu(g.group_norm(h, "conv_norm_out", c))
    out = g.conv(h, "conv_out", c, 4, 3, hw, batch)
    g.float_output(out, "out_sample", ["batch_size", 4, "height", "width"])


# ------------------------------------------------------------------------------------------------
# VAE decoder


def vae_decoder(g, cfg, batch, lat_hw):
    blocks = cfg["blocks"]
    z = g.float_input("latent_sample", ["batch_size", 4, "latent_height", "latent_width"])
    hw = list(lat_hw)
    z = g.conv(z, "post_quant_conv", 4, 4, 1, hw, batch)
    c = blocks[-1]
    h = g.conv(z, "decoder.conv_in", 4, c, 3, hw, batch)
    h = resnet(g, h, "decoder.mid_block.resnets.0", c, c, hw, batch, eps=1e-6)
    n = hw[0] * hw[1]
    t = to_tokens(g, g.group_norm(h, "decoder.mid_block.attentions.0.group_norm", c, eps=1e-6), c)
    t = g.attention(t, None, "decoder.mid_block.attentions.0", c, c, 1, batch * n, n, n, batch,
                    qkv_bias=True)
    h = g.op("Add", [from_tokens(g, t, h), h])
    h = resnet(g, h, "decoder.mid_block.resnets.1", c, c, hw, batch, eps=1e-6)
    for i, co in enumerate(reversed(blocks)):
        p = "decoder.up_blocks.%d" % i
        for j in range(cfg["layers"] + 1):
            h = resnet(g, h, "%s.resnets.%d" % (p, j), c, co, hw, batch, eps=1e-6)
            c = co
        if i < len(blocks) - 1:
            hw = [hw[0] * 2, hw[1] * 2]
            up = g.op("Resize", [h, "", g.const([1.0, 1.0, 2.0, 2.0], F32)], mode="nearest",
                      coordinate_transformation_mode="asymmetric", nearest_mode="floor")
            h = g.conv(up, p + ".upsamplers.0.conv", c, c, 3, hw, batch)
    h = g.silu(g.group_norm(h, "decoder.conv_norm_out", c, eps=1e-6))
    out = g.conv(h, "decoder.conv_out", c, 3, 3, hw, batch)
    g.float_output(out, "sample", ["batch_size", 3, "height", "width"])
