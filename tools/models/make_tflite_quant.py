#!/usr/bin/env python3
"""Quantized TFLite models for tests/models/quant/tflite, written from scratch
(no TensorFlow): a small network with seeded random weights is evaluated in
f32 with torch on calibration inputs, each tensor's range gives its
quantization as TFLite's converter would choose it (int8: asymmetric
activations, symmetric per-channel conv weights, per-tensor fully-connected
weights, int32 biases at input scale x weight scale; uint8: everything
asymmetric per tensor; logistic and softmax outputs at 1/256), and the
graph is written as a .tflite with python3-flatbuffers.

    make_tflite_quant.py OUT_DIR [LITERT_DIR]

writes, for each model NAME, NAME.tflite and NAME.input.npy (the test input,
NCHW as Kiln takes it; its raw bytes in NHWC for TFLite in NAME.input.nhwc).
The expected outputs come from TFLite itself: with LITERT_DIR (a directory
where `npm install @litertjs/core` was run), tools/models/litert_quant_ref.mjs
runs each model with LiteRT.js in Node and writes NAME.tflite.npy (and
NAME.tflite.K.npy for output K > 0; mobile_s8's second output, `features`,
is its concatenation in NHWC). For the dynamic-range model, NAME.f32.npy is the output of the
f32 arithmetic on the dequantized weights (torch), which Kiln computes; TFLite
quantizes the activations on the fly and lands within 1e-2 of it.

Models:
  mobile_s8   float in/out, QUANTIZE -> int8 graph -> DEQUANTIZE: conv+relu6
              (stride 2), depthwise+relu6, 1x1 conv, residual ADD, PAD, VALID
              conv, MAX_POOL, HARD_SWISH, strided depthwise+relu, LOGISTIC,
              MUL, CONCATENATION, AVERAGE_POOL, RESIZE_NEAREST, MEAN, RESHAPE,
              FULLY_CONNECTED, SOFTMAX.
  mobile_u8   uint8 in/out (the classic mobilenet_v1_quant form): per-tensor
              uint8 weights with non-zero zero points, conv, depthwise, conv,
              AVERAGE_POOL, 1x1 conv classifier, RESHAPE, SOFTMAX.
  dynamic     dynamic-range: f32 activations, int8 conv and fully-connected
              weights.
"""
import os
import subprocess
import sys

import flatbuffers
import numpy as np
import torch
import torch.nn.functional as F

F32, I32, U8, I8 = 0, 2, 3, 9
NONE, RELU, RELU6 = 0, 1, 3
SAME, VALID = 0, 1
ADD, AVERAGE_POOL_2D, CONCATENATION, CONV_2D, DEPTHWISE_CONV_2D, DEQUANTIZE = 0, 1, 2, 3, 4, 6
FULLY_CONNECTED, LOGISTIC, MAX_POOL_2D, MUL, RESHAPE, SOFTMAX, PAD, MEAN = 9, 14, 17, 18, 22, 25, 34, 40
RESIZE_NEAREST, QUANTIZE, HARD_SWISH = 97, 114, 117
# BuiltinOptions union values
OPT_CONV, OPT_DW, OPT_POOL, OPT_FC, OPT_SOFTMAX, OPT_CONCAT, OPT_ADD = 1, 2, 5, 8, 9, 10, 11
OPT_RESHAPE, OPT_MUL, OPT_PAD, OPT_REDUCER, OPT_RESIZE_NN = 17, 21, 22, 27, 74


