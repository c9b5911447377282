"""ONNX graph builder for the Stable Diffusion generator (tools/gen_sd.py).

A Graph collects nodes the way torch.onnx exports them at opset 17 and, beside the ONNX nodes,
keeps two tallies for `--dry-run`: the parameters (float initializers) and the multiply-accumulates
of the Conv / MatMul / Gemm work for one call at the nominal batch and resolution the caller gives.
In dry-run mode no weight is drawn, so counting the full-size SDXL UNet takes well under a second.

Dtypes: `store` is the dtype of the weights, inputs and outputs (float32 or float16); `compute` is
the dtype the nodes compute in. A real fp16 export computes in fp16 (compute == store); for the CPU
(whose provider lacks fp16 kernels for Conv, LayerNormalization and others) the small fp16
pipelines keep fp16 weights and tensors at the boundary and compute in fp32 behind Cast nodes,
which ONNX Runtime folds once at load.

Weights are fixed-seed random (numpy PCG64, one stream per model), scaled by 1/sqrt(fan-in).
Large models are written with their weights streamed into one external-data file as they are
drawn, so memory stays at one tensor whatever the model's size.
"""

import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
F32, F16, I32, I64 = TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.INT32, TensorProto.INT64
NP = {F32: np.float32, F16: np.float16}
TWO_GB = 2 * 1024 ** 3


