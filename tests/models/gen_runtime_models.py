#!/usr/bin/python3
"""Generates the small ONNX models the runtime tests and benchmarks run through real ORT sessions.

Run with Debian's /usr/bin/python3 (python3-onnx, numpy). Weights come from a fixed seed, so the
files are reproducible; nothing here is checked into git. Usage:
    gen_runtime_models.py --out DIR
Writes into DIR:
  unet_tiny.onnx       UNet-shaped: Conv -> InstanceNorm -> SiLU -> self-attention over the
                       spatial tokens (MatMul -> Mul -> Softmax -> MatMul, unfused) -> Conv,
                       input "sample" float32 [1,4,16,16], output "out" [1,4,16,16]
  unet_tiny_large.onnx the same shape with 32 channels and 32x32 latents (benchmarks)
  matmul_softmax.onnx  x float32 [N,8] -> MatMul -> Softmax -> MatMul -> y [N,8] (dynamic N)
  shape_ops.onnx       only shape ops: x [N,4] -> Shape/Gather/Unsqueeze/Concat -> Reshape -> y
  attention_fused.onnx com.microsoft MultiHeadAttention over query/key/value [1,6,16] -> out
  add_int64.onnx       a int64 [3] + b int64 [3] -> c (non-float dtype path)
  half_matmul.onnx     x float16 [2,4] -> MatMul (fp16 weights) -> y float16 [2,4]
"""
import argparse
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = [helper.make_opsetid("", 17)]
MS_OPSET = [helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]


def save(graph, path, opsets=OPSET):
    model = helper.make_model(graph, opset_imports=opsets, producer_name="truegreen-tests")
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, path)


def init(name, array):
    return numpy_helper.from_array(array, name)


def unet_tiny(path, channels, size, rng):
    c_in = 4
    hw = size * size
    inits = [
        init("conv_in_w", rng.standard_normal((channels, c_in, 3, 3)).astype(np.float32) * 0.2),
        init("conv_in_b", np.zeros(channels, np.float32)),
        init("norm_scale", np.ones(channels, np.float32)),
        init("norm_bias", np.zeros(channels, np.float32)),
        init("wq", rng.standard_normal((channels, channels)).astype(np.float32) * 0.1),
        init("wk", rng.standard_normal((channels, channels)).astype(np.float32) * 0.1),
        init("wv", rng.standard_normal((channels, channels)).astype(np.float32) * 0.1),
        init("scale", np.array(1.0 / np.sqrt(channels), np.float32)),
        init("tok_shape", np.array([1, channels, hw], np.int64)),
        init("img_shape", np.array([1, channels, size, size], np.int64)),
        init("conv_out_w", rng.standard_normal((c_in, channels, 3, 3)).astype(np.float32) * 0.2),
        init("conv_out_b", np.zeros(c_in, np.float32)),
    ]
    nodes = [
        helper.make_node("Conv", ["sample", "conv_in_w", "conv_in_b"], ["h0"], name="conv_in",
                         pads=[1, 1, 1, 1]),
        helper.make_node("InstanceNormalization", ["h0", "norm_scale", "norm_bias"], ["h1"],
                         name="norm1"),
        helper.make_node("Sigmoid", ["h1"], ["h1s"], name="silu_sigmoid"),
        helper.make_node("Mul", ["h1", "h1s"], ["h2"], name="silu_mul"),
        helper.make_node("Reshape", ["h2", "tok_shape"], ["t0"], name="to_tokens"),
        helper.make_node("Transpose", ["t0"], ["t1"], name="tokens_t", perm=[0, 2, 1]),
        helper.make_node("MatMul", ["t1", "wq"], ["q"], name="attn_q"),
        helper.make_node("MatMul", ["t1", "wk"], ["k"], name="attn_k"),
        helper.make_node("MatMul", ["t1", "wv"], ["v"], name="attn_v"),
        helper.make_node("Transpose", ["k"], ["kt"], name="attn_kt", perm=[0, 2, 1]),
        helper.make_node("MatMul", ["q", "kt"], ["qk"], name="attn_qk"),
        helper.make_node("Mul", ["qk", "scale"], ["qks"], name="attn_scale"),
        helper.make_node("Softmax", ["qks"], ["p"], name="attn_softmax", axis=-1),
        helper.make_node("MatMul", ["p", "v"], ["a"], name="attn_pv"),
        helper.make_node("Add", ["a", "t1"], ["r"], name="attn_residual"),
        helper.make_node("Transpose", ["r"], ["r_t"], name="tokens_back", perm=[0, 2, 1]),
        helper.make_node("Reshape", ["r_t", "img_shape"], ["h3"], name="to_image"),
        helper.make_node("Conv", ["h3", "conv_out_w", "conv_out_b"], ["out"], name="conv_out",
                         pads=[1, 1, 1, 1]),
    ]
    graph = helper.make_graph(
        nodes, "unet_tiny",
        [helper.make_tensor_value_info("sample", TensorProto.FLOAT, [1, c_in, size, size])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, c_in, size, size])], inits)
    save(graph, path)


