#!/bin/sh
# kiln-compile end to end: the float CNN of tests/models/quant and its QDQ
# form compiled to host bundles run with kiln-run taking every prepacked
# form, and write the same bytes as the models themselves; Vulkan and OpenCL
# bundles give their driver state to sessions of their backend (same bytes
# again); an unknown backend and an unknown input are refused with their
# exit codes (2 usage, 1 model).
# usage: compile_check.sh KILN_COMPILE KILN_RUN MODELS_DIR ["vulkan opencl"]
# (the GPU backends of this build)
set -eu
compile=$1
run=$2
dir=$3
gpus=${4:-}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$compile" "$dir/cnn.onnx" -o "$out/cnn.kbundle" > "$out/log" 2>&1 || { cat "$out/log"; exit 1; }
grep -q "host bundle" "$out/log" || { cat "$out/log"; exit 1; }
"$run" "$dir/cnn.onnx" --input "input=$dir/cnn.input.npy" --output-dir "$out/model" > /dev/null 2>&1
"$run" "$out/cnn.kbundle" --input "input=$dir/cnn.input.npy" --output-dir "$out/bundle" > "$out/run" 2>&1 ||
  { cat "$out/run"; exit 1; }
grep -Eq "bundle: ([0-9]+) of its \1 prepacked forms used" "$out/run" || { echo "not every form used:"; cat "$out/run"; exit 1; }
cmp "$out/model/logits.npy" "$out/bundle/logits.npy" || { echo "the bundle computes other bytes"; exit 1; }
# A QDQ model: its QLinearConv panels and row sums come from the bundle too.
"$compile" "$dir/cnn_qdq_u8.onnx" -o "$out/q.kbundle" > "$out/log" 2>&1 || { cat "$out/log"; exit 1; }
"$run" "$dir/cnn_qdq_u8.onnx" --input "input=$dir/cnn.input.npy" --output-dir "$out/qmodel" > /dev/null 2>&1
"$run" "$out/q.kbundle" --input "input=$dir/cnn.input.npy" --output-dir "$out/qbundle" > "$out/run" 2>&1 ||
  { cat "$out/run"; exit 1; }
grep -Eq "bundle: ([0-9]+) of its \1 prepacked forms used" "$out/run" || { echo "QDQ: not every form used:"; cat "$out/run"; exit 1; }
cmp "$out/qmodel/logits.npy" "$out/qbundle/logits.npy" || { echo "the QDQ bundle computes other bytes"; exit 1; }
# GPU bundles: the driver state is taken from the bundle by a session of
# that backend (the same bytes as the model on that backend), and a session
# of the other GPU backend says that it is not for it.
for gpu in $gpus; do
  "$compile" "$dir/cnn.onnx" --backend $gpu -o "$out/$gpu.kbundle" > "$out/log" 2>&1 || { cat "$out/log"; exit 1; }
  grep -q "$gpu bundle for" "$out/log" || { cat "$out/log"; exit 1; }
  "$run" "$dir/cnn.onnx" --backend $gpu --input "input=$dir/cnn.input.npy" --output-dir "$out/m$gpu" > /dev/null 2>&1
  "$run" "$out/$gpu.kbundle" --backend $gpu --input "input=$dir/cnn.input.npy" --output-dir "$out/b$gpu" > "$out/run" 2>&1 ||
    { cat "$out/run"; exit 1; }
  grep -Eq "bundle: $gpu: .* taken from it" "$out/run" || { echo "$gpu: state not taken:"; cat "$out/run"; exit 1; }
  cmp "$out/m$gpu/logits.npy" "$out/b$gpu/logits.npy" || { echo "the $gpu bundle computes other bytes"; exit 1; }
done
if [ "$gpus" = "vulkan opencl" ]; then
  "$run" "$out/vulkan.kbundle" --backend opencl --input "input=$dir/cnn.input.npy" --output-dir "$out/x" > "$out/run" 2>&1 ||
    { cat "$out/run"; exit 1; }
  grep -q "bundle: made for the vulkan backend: no opencl state in it" "$out/run" || { cat "$out/run"; exit 1; }
fi
status=0
"$compile" "$dir/cnn.onnx" --backend metal -o "$out/x.kbundle" > /dev/null 2> "$out/err" || status=$?
[ "$status" -eq 2 ] && grep -q "host, vulkan or opencl" "$out/err" || { echo "metal: status $status"; cat "$out/err"; exit 1; }
status=0
"$compile" "$dir/cnn.onnx" --input-shape nope=1,3,8,8 -o "$out/x.kbundle" > /dev/null 2> "$out/err" || status=$?
[ "$status" -eq 1 ] && grep -q "no input of that name" "$out/err" || { echo "unknown input: status $status"; cat "$out/err"; exit 1; }
echo "kiln-compile ok"
