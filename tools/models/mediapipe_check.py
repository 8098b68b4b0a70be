#!/usr/bin/env python3
"""make mediapipe-check: ten MediaPipe TFLite models, fetched from npm,
converted with kiln-convert and run with kiln-run on each backend, their
outputs compared with TFLite's own (LiteRT.js, npm @litertjs/core, run in
Node: tools/models/litert_ref.mjs).

    mediapipe_check.py [--all] BUILD_DIR WORK_DIR [BACKENDS]   (BACKENDS: host,vulkan,opencl by default)

--all adds the four other standalone models of the same packages (the
landscape selfie model and three more Objectron ones, same architectures).

Needs the network the first time (npm pack / npm install into WORK_DIR), so
it is not part of `make test`. Python's standard library only. The input is
the same pseudo-random image in [0, 1) for Kiln (NCHW .npy) and LiteRT (NHWC);
the error of an output is max |kiln - tflite| / max |tflite| (Kiln's 4-D
outputs are NCHW, compared in NHWC order). Exit status 1 when a model fails
to convert or run, or an error is above the tolerance, 5e-3: most outputs
agree within 1e-5, but pose_landmark_full's segmentation logits (up to
+-1500 on this input) differ by up to 2.7e-3 from TFLite, and by 1.8e-3
between Kiln's own host and Vulkan backends: rounding differences grow
through its decoder (1e-5 in the encoder, 1.6e-3 after the last residual
block) with no single op off by more than its inputs' error.
"""
import json
import os
import re
import shutil
import struct
import subprocess
import sys

# (npm package, file in it): the ten models.
MODELS = [
    ("@mediapipe/face_detection", "face_detection_short_range.tflite"),
    ("@mediapipe/face_detection", "face_detection_full_range.tflite"),
    ("@mediapipe/face_detection", "face_detection_full_range_sparse.tflite"),  # DENSIFY
    ("@mediapipe/hands", "hand_landmark_lite.tflite"),
    ("@mediapipe/hands", "hand_landmark_full.tflite"),
    ("@mediapipe/pose", "pose_landmark_lite.tflite"),
    ("@mediapipe/pose", "pose_landmark_full.tflite"),
    ("@mediapipe/pose", "pose_landmark_heavy.tflite"),
    ("@mediapipe/selfie_segmentation", "selfie_segmentation.tflite"),
    ("@mediapipe/objectron", "object_detection_3d_chair.tflite"),
]
EXTRA = [
    ("@mediapipe/selfie_segmentation", "selfie_segmentation_landscape.tflite"),
    ("@mediapipe/objectron", "object_detection_3d_camera.tflite"),
    ("@mediapipe/objectron", "object_detection_3d_cup.tflite"),
    ("@mediapipe/objectron", "object_detection_3d_sneakers.tflite"),
]
LITERT = "@litertjs/core@2.5.3"
TOLERANCE = 5e-3


def run(cmd, **kw):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)


def fetch(work, models):
    """Each package once (npm pack: no install scripts run); its models copied to WORK."""
    npm = os.path.join(work, "npm")
    os.makedirs(npm, exist_ok=True)
    for pkg in sorted({p for p, _ in models}):
        unpacked = os.path.join(npm, pkg.replace("/", "_"))
        if not os.path.isdir(unpacked):
            r = run(["npm", "pack", "--silent", pkg], cwd=npm)
            if r.returncode != 0:
                sys.exit("npm pack %s failed (offline?):\n%s" % (pkg, r.stdout))
            tgz = os.path.join(npm, r.stdout.strip().splitlines()[-1])
            os.makedirs(unpacked)
            subprocess.run(["tar", "xzf", tgz, "-C", unpacked], check=True)
        for p, f in models:
            if p == pkg and not os.path.exists(os.path.join(work, f)):
                shutil.copy(os.path.join(unpacked, "package", f), os.path.join(work, f))
    ref = os.path.join(work, "litert")
    if not os.path.isdir(os.path.join(ref, "node_modules", "@litertjs", "core")):
        os.makedirs(ref, exist_ok=True)
        with open(os.path.join(ref, "package.json"), "w") as f:
            f.write('{"name": "kiln-litert-ref", "private": true, "type": "module"}\n')
        r = run(["npm", "install", "--ignore-scripts", "--no-audit", "--no-fund", LITERT], cwd=ref)
        if r.returncode != 0:
            sys.exit("npm install %s failed (offline?):\n%s" % (LITERT, r.stdout))
    shutil.copy(os.path.join(os.path.dirname(os.path.abspath(__file__)), "litert_ref.mjs"), ref)


# ---- .npy (float32, C order) without numpy ----

