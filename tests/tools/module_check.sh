#!/bin/sh
# kiln-compile --emit-module end to end: host modules of the float CNN (1 and
# 2 threads), its QDQ form, a sequence model (LSTM) and a model with a value
# computed at compile time and outputs no step writes, each loaded from C
# (module_check: the same bytes as a session of its weights, twice) and by
# kiln-run (the same bytes as kiln-run on the model). Refused with their
# messages: another module's weights, truncated weights, an input of
# another shape, a model whose inputs decide shapes, a GPU backend.
# usage: module_check.sh KILN_COMPILE KILN_RUN MODULE_CHECK MODULE_MODEL MODELS_DIR
set -eu
compile=$1
run=$2
check=$3
places=$4
dir=$5
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
mkdir "$out/a" "$out/b"
build() {  # MODEL OUT.so [options]
  model=$1
  so=$2
  shift 2
  "$compile" "$model" --emit-module -o "$so" "$@" > "$out/log" 2>&1 || { cat "$out/log"; exit 1; }
  grep -q "host module" "$out/log" || { cat "$out/log"; exit 1; }
  for f in "${so%.so}.cpp" "${so%.so}.h" "${so%.so}.kbundle" "$so"; do
    [ -f "$f" ] || { echo "$f not written"; exit 1; }
  done
}
q=$dir/quant
build "$q/cnn.onnx" "$out/a/cnn.so"
build "$q/cnn.onnx" "$out/b/cnn2.so" --threads 2
build "$q/cnn_qdq_u8.onnx" "$out/qdq.so"
build "$dir/sequence/crnn.onnx" "$out/crnn.so"
"$places" "$out/places.kiln"
build "$out/places.kiln" "$out/places.so" --input-shape x=3,6
grep -q "kV" "$out/places.cpp" || { echo "places: no value baked"; exit 1; }
grep -q "memcpy" "$out/places.cpp" || { echo "places: no output copied"; exit 1; }
# From C: the same bytes as a session of the module's weights; the other
# module's weights (same size, another stamp) refused.
"$check" "$out/a/cnn.so" "$out/b/cnn2.kbundle"
"$check" "$out/b/cnn2.so" "$out/a/cnn.kbundle"
"$check" "$out/qdq.so"
"$check" "$out/crnn.so"
"$check" "$out/places.so"
# kiln-run: the module against the model.
same() {  # MODEL MODULE INPUT OUTPUT
  "$run" "$1" --input "$3" --output-dir "$out/m" > /dev/null 2>&1 || { "$run" "$1" --input "$3"; exit 1; }
  "$run" "$2" --input "$3" --output-dir "$out/s" > "$out/run" 2>&1 || { cat "$out/run"; exit 1; }
  grep -q "^module " "$out/run" || { cat "$out/run"; exit 1; }
  cmp "$out/m/$4.npy" "$out/s/$4.npy" || { echo "$2 computes other bytes than $1"; exit 1; }
  rm -rf "$out/m" "$out/s"
}
same "$q/cnn.onnx" "$out/a/cnn.so" "input=$q/cnn.input.npy" logits
same "$q/cnn_qdq_u8.onnx" "$out/qdq.so" "input=$q/cnn.input.npy" logits
same "$dir/sequence/crnn.onnx" "$out/crnn.so" "image=$dir/sequence/crnn.in.image.npy" log_probs
# Refusals.
cp "$out/a/cnn.kbundle" "$out/t.kbundle"
truncate -s 1000 "$out/a/cnn.kbundle"
status=0
"$run" "$out/a/cnn.so" --input "input=$q/cnn.input.npy" > /dev/null 2> "$out/err" || status=$?
[ "$status" -eq 1 ] && grep -q "have 1000 bytes, the module was made with" "$out/err" || { echo "truncated: $status"; cat "$out/err"; exit 1; }
cp "$out/t.kbundle" "$out/a/cnn.kbundle"
status=0
"$run" "$out/crnn.so" --input "image=$q/cnn.input.npy" > /dev/null 2> "$out/err" || status=$?
[ "$status" -eq 1 ] && grep -q "the module was compiled for f32 1x1x32x128" "$out/err" || { echo "shape: $status"; cat "$out/err"; exit 1; }
status=0
"$compile" "$dir/sequence/vad.onnx" --emit-module -o "$out/vad.so" --input-shape x=1,64 > /dev/null 2> "$out/err" || status=$?
[ "$status" -eq 1 ] && grep -q "inputs decide shapes" "$out/err" || { echo "vad: $status"; cat "$out/err"; exit 1; }
[ ! -f "$out/vad.so" ] && [ ! -f "$out/vad.kbundle" ] || { echo "vad: files written though refused"; exit 1; }
status=0
"$compile" "$q/cnn.onnx" --emit-module --backend vulkan -o "$out/v.so" > /dev/null 2> "$out/err" || status=$?
[ "$status" -eq 2 ] && grep -q "host module" "$out/err" || { echo "vulkan: $status"; cat "$out/err"; exit 1; }
echo "kiln-compile --emit-module ok"
