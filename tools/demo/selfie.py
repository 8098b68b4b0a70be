#!/usr/bin/env python3
"""Image side of `make demo` (Pillow + numpy from Debian).

  selfie.py prepare PHOTO INPUT.npy        # RGB, 256x256, [0, 1], NCHW [1,3,256,256]
  selfie.py overlay PHOTO MASK.npy OUT.png # tints the person, darkens the rest

MediaPipe's selfie segmentation takes a 256x256 RGB image in [0, 1] and
returns the probability that each pixel belongs to a person.
"""
import sys

import numpy as np
from PIL import Image

SIZE = 256


def prepare(photo, out):
    img = Image.open(photo).convert("RGB").resize((SIZE, SIZE), Image.BILINEAR)
    x = np.asarray(img, dtype=np.float32) / 255.0
    np.save(out, np.ascontiguousarray(x.transpose(2, 0, 1)[None]))


def overlay(photo, mask_file, out):
    img = Image.open(photo).convert("RGB")
    mask = np.load(mask_file).astype(np.float32).reshape(SIZE, SIZE)
    mask = np.asarray(Image.fromarray((np.clip(mask, 0, 1) * 255).astype(np.uint8)).resize(img.size, Image.BILINEAR),
                      dtype=np.float32)[..., None] / 255.0
    rgb = np.asarray(img, dtype=np.float32)
    person = rgb * 0.6 + np.array([40, 200, 90], np.float32) * 0.4
    background = rgb * 0.25
    Image.fromarray(np.clip(person * mask + background * (1 - mask), 0, 255).astype(np.uint8)).save(out)
    print(f"{out}: {100 * float((mask > 0.5).mean()):.1f}% of the pixels are the person")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "prepare":
        prepare(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 5 and sys.argv[1] == "overlay":
        overlay(sys.argv[2], sys.argv[3], sys.argv[4])
    else:
        sys.exit(__doc__)
