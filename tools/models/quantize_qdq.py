#!/usr/bin/python3
"""Post-training static quantization of a float ONNX model to QDQ format.

    quantize_qdq.py MODEL.onnx OUT.onnx --calib DIR [--count N] [--activations uint8|int8]
                    [--per-tensor-weights] [--kiln-python BUILD/python]

The result is the form onnxruntime's quantizer writes and Kiln's fuse_qdq
pass turns into integer ops:
  - activations: each input of a Conv / Gemm / MatMul and each output of the
    ops below gets QuantizeLinear -> DequantizeLinear, per tensor, uint8
    asymmetric (or int8), its range the min / max over the calibration
    inputs (always including 0). A Conv, Gemm or Add whose only reader is a
    Relu or Clip is quantized after the activation, as one unit;
  - weights of Conv / Gemm / MatMul: int8, symmetric, per output channel
    (axis 0 of a Conv's weights, the output axis of a Gemm's / MatMul's);
  - biases: int32 at scale x_scale * w_scale, zero point 0.
Graph outputs such ops write are quantized too (Q -> DQ before the output,
which keeps its name and stays float), so that two runtimes' results on the
model can be compared in steps of its scale; --float-outputs keeps them as
they are.

Calibration runs the float model with Kiln's Python module (`make python`;
--kiln-python names the directory holding the `kiln` package) on the .npy
files of DIR (sorted; the first --count), one input each for single-input
models, else NAME.*.npy per input name.
"""
import argparse
import glob
import os
import sys
import tempfile

import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto

# Ops whose outputs are quantized (when the output is not a graph output).
OUTPUT_OPS = {"Conv", "Gemm", "MatMul", "Add", "Relu", "Clip", "MaxPool", "AveragePool", "GlobalAveragePool",
              "Concat", "Sigmoid", "HardSigmoid", "HardSwish", "Mul", "LeakyRelu"}
WEIGHT_OPS = {"Conv", "Gemm", "MatMul"}
ACTIVATIONS = {"Relu", "Clip"}


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("model")
    p.add_argument("out")
    p.add_argument("--calib", required=True, help="directory of calibration .npy inputs")
    p.add_argument("--count", type=int, default=32)
    p.add_argument("--activations", choices=["uint8", "int8"], default="uint8")
    p.add_argument("--per-tensor-weights", action="store_true")
    p.add_argument("--float-outputs", action="store_true", help="leave graph outputs unquantized")
    p.add_argument("--kiln-python", default=os.path.join(os.path.dirname(__file__), "..", "..", "build", "python"))
    return p.parse_args()


def consumers_of(graph):
    uses = {}
    for node in graph.node:
        for t in node.input:
            if t:
                uses.setdefault(t, []).append(node)
    return uses


def float_tensors(model):
    """The names of the f32 tensors (onnx shape inference; shape and index
    arithmetic in int64 is never quantized)."""
    inferred = onnx.shape_inference.infer_shapes(model)
    g = inferred.graph
    return {v.name for v in list(g.input) + list(g.value_info) + list(g.output)
            if v.type.tensor_type.elem_type == TensorProto.FLOAT}


def activation_tensors(model, float_outputs):
    """The float tensors to quantize, in a stable order."""
    g = model.graph
    inits = {i.name for i in g.initializer}
    outputs = {o.name for o in g.output} if float_outputs else set()
    floats = float_tensors(model)
    uses = consumers_of(g)
    chosen = []

    def add(t):
        if t and t in floats and t not in inits and t not in outputs and t not in chosen:
            chosen.append(t)

    for node in g.node:
        if node.op_type in WEIGHT_OPS:
            add(node.input[0])
            if node.op_type == "MatMul" and node.input[1] not in inits:
                add(node.input[1])
        if node.op_type in OUTPUT_OPS:
            out = node.output[0]
            readers = uses.get(out, [])
            if node.op_type in ("Conv", "Gemm", "Add") and len(readers) == 1 and readers[0].op_type in ACTIVATIONS \
                    and out not in outputs:
                continue  # quantized after its activation
            add(out)
    return chosen