def matmul_softmax(path, rng):
    inits = [init("w1", rng.standard_normal((8, 8)).astype(np.float32)),
             init("w2", rng.standard_normal((8, 8)).astype(np.float32))]
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h"], name="mm1"),
        helper.make_node("Softmax", ["h"], ["p"], name="softmax", axis=-1),
        helper.make_node("MatMul", ["p", "w2"], ["y"], name="mm2"),
    ]
    graph = helper.make_graph(nodes, "matmul_softmax",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 8])],
                              inits)
    save(graph, path)


def shape_ops(path):
    inits = [init("idx0", np.array(0, np.int64)), init("minus1", np.array([-1], np.int64))]
    nodes = [
        helper.make_node("Shape", ["x"], ["s"], name="shape"),
        helper.make_node("Gather", ["s", "idx0"], ["n"], name="gather_n", axis=0),
        helper.make_node("Unsqueeze", ["n", "axes0"], ["n1"], name="unsqueeze_n"),
        helper.make_node("Concat", ["n1", "minus1"], ["target"], name="concat_shape", axis=0),
        helper.make_node("Reshape", ["x", "target"], ["y"], name="reshape"),
    ]
    inits.append(init("axes0", np.array([0], np.int64)))
    graph = helper.make_graph(nodes, "shape_ops",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])],
                              inits)
    save(graph, path)


def attention_fused(path):
    nodes = [helper.make_node("MultiHeadAttention", ["query", "key", "value"], ["out"],
                              name="mha", domain="com.microsoft", num_heads=2)]
    io = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 6, 16])
          for n in ("query", "key", "value")]
    graph = helper.make_graph(nodes, "attention_fused", io,
                              [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, 6, 16])])
    save(graph, path, MS_OPSET)


def add_int64(path):
    nodes = [helper.make_node("Add", ["a", "b"], ["c"], name="add")]
    graph = helper.make_graph(nodes, "add_int64",
                              [helper.make_tensor_value_info("a", TensorProto.INT64, [3]),
                               helper.make_tensor_value_info("b", TensorProto.INT64, [3])],
                              [helper.make_tensor_value_info("c", TensorProto.INT64, [3])])
    save(graph, path)


def half_matmul(path, rng):
    inits = [init("w", (rng.standard_normal((4, 4)) * 0.5).astype(np.float16))]
    nodes = [helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")]
    graph = helper.make_graph(nodes, "half_matmul",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [2, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT16, [2, 4])],
                              inits)
    save(graph, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    rng = np.random.default_rng(20240601)
    unet_tiny(os.path.join(args.out, "unet_tiny.onnx"), 8, 16, rng)
    unet_tiny(os.path.join(args.out, "unet_tiny_large.onnx"), 32, 32, rng)
    matmul_softmax(os.path.join(args.out, "matmul_softmax.onnx"), rng)
    shape_ops(os.path.join(args.out, "shape_ops.onnx"))
    attention_fused(os.path.join(args.out, "attention_fused.onnx"))
    add_int64(os.path.join(args.out, "add_int64.onnx"))
    half_matmul(os.path.join(args.out, "half_matmul.onnx"), rng)
    with open(os.path.join(args.out, ".complete"), "w") as f:
        f.write("ok\n")


if __name__ == "__main__":
    main()
