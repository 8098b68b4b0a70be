#!/usr/bin/python3
"""ImageNet-style inputs from pictures: crops and flips, normalized.

    make_images.py OUT_DIR PICTURE... [--count 200] [--size 224] [--seed 1]

Writes OUT_DIR/img_000.npy ... (float32, 1x3xSIZExSIZE, RGB, ImageNet's
mean and std) and OUT_DIR/sources.txt (which picture, crop box and flip each
came from). Pictures are cycled; each image is a random crop of 30-100% of
the picture's shorter side at a random place, resized, flipped half the time
(deterministic for a seed). Grey pictures become three equal channels.
The test pictures that `make demo` unpacks from Debian's python3-skimage
(skimage/data: astronaut, chelsea, coffee, rocket, ...) serve well.
"""
import argparse
import os

import numpy as np
from PIL import Image

MEAN = np.array([0.485, 0.456, 0.406], dtype=np.float32).reshape(3, 1, 1)
STD = np.array([0.229, 0.224, 0.225], dtype=np.float32).reshape(3, 1, 1)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out")
    p.add_argument("pictures", nargs="+")
    p.add_argument("--count", type=int, default=200)
    p.add_argument("--size", type=int, default=224)
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    rng = np.random.default_rng(a.seed)
    pics = [Image.open(f).convert("RGB") for f in a.pictures]
    lines = []
    for i in range(a.count):
        k = i % len(pics)
        img = pics[k]
        w, h = img.size
        side = int(min(w, h) * rng.uniform(0.3, 1.0))
        x0 = int(rng.integers(0, w - side + 1))
        y0 = int(rng.integers(0, h - side + 1))
        crop = img.crop((x0, y0, x0 + side, y0 + side)).resize((a.size, a.size), Image.BILINEAR)
        flip = bool(rng.integers(0, 2))
        if flip:
            crop = crop.transpose(Image.FLIP_LEFT_RIGHT)
        x = np.asarray(crop, dtype=np.float32).transpose(2, 0, 1) / 255.0
        x = ((x - MEAN) / STD)[None].astype(np.float32)
        np.save(os.path.join(a.out, "img_%03d.npy" % i), x)
        lines.append("img_%03d.npy %s box=%d,%d,%d flip=%d" % (i, os.path.basename(a.pictures[k]), x0, y0, side, flip))
    with open(os.path.join(a.out, "sources.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