class Writer:
    """Tensors, buffers and operators of one subgraph, serialized by finish()."""

    def __init__(self):
        self.buffers = [b""]
        self.tensors = []  # (name, shape, type, buffer, quant)
        self.ops = []      # (opcode index, inputs, outputs, options type, [(slot, kind, value)])
        self.codes = []

    def tensor(self, name, shape, ttype, data=None, quant=None):
        buf = 0
        if data is not None:
            buf = len(self.buffers)
            self.buffers.append(np.ascontiguousarray(data).tobytes())
        self.tensors.append((name, list(shape), ttype, buf, quant))
        return len(self.tensors) - 1

    def op(self, code, inputs, outputs, opt_type=0, fields=()):
        if code not in self.codes:
            self.codes.append(code)
        self.ops.append((self.codes.index(code), inputs, outputs, opt_type, list(fields)))

    def finish(self, inputs, outputs):
        b = flatbuffers.Builder(1 << 16)

        def ivec(v, fmt="i"):
            b.StartVector(4 if fmt in "if" else 8, len(v), 8)
            for x in reversed(v):
                {"i": b.PrependInt32, "f": b.PrependFloat32, "q": b.PrependInt64}[fmt](x)
            return b.EndVector()

        def tvec(offs):
            b.StartVector(4, len(offs), 4)
            for o in reversed(offs):
                b.PrependUOffsetTRelative(o)
            return b.EndVector()

        def table(slots):  # [(slot, kind, value)]: 'b' byte, 'B' bool, 'i' int32, 'I' uint32, 'f' float, 'o' offset
            b.StartObject(1 + max([s for s, _, _ in slots], default=-1))
            for slot, kind, v in slots:
                {"b": b.PrependInt8Slot, "B": b.PrependBoolSlot, "i": b.PrependInt32Slot, "I": b.PrependUint32Slot,
                 "f": b.PrependFloat32Slot, "o": b.PrependUOffsetTRelativeSlot}[kind](slot, v, 0 if kind != "f" else 0.0)
            return b.EndObject()

        bufs = []
        for data in self.buffers:
            if not data:
                bufs.append(table([]))
                continue
            b.StartVector(1, len(data), 16)  # 16-byte aligned weights, as TFLite's converter writes them
            b.head -= len(data)
            b.Bytes[b.head:b.head + len(data)] = data
            bufs.append(table([(0, "o", b.EndVector())]))
        tens = []
        for name, shape, ttype, buf, quant in self.tensors:
            slots = [(0, "o", ivec(shape)), (1, "b", ttype), (2, "I", buf), (3, "o", b.CreateString(name))]
            if quant is not None:
                scale, zero, dim = quant
                q = table([(2, "o", ivec(list(scale), "f")), (3, "o", ivec(list(zero), "q")), (6, "i", dim)])
                slots.append((4, "o", q))
            tens.append(table(slots))
        ops = []
        for code, ins, outs, opt_type, fields in self.ops:
            fields = [(s, k, ivec(v) if k == "v" else v) for s, k, v in fields]
            fields = [(s, "o" if k == "v" else k, v) for s, k, v in fields]
            slots = [(0, "I", code), (1, "o", ivec(ins)), (2, "o", ivec(outs))]
            if opt_type:
                slots += [(3, "b", opt_type), (4, "o", table(fields))]
            ops.append(table(slots))
        graph = table([(0, "o", tvec(tens)), (1, "o", ivec(inputs)), (2, "o", ivec(outputs)), (3, "o", tvec(ops)),
                       (4, "o", b.CreateString("main"))])
        codes = [table([(0, "b", min(c, 127)), (2, "i", 1), (3, "i", c)]) for c in self.codes]
        model = table([(0, "I", 3), (1, "o", tvec(codes)), (2, "o", tvec([graph])),
                       (3, "o", b.CreateString("kiln make_tflite_quant.py")), (4, "o", tvec(bufs))])
        b.Finish(model, file_identifier=b"TFL3")
        return bytes(b.Output())


def act_quant(lo, hi, ttype):
    """TFLite's asymmetric activation quantization of [lo, hi] (0 included)."""
    lo, hi = min(float(lo), 0.0), max(float(hi), 0.0)
    if hi - lo < 1e-6:
        hi = lo + 1e-6
    qmin = -128 if ttype == I8 else 0
    scale = (hi - lo) / 255.0
    zero = int(np.clip(round(qmin - lo / scale), qmin, qmin + 255))
    return [np.float32(scale)], [zero], 0


