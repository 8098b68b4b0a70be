#!/bin/sh
# kiln-quantize end to end: the float CNN of tests/models/quant quantized
# with its calibration inputs (min / max, then entropy) must fuse every Conv
# and the residual Add,
# stay close to the float model (relative RMS error under 5%), write a model
# kiln-run runs, and refuse a calibration directory without inputs.
# usage: quantize_check.sh KILN_QUANTIZE KILN_RUN MODELS_DIR
set -eu
quantize=$1
run=$2
dir=$3
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$quantize" "$dir/cnn.onnx" --calib "$dir/calib" -o "$out/q.kiln" > "$out/log" 2> "$out/err" || { cat "$out/log" "$out/err"; exit 1; }
grep -q "QLinearConv 5, QLinearMatMul 0, QLinearAdd 1" "$out/log" || { echo "not every Conv and Add fused:"; cat "$out/log"; exit 1; }
grep -q "calibration 8/8" "$out/err" || { echo "no calibration progress:"; cat "$out/err"; exit 1; }
awk '/relative RMS error/ { for (i = 1; i <= NF; ++i) if ($i == "error") e = $(i + 1) + 0; found = 1 }
     END { if (!found || e >= 0.05) { print "relative RMS error " e; exit 1 } }' "$out/log" || { cat "$out/log"; exit 1; }
"$run" "$out/q.kiln" --input "input=$dir/cnn.input.npy" --output-dir "$out/y" > /dev/null
[ -f "$out/y/logits.npy" ] || { echo "kiln-run wrote no output"; exit 1; }
# Entropy (KL) calibration: the same fusion, close to the float model too.
"$quantize" "$dir/cnn.onnx" --calib "$dir/calib" --calibration entropy -o "$out/e.kiln" > "$out/elog" 2> "$out/eerr" ||
  { cat "$out/elog" "$out/eerr"; exit 1; }
grep -q "histograms 8/8" "$out/eerr" || { echo "no histogram pass:"; cat "$out/eerr"; exit 1; }
grep -q "QLinearConv 5, QLinearMatMul 0, QLinearAdd 1" "$out/elog" || { cat "$out/elog"; exit 1; }
awk '/relative RMS error/ { for (i = 1; i <= NF; ++i) if ($i == "error") e = $(i + 1) + 0; found = 1 }
     END { if (!found || e >= 0.05) { print "entropy: relative RMS error " e; exit 1 } }' "$out/elog" || { cat "$out/elog"; exit 1; }
mkdir "$out/empty"
if "$quantize" "$dir/cnn.onnx" --calib "$out/empty" -o "$out/x.kiln" 2> "$out/err2"; then
  echo "an empty calibration directory was accepted"; exit 1
fi
grep -q "no .npy file" "$out/err2" || { cat "$out/err2"; exit 1; }
echo "kiln-quantize ok"
