#!/usr/bin/python3
"""Writes tests/models/quant: a small CNN in float and in QDQ form, with
onnxruntime's outputs on the QDQ models (the reference the ctest compares
Kiln's with, in steps of the output's scale).

    make_quant_models.py OUT_DIR [--kiln-python BUILD/python]

The CNN has every pattern fuse_qdq takes (Conv + Relu, Conv + Relu6 (Clip),
a depthwise Conv at stride 2, a pointwise Conv, a residual Add, MaxPool,
GlobalAveragePool, Gemm) on a 1x3x32x32 input, random weights with a fixed
seed. Writes cnn.onnx, cnn.input.npy, and for each of qdq_u8 (uint8
activations, per-channel int8 weights) and qdq_s8 (int8 activations,
per-tensor weights): cnn_<form>.onnx, cnn_<form>.ort.npy (onnxruntime-node's
output, bench/ort_run.js) and cnn_<form>.scale.txt (the output's scale);
and qadd_ms.onnx, onnxruntime's com.microsoft QLinearAdd alone, with its
inputs (qadd_ms.a.npy, qadd_ms.b.npy) and onnxruntime's output.
Uses python3-torch, tools/models/quantize_qdq.py (Kiln's Python module for
the calibration) and node with bench/node_modules/onnxruntime-node.
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import torch
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = torch.nn.Conv2d(3, 16, 3, stride=2, padding=1)
        self.dw = torch.nn.Conv2d(16, 16, 3, stride=2, padding=1, groups=16)
        self.pw = torch.nn.Conv2d(16, 24, 1)
        self.res = torch.nn.Conv2d(24, 24, 3, padding=1)
        self.pool = torch.nn.MaxPool2d(2)
        self.head = torch.nn.Conv2d(24, 32, 3, padding=1)
        self.fc = torch.nn.Linear(32, 10)

    def forward(self, x):
        x = torch.relu(self.stem(x))
        x = torch.nn.functional.relu6(self.dw(x))
        x = self.pw(x)
        x = x + torch.relu(self.res(x))
        x = self.pool(x)
        x = torch.relu(self.head(x))
        x = torch.nn.functional.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.fc(x)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "tests", "models", "quant")
    kiln_python = sys.argv[sys.argv.index("--kiln-python") + 1] if "--kiln-python" in sys.argv else \
        os.path.join(ROOT, "build", "python")
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(7)
    net = Net().eval()
    x = torch.randn(1, 3, 32, 32)
    float_path = os.path.join(out, "cnn.onnx")
    torch.onnx.export(net, x, float_path, input_names=["input"], output_names=["logits"], opset_version=13)
    np.save(os.path.join(out, "cnn.input.npy"), x.numpy())
    with tempfile.TemporaryDirectory() as calib:
        rng = np.random.default_rng(3)
        for i in range(16):
            np.save(os.path.join(calib, "c%02d.npy" % i), rng.standard_normal((1, 3, 32, 32)).astype(np.float32))
        for form, extra in (("qdq_u8", []), ("qdq_s8", ["--activations", "int8", "--per-tensor-weights"])):
            path = os.path.join(out, "cnn_%s.onnx" % form)
            subprocess.run([sys.executable, os.path.join(HERE, "quantize_qdq.py"), float_path, path, "--calib", calib,
                            "--kiln-python", kiln_python] + extra, check=True)
            with tempfile.TemporaryDirectory() as ort_out:
                subprocess.run(["node", os.path.join(ROOT, "bench", "ort_run.js"), path, ort_out,
                                os.path.join(out, "cnn.input.npy")], check=True)
                y = np.load(os.path.join(ort_out, "cnn.input.npy"))
            np.save(os.path.join(out, "cnn_%s.ort.npy" % form), y)
            m = onnx.load(path)
            inits = {i.name: numpy_helper.to_array(i) for i in m.graph.initializer}
            dq = next(n for n in m.graph.node if n.output[0] == m.graph.output[0].name)
            with open(os.path.join(out, "cnn_%s.scale.txt" % form), "w") as f:
                f.write("%.9g\n" % float(inits[dq.input[1]].reshape(-1)[0]))
    write_ms_qlinear_add(out)
    print("make_quant_models: wrote", out)


def write_ms_qlinear_add(out):
    """qadd_ms.onnx: onnxruntime's com.microsoft QLinearAdd (the QOperator
    form) on two uint8 inputs [1, 8, 6, 6], with onnxruntime's output."""
    out = os.path.abspath(out)
    from onnx import helper, TensorProto
    init = [numpy_helper.from_array(np.array(v, dtype=t), n) for n, v, t in
            [("a_s", 0.031, np.float32), ("a_z", 121, np.uint8), ("b_s", 0.017, np.float32),
             ("b_z", 130, np.uint8), ("c_s", 0.043, np.float32), ("c_z", 99, np.uint8)]]
    node = helper.make_node("QLinearAdd", ["a", "a_s", "a_z", "b", "b_s", "b_z", "c_s", "c_z"], ["c"],
                            domain="com.microsoft", name="qadd")
    shape = [1, 8, 6, 6]
    g = helper.make_graph([node], "qadd_ms", [helper.make_tensor_value_info("a", TensorProto.UINT8, shape),
                                              helper.make_tensor_value_info("b", TensorProto.UINT8, shape)],
                          [helper.make_tensor_value_info("c", TensorProto.UINT8, shape)], init)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("com.microsoft", 1)])
    path = os.path.join(out, "qadd_ms.onnx")
    onnx.save(m, path)
    rng = np.random.default_rng(9)
    a = rng.integers(0, 256, shape, dtype=np.uint8)
    b = rng.integers(0, 256, shape, dtype=np.uint8)
    np.save(os.path.join(out, "qadd_ms.a.npy"), a)
    np.save(os.path.join(out, "qadd_ms.b.npy"), b)
    script = ("const ort=require('onnxruntime-node');const {readNpy,writeNpy}=require('%s');"
              "(async()=>{const s=await ort.InferenceSession.create('%s');const f=(p)=>{const t=readNpy(p);"
              "return new ort.Tensor(t.dtype,t.data,t.shape)};const r=await s.run({a:f('%s'),b:f('%s')});"
              "writeNpy('%s','uint8',r.c.data,r.c.dims)})()") % (
        os.path.join(ROOT, "bench", "npy.js"), path, os.path.join(out, "qadd_ms.a.npy"),
        os.path.join(out, "qadd_ms.b.npy"), os.path.join(out, "qadd_ms.ort.npy"))
    subprocess.run(["node", "-e", script], check=True, cwd=os.path.join(ROOT, "bench"))


if __name__ == "__main__":
    main()