class Net:
    """Builds the float graph (torch, NCHW, on calibration inputs) and the quantized TFLite graph together."""

    def __init__(self, ttype, seed, float_io):
        self.w = Writer()
        self.t = ttype  # I8 or U8 activations; F32 for dynamic range
        self.g = torch.Generator().manual_seed(seed)
        self.float_io = float_io
        self.count = 0

    def name(self, what):
        self.count += 1
        return f"{what}_{self.count}"

    def rand(self, *shape, scale=1.0):
        return torch.randn(*shape, generator=self.g) * scale

    # A TFLite activation for float value v (NCHW torch), quantized from its range unless `quant` is given.
    def act(self, v, what, quant=None):
        if v.dim() == 4:
            shape = [1, v.shape[2], v.shape[3], v.shape[1]]
        else:
            shape = [1] + list(v.shape[1:])
        if self.t == F32:
            return (v, self.w.tensor(self.name(what), shape, F32), None)
        q = quant or act_quant(v.min(), v.max(), self.t)
        return (v, self.w.tensor(self.name(what), shape, self.t, quant=q), q)

    def input(self, x):
        if self.float_io and self.t != F32:
            xf = self.w.tensor("input", [1, x.shape[2], x.shape[3], x.shape[1]], F32)
            y = self.act(x, "input_q")
            self.w.op(QUANTIZE, [xf], [y[1]])
            self.inputs = [xf]
            return y
        y = self.act(x, "input")
        self.w.tensors[y[1]] = ("input",) + self.w.tensors[y[1]][1:]
        self.inputs = [y[1]]
        return y

    def output(self, x, name="output"):
        shape = [1] + list(x[0].shape[1:]) if x[0].dim() != 4 else [1, x[0].shape[2], x[0].shape[3], x[0].shape[1]]
        if self.float_io and self.t != F32:
            out = self.w.tensor(name, shape, F32)
            self.w.op(DEQUANTIZE, [x[1]], [out])
            self.outputs = getattr(self, "outputs", []) + [out]
        else:
            self.outputs = [x[1]]
            self.w.tensors[x[1]] = ("output",) + self.w.tensors[x[1]][1:]
        return x

    @staticmethod
    def same_pad(v, k, s):
        h, w = v.shape[2], v.shape[3]
        pads = []
        for n in (w, h):
            out = -(-n // s)
            total = max((out - 1) * s + k - n, 0)
            pads += [total // 2, total - total // 2]
        return F.pad(v, pads)

    def weights(self, w, per_channel_dim, dims):
        """w (float numpy in TFLite layout) as a TFLite constant: int8 symmetric (per channel along
        per_channel_dim, or per tensor when None) or uint8 asymmetric per tensor; float for F32 nets
        whose dynamic flag is off."""
        name = self.name("weights")
        if self.t == U8:
            lo, hi = min(w.min(), 0.0), max(w.max(), 0.0)
            scale = (hi - lo) / 255.0
            zero = int(round(-lo / scale))
            q = np.clip(np.round(w / scale) + zero, 0, 255).astype(np.uint8)
            return self.w.tensor(name, w.shape, U8, q, ([np.float32(scale)], [zero], 0)), np.array([scale]), \
                (q.astype(np.float32) - zero) * np.float32(scale)
        if per_channel_dim is None:
            scales = np.array([np.abs(w).max() / 127.0], np.float32)
            q = np.clip(np.round(w / scales[0]), -127, 127).astype(np.int8)
            deq = q.astype(np.float32) * scales[0]
        else:
            axes = tuple(d for d in range(w.ndim) if d != per_channel_dim)
            scales = (np.abs(w).max(axis=axes) / 127.0).astype(np.float32)
            shape = [1] * w.ndim
            shape[per_channel_dim] = -1
            q = np.clip(np.round(w / scales.reshape(shape)), -127, 127).astype(np.int8)
            deq = q.astype(np.float32) * scales.reshape(shape)
        quant = (list(scales), [0] * len(scales), per_channel_dim or 0)
        return self.w.tensor(name, w.shape, I8, q, quant), scales, deq

    def bias(self, b, x_scale, w_scales):
        name = self.name("bias")
        if self.t == F32:
            return self.w.tensor(name, b.shape, F32, b.astype(np.float32))
        s = (np.float64(x_scale) * w_scales.astype(np.float64)).astype(np.float32)  # one scale, or one per channel
        q = np.round(b / np.broadcast_to(s, b.shape)).astype(np.int32)
        return self.w.tensor(name, b.shape, I32, q, (list(s), [0] * len(s), 0))

    def conv(self, x, cout, k, stride=1, act=NONE, depthwise=False, padding=SAME):
        v, xt, xq = x
        cin = v.shape[1]
        fan = k * k * (1 if depthwise else cin)
        w = self.rand(cout, 1 if depthwise else cin, k, k, scale=(2.0 / fan) ** 0.5).numpy()
        b = self.rand(cout, scale=0.1).numpy()
        if depthwise:  # 1HWO, per channel along 3
            wt, ws, deq = self.weights(w.transpose(1, 2, 3, 0), 3, None)
            wdeq = torch.from_numpy(np.ascontiguousarray(deq.transpose(3, 0, 1, 2)))
        else:  # OHWI, per channel along 0
            wt, ws, deq = self.weights(w.transpose(0, 2, 3, 1), 0, None)
            wdeq = torch.from_numpy(np.ascontiguousarray(deq.transpose(0, 3, 1, 2)))
        bt = self.bias(b, xq[0][0] if xq else 1.0, ws)
        vin = self.same_pad(v, k, stride) if padding == SAME else v
        y = F.conv2d(vin, wdeq, torch.from_numpy(b), stride=stride, groups=cin if depthwise else 1)
        y = torch.clamp(y, 0, 6) if act == RELU6 else F.relu(y) if act == RELU else y
        out = self.act(y, "dwconv" if depthwise else "conv")
        if depthwise:
            self.w.op(DEPTHWISE_CONV_2D, [xt, wt, bt], [out[1]], OPT_DW,
                      [(0, "b", padding), (1, "i", stride), (2, "i", stride), (3, "i", 1), (4, "b", act)])
        else:
            self.w.op(CONV_2D, [xt, wt, bt], [out[1]], OPT_CONV,
                      [(0, "b", padding), (1, "i", stride), (2, "i", stride), (3, "b", act)])
        return out

    def binary(self, code, a, b_):
        v = a[0] + b_[0] if code == ADD else a[0] * b_[0]
        out = self.act(v, "add" if code == ADD else "mul")
        self.w.op(code, [a[1], b_[1]], [out[1]], OPT_ADD if code == ADD else OPT_MUL, [(0, "b", NONE)])
        return out

    def same_params(self, v, x, what):  # ops whose output keeps the input's quantization
        return self.act(v, what, quant=x[2])

    def pool(self, code, x, k, s):
        v = F.max_pool2d(x[0], k, s) if code == MAX_POOL_2D else F.avg_pool2d(x[0], k, s)
        out = self.same_params(v, x, "pool")
        self.w.op(code, [x[1]], [out[1]], OPT_POOL,
                  [(0, "b", VALID), (1, "i", s), (2, "i", s), (3, "i", k), (4, "i", k), (5, "b", NONE)])
        return out

    def pad(self, x, p):
        v = F.pad(x[0], [p, p, p, p])
        out = self.same_params(v, x, "pad")
        pads = self.w.tensor(self.name("paddings"), [4, 2], I32, np.array([[0, 0], [p, p], [p, p], [0, 0]], np.int32))
        self.w.op(PAD, [x[1], pads], [out[1]], OPT_PAD, [])
        return out

    def unary(self, code, x):
        v = x[0]
        if code == LOGISTIC:
            v, fixed = torch.sigmoid(v), True
        else:
            v, fixed = v * torch.clamp(v + 3, 0, 6) / 6, False
        q = (([np.float32(1 / 256)], [-128 if self.t == I8 else 0], 0)) if fixed else None
        out = self.act(v, "logistic" if code == LOGISTIC else "hard_swish", quant=q)
        self.w.op(code, [x[1]], [out[1]])
        return out

    def concat(self, xs):
        v = torch.cat([x[0] for x in xs], 1)
        # TFLite's converter gives the inputs of an int8 concatenation the output's quantization:
        # requantize each input that differs with a QUANTIZE.
        q = act_quant(v.min(), v.max(), self.t)
        ins = []
        for x in xs:
            r = self.act(x[0], "requantized", quant=q)
            self.w.op(QUANTIZE, [x[1]], [r[1]])
            ins.append(r[1])
        out = self.act(v, "concat", quant=q)
        self.w.op(CONCATENATION, ins, [out[1]], OPT_CONCAT, [(0, "i", 3), (1, "b", NONE)])
        return out

    def resize_nearest(self, x, f):
        v = F.interpolate(x[0], scale_factor=f, mode="nearest")
        out = self.same_params(v, x, "resize")
        size = self.w.tensor(self.name("size"), [2], I32, np.array([v.shape[2], v.shape[3]], np.int32))
        self.w.op(RESIZE_NEAREST, [x[1], size], [out[1]], OPT_RESIZE_NN, [(0, "B", False), (1, "B", False)])
        return out

    def mean(self, x):
        v = x[0].mean(dim=(2, 3))
        out = self.act(v, "mean")
        axes = self.w.tensor(self.name("axes"), [2], I32, np.array([1, 2], np.int32))
        self.w.op(MEAN, [x[1], axes], [out[1]], OPT_REDUCER, [(0, "B", False)])
        return out

    def reshape(self, x, shape):
        v = x[0].reshape([x[0].shape[0]] + list(shape[1:]))
        out = self.same_params(v, x, "reshape")
        st = self.w.tensor(self.name("shape"), [len(shape)], I32, np.array(shape, np.int32))
        self.w.op(RESHAPE, [x[1], st], [out[1]], OPT_RESHAPE, [(0, "v", list(shape))])
        return out

    def fc(self, x, cout, act=NONE):
        v, xt, xq = x
        cin = v.shape[1]
        w = self.rand(cout, cin, scale=(1.0 / cin) ** 0.5).numpy()
        b = self.rand(cout, scale=0.1).numpy()
        wt, ws, deq = self.weights(w, None, None)
        bt = self.bias(b, xq[0][0] if xq else 1.0, ws)
        y = v @ torch.from_numpy(deq).T + torch.from_numpy(b)
        y = F.relu(y) if act == RELU else y
        out = self.act(y, "fc")
        self.w.op(FULLY_CONNECTED, [xt, wt, bt], [out[1]], OPT_FC, [(0, "b", act)])
        return out

    def softmax(self, x):
        q = ([np.float32(1 / 256)], [-128 if self.t == I8 else 0], 0)
        out = self.act(torch.softmax(x[0], 1), "softmax", quant=q)
        self.w.op(SOFTMAX, [x[1]], [out[1]], OPT_SOFTMAX, [(0, "f", 1.0)])
        return out


def mobile_s8(x):
    n = Net(I8, 1, float_io=True)
    t = n.input(x)
    t1 = n.conv(t, 16, 3, 2, RELU6)
    t2 = n.conv(t1, 16, 3, 1, RELU6, depthwise=True)
    t3 = n.conv(t2, 16, 1)
    t4 = n.binary(ADD, t1, t3)
    t5 = n.conv(n.pad(t4, 1), 24, 3, 1, NONE, padding=VALID)
    t6 = n.pool(MAX_POOL_2D, t5, 2, 2)
    t7 = n.unary(HARD_SWISH, t6)
    t8 = n.conv(t7, 24, 3, 2, RELU, depthwise=True)
    t9 = n.binary(MUL, t8, n.unary(LOGISTIC, t8))
    t10 = n.concat([t9, t8])
    t11 = n.resize_nearest(n.pool(AVERAGE_POOL_2D, t10, 2, 2), 2)
    t12 = n.mean(t11)
    t13 = n.fc(n.reshape(t12, [1, 48]), 10)
    y = n.output(n.softmax(t13))
    n.output(t10, "features")  # a second output: 768 values of the middle of the graph
    n.features_step = t10[2][0][0]
    return n, y


def mobile_u8(x):
    n = Net(U8, 2, float_io=False)
    t = n.input(x)
    t1 = n.conv(t, 16, 3, 2, RELU6)
    t2 = n.conv(t1, 16, 3, 1, RELU6, depthwise=True)
    t3 = n.conv(t2, 32, 1, 1, RELU6)
    t4 = n.conv(t3, 32, 3, 2, RELU6, depthwise=True)
    t5 = n.pool(AVERAGE_POOL_2D, t4, 8, 8)  # 8x8 -> 1x1
    t6 = n.conv(t5, 10, 1)
    t7 = n.reshape(t6, [1, 10])
    return n, n.output(n.softmax(t7))


def dynamic(x):
    n = Net(F32, 3, float_io=True)
    n.t = I8  # weights int8; activations stay f32 (act() is called with F32 below)
    t = (x, n.w.tensor("input", [1, x.shape[2], x.shape[3], x.shape[1]], F32), None)
    n.inputs = [t[1]]

    def f32(v, what):
        shape = [1, v.shape[2], v.shape[3], v.shape[1]] if v.dim() == 4 else [1] + list(v.shape[1:])
        return (v, n.w.tensor(n.name(what), shape, F32), None)
    n.act = lambda v, what, quant=None: f32(v, what)
    n.bias = lambda b, xs, ws: n.w.tensor(n.name("bias"), b.shape, F32, b.astype(np.float32))
    t1 = n.conv(t, 16, 3, 2, RELU)
    t2 = n.conv(t1, 16, 3, 1, RELU)
    t3 = n.mean(t2)
    t4 = n.fc(t3, 10)
    n.outputs = [t4[1]]
    n.w.tensors[t4[1]] = ("output",) + n.w.tensors[t4[1]][1:]
    return n, t4


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name, make, size in (("mobile_s8", mobile_s8, 32), ("mobile_u8", mobile_u8, 32), ("dynamic", dynamic, 16)):
        g = torch.Generator().manual_seed(100)
        calib = torch.rand(32, 3, size, size, generator=g) * 2 - 1
        if name == "mobile_u8":
            calib = (calib + 1) / 2  # [0, 1): an image scaled to 1/255 steps
        net, y = make(calib)
        with open(os.path.join(out, name + ".tflite"), "wb") as f:
            f.write(net.w.finish(net.inputs, net.outputs))
        x = calib[:1].numpy().astype(np.float32)  # the test input: a calibration sample
        _, _, itype, _, iq = net.w.tensors[net.inputs[0]]
        if itype == U8:
            scale, zero = iq[0][0], iq[1][0]
            x = np.clip(np.round(x / scale) + zero, 0, 255).astype(np.uint8)
        np.save(os.path.join(out, name + ".input.npy"), x)
        with open(os.path.join(out, name + ".input.nhwc"), "wb") as f:
            f.write(np.ascontiguousarray(x.transpose(0, 2, 3, 1)).tobytes())
        if hasattr(net, "features_step"):  # one quantization step of the second output
            with open(os.path.join(out, name + ".features.scale.txt"), "w") as f:
                f.write("%.9g\n" % net.features_step)
        if name == "dynamic":  # f32 arithmetic with the dequantized weights: what Kiln computes
            np.save(os.path.join(out, name + ".f32.npy"), y[0][:1].numpy().astype(np.float32))
        print(name, "ops", len(net.w.ops), "tensors", len(net.w.tensors))
        if len(sys.argv) > 2:
            path = os.path.join(out, name)
            subprocess.run(["node", os.path.join(os.path.dirname(os.path.abspath(__file__)), "litert_quant_ref.mjs"),
                            sys.argv[2], path + ".tflite", path + ".input.nhwc", path + ".tflite.npy"], check=True,
                           stderr=subprocess.DEVNULL)


if __name__ == "__main__":
    main()