def calibrate(model, tensors, args):
    sys.path.insert(0, os.path.abspath(args.kiln_python))
    import kiln  # noqa: E402  (Kiln's own Python module)

    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    have = {o.name for o in probe.graph.output}
    for t in tensors:
        if t not in have:
            probe.graph.output.append(helper.make_tensor_value_info(t, TensorProto.FLOAT, None))
    inputs = [i.name for i in model.graph.input if i.name not in {x.name for x in model.graph.initializer}]
    files = sorted(glob.glob(os.path.join(args.calib, "*.npy")))
    if len(inputs) == 1:
        samples = [{inputs[0]: np.load(f)} for f in files[: args.count]]
    else:
        first = sorted(glob.glob(os.path.join(args.calib, inputs[0] + ".*.npy")))[: args.count]
        samples = []
        for f in first:
            tag = os.path.basename(f)[len(inputs[0]) + 1:]
            samples.append({n: np.load(os.path.join(args.calib, n + "." + tag)) for n in inputs})
    if not samples:
        sys.exit("quantize_qdq: no calibration inputs in %s" % args.calib)
    lo = {t: 0.0 for t in tensors}
    hi = {t: 0.0 for t in tensors}
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = os.path.join(tmp, "probe.onnx"), os.path.join(tmp, "probe.kiln")
        onnx.save(probe, src)
        kiln.convert(src, dst)
        session = kiln.Interpreter(dst).create_session("host", threads=2)
        for k, feed in enumerate(samples):
            out = session.run(feed)
            for t in tensors:
                v = out[t]
                lo[t] = min(lo[t], float(v.min()))
                hi[t] = max(hi[t], float(v.max()))
            print("calibration %d/%d" % (k + 1, len(samples)), file=sys.stderr)
    # Graph inputs are read directly (not through the probe's outputs).
    return lo, hi


def quant_params(lo, hi, signed):
    lo, hi = min(lo, 0.0), max(hi, 0.0)
    qmin, qmax = (-128, 127) if signed else (0, 255)
    scale = (hi - lo) / (qmax - qmin) if hi > lo else 1.0
    zero = int(round(qmin - lo / scale))
    zero = max(qmin, min(qmax, zero))
    return np.float32(scale), zero