class Graph:
    """One model under construction. Thread-unsafe; one per model."""

    def __init__(self, name, seed, store=F32, compute=F32, dry=False):
        self.name = name
        self.rng = np.random.default_rng(seed)
        self.store, self.compute, self.dry = store, compute, dry
        self.nodes, self.inits, self.inputs, self.outputs = [], [], [], []
        self.count = 0
        self.params = 0
        self.macs = 0
        self.weight_bytes = 0
        self.sink = None  # (file, location) while streaming weights to external data

    # -- names and nodes ------------------------------------------------------------------------
    def fresh(self, prefix):
        self.count += 1
        return "/%s_%d" % (prefix, self.count)

    def op(self, op_type, inputs, n_out=1, **attrs):
        outs = [self.fresh(op_type)] if n_out == 1 else [self.fresh(op_type) for _ in range(n_out)]
        self.nodes.append(helper.make_node(op_type, inputs, outs, name=outs[0] + "_node", **attrs))
        return outs[0] if n_out == 1 else outs

    def op_to(self, op_type, inputs, output, **attrs):
        self.nodes.append(helper.make_node(op_type, inputs, [output], name=output + "_node",
                                           **attrs))
        return output

    # -- constants ------------------------------------------------------------------------------
    def ints(self, values):
        name = self.fresh("const_i64")
        self.inits.append(numpy_helper.from_array(np.array(values, dtype=np.int64), name))
        return name

    def const(self, value, dtype=None):
        """A compute-dtype constant (an attribute-like value, not a parameter)."""
        name = self.fresh("const")
        arr = np.array(value, dtype=NP[dtype if dtype is not None else self.compute])
        self.inits.append(numpy_helper.from_array(arr, name))
        return name

    # -- weights --------------------------------------------------------------------------------
    def weight(self, name, shape, scale=None, fill=None):
        """A parameter: drawn N(0, scale) (default 1/sqrt(fan-in)) or constant `fill`."""
        name = name or self.fresh("w")
        n = int(np.prod(shape))
        self.params += n
        self.weight_bytes += n * (2 if self.store == F16 else 4)
        if self.dry:
            return name
        if fill is not None:
            value = np.full(shape, fill, dtype=np.float32)
        else:
            if scale is None:
                fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else shape[0]
                scale = 1.0 / np.sqrt(max(1, fan_in))
            value = self.rng.standard_normal(shape, dtype=np.float32) * np.float32(scale)
        value = value.astype(NP[self.store])
        self._add_weight(name, value)
        if self.store != self.compute:
            return self.op("Cast", [name], to=self.compute)
        return name

    def _add_weight(self, name, value):
        if self.sink is None or value.nbytes < 1024:
            self.inits.append(numpy_helper.from_array(value, name))
            return
        f, location = self.sink
        offset = f.tell()
        data = value.tobytes()
        f.write(data)
        pad = (-f.tell()) % 64  # aligned like onnx's own external-data writer
        f.write(b"\0" * pad)
        t = TensorProto()
        t.name = name
        t.data_type = self.store
        t.dims.extend(value.shape)
        t.data_location = TensorProto.EXTERNAL
        for k, v in (("location", location), ("offset", str(offset)), ("length", str(len(data)))):
            e = t.external_data.add()
            e.key, e.value = k, v
        self.inits.append(t)

    def stream_weights_to(self, path, location):
        """Weights drawn from now on go to `path` (named `location` in the model)."""
        if not self.dry:
            self.sink = (open(path, "wb"), location)

    # -- boundary -------------------------------------------------------------------------------
    def float_input(self, name, shape, dtype=None):
        dtype = self.store if dtype is None else dtype
        self.inputs.append(helper.make_tensor_value_info(name, dtype, shape))
        return name if dtype == self.compute else self.op("Cast", [name], to=self.compute)

    def raw_input(self, name, dtype, shape):
        self.inputs.append(helper.make_tensor_value_info(name, dtype, shape))
        return name

    def float_output(self, value, name, shape, dtype=None):
        dtype = self.store if dtype is None else dtype
        if dtype == self.compute:
            self.op_to("Identity", [value], name)
        else:
            self.op_to("Cast", [value], name, to=dtype)
        self.outputs.append(helper.make_tensor_value_info(name, dtype, shape))

    # -- layers (torch.onnx export shapes) ------------------------------------------------------
    def linear(self, x, prefix, n_in, n_out, rows, bias=True, scale=None):
        """x [..., n_in] @ W [n_in, n_out] (+ b); `rows` = product of the leading dims (MACs)."""
        self.macs += rows * n_in * n_out
        w = self.weight(prefix + ".weight", [n_in, n_out], scale)
        y = self.op("MatMul", [x, w])
        if bias:
            y = self.op("Add", [self.weight(prefix + ".bias", [n_out], fill=0.0), y])
        return y

    def conv(self, x, prefix, c_in, c_out, k, out_hw, batch, stride=1, scale=None):
        self.macs += batch * c_out * out_hw[0] * out_hw[1] * c_in * k * k
        w = self.weight(prefix + ".weight", [c_out, c_in, k, k], scale)
        b = self.weight(prefix + ".bias", [c_out], fill=0.0)
        p = k // 2
        return self.op("Conv", [x, w, b], kernel_shape=[k, k], pads=[p, p, p, p],
                       strides=[stride, stride])

    def group_norm(self, x, prefix, channels, groups=32, eps=1e-5):
        """torch's GroupNorm at opset < 18: Reshape, InstanceNormalization, Reshape, Mul, Add."""
        g = self.op("Reshape", [x, self.ints([0, groups, -1])])
        ones, zeros = self.const(np.ones(groups)), self.const(np.zeros(groups))
        n = self.op("InstanceNormalization", [g, ones, zeros], epsilon=eps)
        n = self.op("Reshape", [n, self.op("Shape", [x])])
        gamma = self.weight(prefix + ".weight", [channels, 1, 1], fill=1.0)
        beta = self.weight(prefix + ".bias", [channels, 1, 1], fill=0.0)
        return self.op("Add", [self.op("Mul", [n, gamma]), beta])

    def layer_norm(self, x, prefix, dim, eps=1e-5):
        return self.op("LayerNormalization", [x, self.weight(prefix + ".weight", [dim], fill=1.0),
                                              self.weight(prefix + ".bias", [dim], fill=0.0)],
                       axis=-1, epsilon=eps)

    def silu(self, x):
        return self.op("Mul", [x, self.op("Sigmoid", [x])])

    def gelu(self, x):
        """Exact GELU as torch exports it at opset 17 (Erf)."""
        e = self.op("Erf", [self.op("Div", [x, self.const(np.sqrt(2.0))])])
        return self.op("Mul", [self.op("Mul", [x, self.op("Add", [e, self.const(1.0)])]),
                               self.const(0.5)])

    def quick_gelu(self, x):
        return self.op("Mul", [x, self.op("Sigmoid", [self.op("Mul", [x, self.const(1.702)])])])

    def attention(self, x, ctx, prefix, dim, ctx_dim, heads, rows_q, n_q, n_k, batch, mask=None,
                  qkv_bias=False):
        """Multi-head attention, unfused, as a plain export writes it: q/k/v projections (k and v
        from `ctx`, or from x for self-attention when ctx is None), Reshape+Transpose to heads,
        MatMul, scale, (mask), Softmax, MatMul, Transpose+Reshape back, output projection."""
        hd = dim // heads
        ctx = x if ctx is None else ctx
        q = self.linear(x, prefix + ".to_q", dim, dim, rows_q, bias=qkv_bias)
        k = self.linear(ctx, prefix + ".to_k", ctx_dim, dim, batch * n_k, bias=qkv_bias)
        v = self.linear(ctx, prefix + ".to_v", ctx_dim, dim, batch * n_k, bias=qkv_bias)
        split = self.ints([0, -1, heads, hd])
        q = self.op("Transpose", [self.op("Reshape", [q, split])], perm=[0, 2, 1, 3])
        k = self.op("Transpose", [self.op("Reshape", [k, split])], perm=[0, 2, 3, 1])
        v = self.op("Transpose", [self.op("Reshape", [v, split])], perm=[0, 2, 1, 3])
        s = self.op("Mul", [self.op("MatMul", [q, k]), self.const(1.0 / np.sqrt(hd))])
        if mask is not None:
            s = self.op("Add", [s, mask])
        a = self.op("MatMul", [self.op("Softmax", [s], axis=-1), v])
        self.macs += 2 * batch * heads * n_q * n_k * hd
        a = self.op("Reshape", [self.op("Transpose", [a], perm=[0, 2, 1, 3]),
                                self.ints([0, -1, dim])])
        return self.linear(a, prefix + ".to_out.0", dim, dim, rows_q, scale=0.5 / np.sqrt(dim))

    # -- output ---------------------------------------------------------------------------------
    def model(self, producer="truegreen-gen-sd"):
        graph = helper.make_graph(self.nodes, self.name, self.inputs, self.outputs, self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                                  producer_name=producer)
        model.ir_version = 8
        return model

    def save(self, folder):
        """Writes folder/model.onnx (its weights already streamed, when streaming was on)."""
        external = self.sink is not None
        if external:
            self.sink[0].close()
            self.sink = None
        model = self.model()
        path = os.path.join(folder, "model.onnx")
        if not external:
            onnx.checker.check_model(model)
        with open(path, "wb") as f:
            f.write(model.SerializeToString())
        if external:
            onnx.checker.check_model(path)  # by path: it finds the external file beside it
        return path
