"""The toy Stable Diffusion pipeline of tools/gen_sd.py (variant sd15-toy): the folder layout and
tensor names of a legacy SD 1.5 export around a handful of ops (a folded Gather and tanh layers;
two convs, one cross-attention and a nearest resize; 1x1 conv + DepthToSpace), a few milliseconds
per 512x512 step. Only the server's lifecycle tests use it: they need jobs that the server files
in its large lane (pixels x steps), which on a real-architecture UNet cost minutes of CPU each.
"""

import numpy as np

from onnx import TensorProto

SEQ = 77
TABLE_ROWS = 256  # ids are folded into a small embedding table


def text_encoder(g, hidden, ids_dtype, layers, hidden_states, projection):
    """CLIPTextModel(-WithProjection)-shaped encoder."""
    ids = g.raw_input("input_ids", ids_dtype, ["batch_size", "sequence_length"])
    if ids_dtype != TensorProto.INT64:
        ids = g.op("Cast", [ids], to=TensorProto.INT64)
    folded = g.op("Mod", [ids, g.ints(TABLE_ROWS)])
    h = g.op("Gather", [g.weight(None, [TABLE_ROWS, hidden], 1.0), folded], axis=0)
    h = g.op("Add", [h, g.weight(None, [SEQ, hidden], 0.5)])
    states = [h]
    for _ in range(layers):
        h = g.op("Tanh", [g.op("Add", [g.op("Mul", [h, g.weight(None, [hidden], 0.8)]),
                                       g.weight(None, [hidden], 0.2)])])
        states.append(h)
    seq_shape = ["batch_size", "sequence_length", hidden]
    pooled = g.op("ReduceMean", [h], axes=[1], keepdims=0)
    if projection:
        g.float_output(g.op("Mul", [pooled, g.weight(None, [hidden], 1.0)]), "text_embeds",
                       ["batch_size", hidden])
    g.float_output(h, "last_hidden_state", seq_shape)
    if not projection:
        g.float_output(pooled, "pooler_output", ["batch_size", hidden])
    if hidden_states:
        for i, s in enumerate(states):
            g.float_output(s, "hidden_states.%d" % i, seq_shape)


def unet(g, ctx_dim, timestep, sdxl):
    """UNet2DConditionModel-shaped denoiser. `timestep` is (dtype, shape) of its input."""
    lat = ["batch_size", 4, "height", "width"]
    x = g.float_input("sample", lat)
    t_dtype, t_shape = timestep
    t = g.raw_input("timestep", t_dtype, t_shape)
    t = g.op("Cast", [t], to=TensorProto.FLOAT)
    t = g.op("Reshape", [t, g.ints([-1, 1, 1, 1])])
    # A timestep embedding: sin(t * w + b), 4 channels, broadcast over the batch and the pixels.
    temb = g.op("Sin", [g.op("Add", [g.op("Mul", [t, g.weight(None, [1, 4, 1, 1], 0.01)]),
                                     g.weight(None, [1, 4, 1, 1], 1.0)])])
    ctx = g.float_input("encoder_hidden_states", ["batch_size", "sequence_length", ctx_dim])
    pooled = g.op("ReduceMean", [ctx], axes=[1], keepdims=0)
    cond = g.op("MatMul", [pooled, g.weight(None, [ctx_dim, 4], 1.0 / np.sqrt(ctx_dim))])
    if sdxl:
        te = g.float_input("text_embeds", ["batch_size", 1280])
        ti = g.float_input("time_ids", ["batch_size", 6])
        cond = g.op("Add", [cond, g.op("MatMul", [te, g.weight(None, [1280, 4],
                                                                1.0 / np.sqrt(1280))])])
        cond = g.op("Add", [cond, g.op("MatMul", [ti, g.weight(None, [6, 4], 1e-4)])])
    cond = g.op("Reshape", [cond, g.ints([-1, 4, 1, 1])])
    # One down/up level with cross-attention to the text tokens at half resolution, as in SD's
    # UNet (whose blocks repeat this pattern): conv in, strided conv down, attention from every
    # latent position to the 77 text tokens (an unfused MatMul-Softmax-MatMul chain, as a plain
    # export has), nearest upsampling back to the input size (odd sizes included), skip
    # connection, conv out. It costs a few milliseconds per step on CPU, keeping 20 steps far
    # below the "about a second" while giving the host-overhead benchmark a UNet whose
    # work has the structure of the real one.
    ch = 32
    h = g.op("Conv", [x, g.weight(None, [ch, 4, 3, 3], 0.3), g.weight(None, [ch], 0.1)],
             pads=[1, 1, 1, 1])
    temb_ch = g.op("Sin", [g.op("Add", [g.op("Mul", [t, g.weight(None, [1, ch, 1, 1], 0.01)]),
                                        g.weight(None, [1, ch, 1, 1], 1.0)])])
    h = g.op("Tanh", [g.op("Add", [h, temb_ch])])
    d = g.op("Conv", [h, g.weight(None, [ch, ch, 3, 3], 0.06), g.weight(None, [ch], 0.1)],
             pads=[1, 1, 1, 1],
             strides=[2, 2])
    tokens = g.op("Transpose", [g.op("Reshape", [d, g.ints([0, ch, -1])])], perm=[0, 2, 1])
    q = g.op("MatMul", [tokens, g.weight(None, [ch, ch], 1.0 / np.sqrt(ch))])
    k = g.op("MatMul", [ctx, g.weight(None, [ctx_dim, ch], 1.0 / np.sqrt(ctx_dim))])
    v = g.op("MatMul", [ctx, g.weight(None, [ctx_dim, ch], 1.0 / np.sqrt(ctx_dim))])
    scores = g.op("Mul", [g.op("MatMul", [q, g.op("Transpose", [k], perm=[0, 2, 1])]),
                          g.const(1.0 / np.sqrt(ch))])
    attn = g.op("MatMul", [g.op("Softmax", [scores], axis=-1), v])
    attn = g.op("MatMul", [attn, g.weight(None, [ch, ch], 0.5 / np.sqrt(ch))])
    attn = g.op("Reshape", [g.op("Transpose", [attn], perm=[0, 2, 1]), g.op("Shape", [d])])
    d = g.op("Tanh", [g.op("Add", [d, attn])])
    up = g.op("Resize", [d, "", "", g.op("Shape", [h])], mode="nearest")
    h = g.op("Add", [h, up])
    o = g.op("Conv", [h, g.weight(None, [4, ch, 3, 3], 0.12), g.weight(None, [4], 0.1)],
             pads=[1, 1, 1, 1])
    o = g.op("Add", [g.op("Add", [o, temb]), cond])
    # Keep the prediction close to the input noise so sampling stays bounded for every scheduler.
    o = g.op("Add", [g.op("Mul", [x, g.weight(None, [1, 4, 1, 1], 0.05)]),
                     g.op("Mul", [o, g.weight(None, [1, 1, 1, 1], 0.1)])])
    g.float_output(o, "out_sample", lat)


def vae_decoder(g):
    x = g.float_input("latent_sample", ["batch_size", 4, "latent_height", "latent_width"])
    y = g.op("Conv", [x, g.weight(None, [192, 4, 1, 1], 0.25), g.weight(None, [192], 0.1)])
    z = g.op("Tanh", [g.op("DepthToSpace", [y], blocksize=8, mode="DCR")])
    g.float_output(z, "sample", ["batch_size", 3, "height", "width"])


