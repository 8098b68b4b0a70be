#!/usr/bin/python3
"""Accuracy of a QDQ model on Kiln against its float model and onnxruntime.

    eval_quant.py FLOAT.onnx QDQ.onnx IMAGES_DIR [--backend host] [--threads 2]
                  [--kiln-python BUILD/python] [--json OUT.json] [--ort-optimize all|disabled]

For every .npy input in IMAGES_DIR (make_images.py writes them):
  - top-1 of Kiln on the QDQ model against Kiln on the float model
    (the quantization's effect on the classification);
  - Kiln's QDQ output against onnxruntime-node's on the same QDQ model
    (bench/ort_run.js), in steps of the output's quantization scale (the
    graph output's DequantizeLinear, which quantize_qdq.py writes); with
    --ort-optimize disabled against onnxruntime running the QDQ nodes as
    written, not its fused int8 kernels.
Prints one line per measure; exits 1 when Kiln's and onnxruntime's outputs
differ by more than one step anywhere.
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def output_scale(path):
    m = onnx.load(path)
    out = m.graph.output[0].name
    inits = {i.name: numpy_helper.to_array(i) for i in m.graph.initializer}
    for n in m.graph.node:
        if out in n.output and n.op_type == "DequantizeLinear":
            return float(inits[n.input[1]].reshape(-1)[0])
    return None


def kiln_outputs(kiln, model, files, backend, threads, tmp):
    dst = os.path.join(tmp, os.path.basename(model) + ".kiln")
    kiln.convert(model, dst)
    interp = kiln.Interpreter(dst)
    session = interp.create_session(backend, threads=threads)
    name = None
    outs = []
    for f in files:
        x = np.load(f)
        r = session.run({session.input_names[0]: x})
        if name is None:
            name = sorted(r)[0]
        outs.append(r[name].reshape(-1))
    return np.stack(outs), interp, session


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("float_model")
    p.add_argument("qdq_model")
    p.add_argument("images")
    p.add_argument("--backend", default="host")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--kiln-python", default=os.path.join(ROOT, "build", "python"))
    p.add_argument("--json")
    p.add_argument("--ort-optimize", default="all", choices=["all", "disabled"],
                   help="onnxruntime's graph optimizations: 'disabled' runs the QDQ nodes as written")
    a = p.parse_args()
    sys.path.insert(0, os.path.abspath(a.kiln_python))
    import kiln  # noqa: E402

    files = sorted(glob.glob(os.path.join(a.images, "*.npy")))
    if not files:
        sys.exit("eval_quant: no .npy inputs in " + a.images)
    with tempfile.TemporaryDirectory() as tmp:
        kf, _, _ = kiln_outputs(kiln, a.float_model, files, a.backend, a.threads, tmp)
        kq, interp, session = kiln_outputs(kiln, a.qdq_model, files, a.backend, a.threads, tmp)
        qlinear = sum(1 for op in session.ops if op.type == "QLinearConv")
        ort_dir = os.path.join(tmp, "ort")
        subprocess.run(["node", os.path.join(ROOT, "bench", "ort_run.js"), a.qdq_model, ort_dir] + files +
                       ["--optimize", a.ort_optimize], check=True)
        oq = np.stack([np.load(os.path.join(ort_dir, os.path.basename(f))).reshape(-1) for f in files])
    top1 = float(np.mean(np.argmax(kf, 1) == np.argmax(kq, 1)))
    ort_top1 = float(np.mean(np.argmax(kf, 1) == np.argmax(oq, 1)))
    scale = output_scale(a.qdq_model)
    diff = np.abs(kq - oq)
    steps = diff / scale if scale else diff
    res = {
        "model": os.path.basename(a.qdq_model), "backend": a.backend, "images": len(files),
        "top1_kiln_int8_vs_float": top1, "top1_ort_int8_vs_kiln_float": ort_top1,
        "output_scale": scale, "max_steps_vs_ort": float(steps.max()),
        "fraction_differing_vs_ort": float(np.mean(diff > 0)), "qlinearconv_ops": qlinear,
    }
    print("%s on %s, %d images: top-1 equal to the float model's %.1f%% (onnxruntime's QDQ run: %.1f%%); "
          "against onnxruntime on the QDQ model: max %.3g steps of %.4g, %.2f%% of values differ" %
          (res["model"], a.backend, len(files), 100 * top1, 100 * ort_top1, res["max_steps_vs_ort"], scale or 0,
           100 * res["fraction_differing_vs_ort"]))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)
    # One step, with room for the float rounding of scale * (q - zero).
    sys.exit(0 if res["max_steps_vs_ort"] <= 1.0 + 1e-4 else 1)


if __name__ == "__main__":
    main()
