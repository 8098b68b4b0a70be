#!/usr/bin/env python3
"""Segment a photo with MediaPipe's selfie segmentation model, through the
kiln Python module, on every backend this machine has.

A notebook-style script: each `# %%` starts a cell (VS Code, Jupyter's
jupytext, Spyder and PyCharm run them one by one), and the whole file runs as
a plain script too:

    make demo                                  # fetches the model and the photo once
    PYTHONPATH=build/python python3 examples/python/segment_photo.py

It uses exactly the files `make demo` prepares (tools/demo.sh steps 7-9) and
fetches nothing itself: when they are missing it says to run `make demo` and
exits 0. The overlays are written to build/demo/python/.

Environment: KILN_DEMO_DIR (default build/demo) is where `make demo` put its
files; KILN_BUILD_DIR (default build) is where the kiln module is looked for
when it is not importable already.
"""

# %% [markdown]
# ## 1. Where things are
#
# Paths are relative to the repository root (two levels above this file), so
# the script runs from any working directory.

# %%
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("KILN_BUILD_DIR", os.path.join(ROOT, "build"))
DEMO = os.environ.get("KILN_DEMO_DIR", os.path.join(BUILD, "demo"))

# What `make demo` downloads: the model from npm (@mediapipe/selfie_segmentation)
# and scikit-image's astronaut photo from its Debian package.
MODEL_TFLITE = os.path.join(DEMO, "mediapipe", "package", "selfie_segmentation.tflite")
PHOTO = os.path.join(DEMO, "mediapipe", "astronaut.png")
OUT_DIR = os.path.join(DEMO, "python")

missing = [p for p in (MODEL_TFLITE, PHOTO) if not os.path.isfile(p)]
if missing:
    # Not an error: this example only uses what `make demo` fetched.
    print("segment_photo.py: the demo files are missing (" + ", ".join(missing) + ");\n"
          "run make demo first (it downloads the model and the photo once), then run this again.")
    sys.exit(0)

# %% [markdown]
# ## 2. Import kiln and the image libraries
#
# The module is built into build/python/kiln (`make` or `cmake --build build
# --target kiln_python`); `pip install .` installs it instead. If it is not
# importable yet, the build tree's copy is used. Pillow is Debian's
# python3-pil (tools/setup/debian-packages-demo.txt).

# %%
try:
    import kiln
except ImportError:
    sys.path.insert(0, os.path.join(BUILD, "python"))
    import kiln

import numpy as np
from PIL import Image

# %% [markdown]
# ## 3. Convert the TFLite model to .kiln
#
# kiln.convert does what the kiln-convert tool does: it imports the TFLite
# graph, runs the graph passes (optimize=True) and writes a .kiln file, then
# checks that the file loads. 4-D TFLite tensors become NCHW, so the input is
# [1, 3, 256, 256] here (TFLite's is [1, 256, 256, 3]).

# %%
os.makedirs(OUT_DIR, exist_ok=True)
MODEL_KILN = os.path.join(OUT_DIR, "selfie.kiln")
report = kiln.convert(MODEL_TFLITE, MODEL_KILN)
print(report["summary"])  # the same text kiln-convert prints

# %% [markdown]
# ## 4. What the model takes and returns
#
# kiln.inspect gives the inputs and outputs (name, shape, dtype), the ops by
# type and the weight bytes, as `python -m kiln inspect` prints them.

# %%
info = kiln.inspect(MODEL_KILN)
for what in ("inputs", "outputs"):
    for name, io in info[what].items():
        print(f"{what[:-1]} {name}: {io['dtype']} {io['shape']}")
print(f"{info['ops']} ops, {info['weight_bytes']} weight bytes")
(INPUT_NAME,) = info["inputs"]    # input_1
(OUTPUT_NAME,) = info["outputs"]  # activation_10: the person probability per pixel
SIZE = info["inputs"][INPUT_NAME]["shape"][2]  # 256

# %% [markdown]
# ## 5. Prepare the input
#
# As tools/demo/selfie.py does: RGB, resized to 256x256, values in [0, 1],
# channels first (NCHW), float32 and C-contiguous.

# %%
photo = Image.open(PHOTO).convert("RGB")
x = np.asarray(photo.resize((SIZE, SIZE), Image.BILINEAR), dtype=np.float32) / 255.0
x = np.ascontiguousarray(x.transpose(2, 0, 1)[None])  # HWC -> 1x3xHxW
print(f"{PHOTO}: {photo.size[0]}x{photo.size[1]} -> input {x.shape} in [{x.min():.2f}, {x.max():.2f}]")

# %% [markdown]
# ## 6. Run it on every device
#
# kiln.devices() lists the host and each Vulkan and OpenCL device found (on a
# machine without a GPU, lavapipe and PoCL are CPU implementations of those
# APIs). One Interpreter loads the model; a session per device runs it. Ops a
# GPU backend cannot take run on the host: session.placement says which and why.

# %%
interp = kiln.Interpreter(MODEL_KILN)
results = {}
for dev in kiln.devices():
    label = dev["backend"] if dev["index"] is None else f"{dev['backend']}{dev['index']}"
    session = interp.create_session(backend=dev["backend"],
                                    device_index=-1 if dev["index"] is None else dev["index"],
                                    threads=os.cpu_count() or 1)
    mask = session.run({INPUT_NAME: x})[OUTPUT_NAME]
    results[label] = mask
    print(f"{label}: {dev['name']}")
    print("  " + session.placement.splitlines()[0])

# %% [markdown]
# ## 7. Compare the backends with the host
#
# The host is the reference. GPU backends reorder float sums and may use other
# math, so small differences (around 1e-5 to 1e-3 on a probability) are
# expected; a large one would be a bug.

# %%
host = results["host"]
for label, mask in results.items():
    if label != "host":
        print(f"{label} vs host: max abs diff {float(np.abs(mask - host).max()):.2e}")

# %% [markdown]
# ## 8. Overlay the segmentation on the photo
#
# The 256x256 mask is scaled up to the photo's size; the person is tinted
# green and the background darkened (as tools/demo/selfie.py's overlay).

# %%
def overlay(photo, mask, out):
    m = np.clip(mask.reshape(SIZE, SIZE), 0, 1)
    m = Image.fromarray((m * 255).astype(np.uint8)).resize(photo.size, Image.BILINEAR)
    m = np.asarray(m, dtype=np.float32)[..., None] / 255.0
    rgb = np.asarray(photo, dtype=np.float32)
    person = rgb * 0.6 + np.array([40, 200, 90], np.float32) * 0.4
    background = rgb * 0.25
    Image.fromarray(np.clip(person * m + background * (1 - m), 0, 255).astype(np.uint8)).save(out)
    print(f"{out}: {100 * float((m > 0.5).mean()):.1f}% of the pixels are the person")


for label, mask in results.items():
    overlay(photo, mask, os.path.join(OUT_DIR, f"selfie_{label}.png"))