def write_npy(path, shape, values):
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }" % "".join("%d, " % d for d in shape)
    header += " " * (63 - (10 + len(header)) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        f.write(struct.pack("<%df" % len(values), *values))


def read_npy(path):
    with open(path, "rb") as f:
        data = f.read()
    major = data[6]
    hlen = struct.unpack_from("<H" if major == 1 else "<I", data, 8)[0]
    start = 10 if major == 1 else 12
    header = data[start:start + hlen].decode()
    descr = re.search(r"'descr': '([^']+)'", header).group(1)
    shape = [int(d) for d in re.search(r"'shape': \(([^)]*)\)", header).group(1).replace(",", " ").split()]
    body = data[start + hlen:]
    fmt = {"<f4": "f", "<i4": "i", "<i8": "q", "|u1": "B", "|b1": "?"}[descr]
    n = len(body) // struct.calcsize(fmt)
    return shape, [float(v) for v in struct.unpack("<%d%s" % (n, fmt), body)]


def nchw_to_nhwc(shape, v):
    n, c, h, w = shape
    return [v[((b * c + k) * h + y) * w + x] for b in range(n) for y in range(h) for x in range(w) for k in range(c)]


def image(count, seed=1):
    out, s = [], seed
    for _ in range(count):
        s = (s * 1664525 + 1013904223) & 0xFFFFFFFF
        out.append((s >> 8) / 16777216.0)
    return out


def main():
    args = sys.argv[1:]
    models = MODELS + EXTRA if "--all" in args else MODELS
    args = [a for a in args if a != "--all"]
    if len(args) < 2:
        sys.exit(__doc__)
    build, work = args[0], os.path.abspath(args[1])
    backends = (args[2] if len(args) > 2 else "host,vulkan,opencl").split(",")
    fetch(work, models)
    bindir = os.path.join(build, "bin")
    fail = 0
    print("%-40s %-9s %-8s %-22s %-22s %s" % ("model", "convert", "backend", "output", "shape (kiln)", "max rel err"))
    for pkg, f in models:
        name = f[:-len(".tflite")]
        tfl, kiln = os.path.join(work, f), os.path.join(work, name + ".kiln")
        r = run([os.path.join(bindir, "kiln-convert"), tfl, kiln])
        if r.returncode != 0:
            print("%-40s %-9s %s" % (name, "FAILED", r.stdout.strip().splitlines()[-1] if r.stdout else ""))
            fail = 1
            continue
        r = run([os.path.join(bindir, "kiln-inspect"), kiln])
        m = re.search(r"^inputs \(1\)\n\s+(\S+)\s+f32\s+\[([0-9,]+)\]", r.stdout, re.M)
        if not m:
            print("%-40s %-9s cannot read its one f32 input from kiln-inspect" % (name, "yes"))
            fail = 1
            continue
        in_name, shape = m.group(1), [int(d) for d in m.group(2).split(",")]
        count = 1
        for d in shape:
            count *= d
        x = image(count)
        npy = os.path.join(work, name + ".input.npy")
        write_npy(npy, shape, x)
        nhwc = nchw_to_nhwc(shape, x) if len(shape) == 4 else x
        raw = os.path.join(work, name + ".input.f32")
        with open(raw, "wb") as out:
            out.write(struct.pack("<%df" % len(nhwc), *nhwc))
        refdir = os.path.join(work, name + ".tflite_out")
        r = run(["node", os.path.join(work, "litert", "litert_ref.mjs"), tfl, raw, refdir])
        if r.returncode != 0:
            print("%-40s %-9s LiteRT reference failed: %s" % (name, "yes", r.stdout.strip()[-300:]))
            fail = 1
            continue
        with open(os.path.join(refdir, "meta.json")) as mf:
            meta = json.load(mf)
        refs = []
        for k, o in enumerate(meta["outputs"]):
            with open(os.path.join(refdir, "%d.f32" % k), "rb") as rf:
                b = rf.read()
            refs.append((o["name"], o["shape"], struct.unpack("<%df" % (len(b) // 4), b)))
        for backend in backends:
            outdir = os.path.join(work, name + "." + backend)
            r = run([os.path.join(bindir, "kiln-run"), kiln, "--input", "%s=%s" % (in_name, npy),
                     "--output-dir", outdir, "--backend", backend, "--threads", str(os.cpu_count() or 1)])
            if r.returncode != 0:
                why = " ".join(r.stdout.strip().splitlines()[-2:])
                print("%-40s %-9s %-8s run failed: %s" % (name, "yes", backend, why))
                fail = 1
                continue
            placement = re.search(r"^placement: (.*)$", r.stdout, re.M)
            for oname, oshape, want in refs:
                path = os.path.join(outdir, re.sub(r"[/\\:]", "_", oname) + ".npy")
                if not os.path.exists(path):
                    print("%-40s %-9s %-8s %-22s missing" % (name, "yes", backend, oname))
                    fail = 1
                    continue
                kshape, got = read_npy(path)
                if len(kshape) == 4:
                    got = nchw_to_nhwc(kshape, got)
                if len(got) != len(want):
                    err = "%d values, TFLite %d" % (len(got), len(want))
                    fail = 1
                else:
                    scale = max(max((abs(v) for v in want), default=0.0), 1e-12)
                    e = max((abs(a - b) for a, b in zip(got, want)), default=0.0) / scale
                    ok = e <= TOLERANCE
                    fail |= not ok
                    err = "%.2e%s" % (e, "" if ok else " FAIL")
                print("%-40s %-9s %-8s %-22s %-22s %s  (TFLite %s; %s)" % (
                    name, "yes", backend, oname[:22], "x".join(map(str, kshape)), err, "x".join(map(str, oshape)),
                    placement.group(1) if placement else ""))
    return fail


if __name__ == "__main__":
    sys.exit(main())