def main():
    args = parse_args()
    model = onnx.load(args.model)
    g = model.graph
    tensors = activation_tensors(model, args.float_outputs)
    graph_outputs = {o.name for o in g.output}
    input_names = {i.name for i in g.input}
    inner = [t for t in tensors if t not in input_names]
    lo, hi = calibrate(model, inner, args)
    # Graph inputs: their range from the calibration files.
    files = sorted(glob.glob(os.path.join(args.calib, "*.npy")))[: args.count]
    for t in tensors:
        if t in input_names:
            vals = [np.load(f) for f in files]
            lo[t] = min(0.0, min(float(v.min()) for v in vals))
            hi[t] = max(0.0, max(float(v.max()) for v in vals))

    signed = args.activations == "int8"
    qtype = TensorProto.INT8 if signed else TensorProto.UINT8
    npq = np.int8 if signed else np.uint8
    new_inits, new_nodes = [], []
    scale_of = {}
    rename = {}
    for t in tensors:
        s, z = quant_params(lo[t], hi[t], signed)
        scale_of[t] = float(s)
        sn, zn = t + "_scale", t + "_zero_point"
        new_inits.append(numpy_helper.from_array(np.array(s, dtype=np.float32), sn))
        new_inits.append(numpy_helper.from_array(np.array(z, dtype=npq), zn))
        # A graph output keeps its name: its producer writes t_float instead.
        src, dst = (t + "_float", t) if t in graph_outputs else (t, t + "_dq")
        new_nodes.append((t, [helper.make_node("QuantizeLinear", [src, sn, zn], [t + "_q"], name=t + "_Q"),
                              helper.make_node("DequantizeLinear", [t + "_q", sn, zn], [dst], name=t + "_DQ")]))
        if t not in graph_outputs:
            rename[t] = dst

    inits = {i.name: i for i in g.initializer}
    weight_done = {}
    nodes = []
    producers_done = set()
    # Q/DQ pairs go right after the producer (or first, for graph inputs).
    pairs = dict(new_nodes)
    for t in tensors:
        if t in input_names:
            nodes.extend(pairs[t])
            producers_done.add(t)
    for node in g.node:
        original_inputs = list(node.input)
        for k, t in enumerate(node.input):
            if t in rename:
                node.input[k] = rename[t]
        if node.op_type in WEIGHT_OPS and len(original_inputs) > 1 and original_inputs[1] in inits:
            w_name = original_inputs[1]
            x_scale = scale_of.get(original_inputs[0])
            w = numpy_helper.to_array(inits[w_name]).astype(np.float32)
            if node.op_type == "Conv":
                axis = 0
            elif node.op_type == "Gemm":
                trans_b = next((a.i for a in node.attribute if a.name == "transB"), 0)
                axis = 0 if trans_b else 1
            else:
                axis = w.ndim - 1
            if w.ndim < 2:
                axis = 0
            key = (w_name, axis)
            if key not in weight_done:
                red = tuple(d for d in range(w.ndim) if d != axis)
                amax = np.abs(w).max() if args.per_tensor_weights else np.abs(w).max(axis=red)
                ws = np.maximum(amax, 1e-12) / 127.0
                shape = [1] * w.ndim
                if not args.per_tensor_weights:
                    shape[axis] = -1
                wq = np.clip(np.round(w / ws.reshape(shape)), -127, 127).astype(np.int8)
                qn, sn, zn = w_name + "_quantized", w_name + "_scale", w_name + "_zero_point"
                new_inits.append(numpy_helper.from_array(wq, qn))
                new_inits.append(numpy_helper.from_array(ws.astype(np.float32), sn))
                new_inits.append(numpy_helper.from_array(np.zeros(ws.shape, dtype=np.int8), zn))
                attrs = [] if args.per_tensor_weights else [helper.make_attribute("axis", axis)]
                dq = helper.make_node("DequantizeLinear", [qn, sn, zn], [w_name + "_dq"], name=w_name + "_DQ")
                dq.attribute.extend(attrs)
                nodes.append(dq)
                weight_done[key] = (w_name + "_dq", ws.astype(np.float32))
            node.input[1] = weight_done[key][0]
            ws = weight_done[key][1]
            # Bias (Conv input 2, Gemm input 2 when 1-D over outputs).
            if len(original_inputs) > 2 and original_inputs[2] in inits and x_scale is not None:
                b = numpy_helper.to_array(inits[original_inputs[2]]).astype(np.float32)
                if b.ndim == 1 and (ws.size == 1 or ws.size == b.size):
                    bs = (np.float32(x_scale) * ws).astype(np.float32)
                    bq = np.round(b / bs).astype(np.int64)
                    bq = np.clip(bq, -2**31, 2**31 - 1).astype(np.int32)
                    bn = original_inputs[2] + "_quantized_" + node.name.replace("/", "_")
                    new_inits.append(numpy_helper.from_array(bq, bn))
                    new_inits.append(numpy_helper.from_array(np.broadcast_to(bs, b.shape).copy(), bn + "_scale"))
                    new_inits.append(numpy_helper.from_array(np.zeros(b.shape, dtype=np.int32), bn + "_zero_point"))
                    dq = helper.make_node("DequantizeLinear", [bn, bn + "_scale", bn + "_zero_point"], [bn + "_dq"],
                                          name=bn + "_DQ")
                    dq.attribute.extend([helper.make_attribute("axis", 0)])
                    nodes.append(dq)
                    node.input[2] = bn + "_dq"
        for k, t in enumerate(node.output):
            if t in pairs and t in graph_outputs:
                node.output[k] = t + "_float"
        nodes.append(node)
        for t in list(node.output):
            t = t[: -len("_float")] if t.endswith("_float") and t[: -len("_float")] in graph_outputs else t
            if t in pairs and t not in producers_done:
                nodes.extend(pairs[t])
                producers_done.add(t)
    # The Q nodes read the original tensors (rename applied to readers only).
    del g.node[:]
    g.node.extend(nodes)
    used = set()
    for node in g.node:
        used.update(node.input)
    kept = [i for i in g.initializer if i.name in used]
    del g.initializer[:]
    g.initializer.extend(kept + [i for i in new_inits if i.name in used])
    if not any(o.domain in ("", "ai.onnx") and o.version >= 13 for o in model.opset_import):
        for o in model.opset_import:
            if o.domain in ("", "ai.onnx"):
                o.version = 13
    onnx.checker.check_model(model)
    onnx.save(model, args.out)
    print("quantize_qdq: %d activations, %d weights -> %s" % (len(tensors), len(weight_done), args.out), file=sys.stderr)


if __name__ == "__main__":
    main()
