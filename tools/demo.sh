#!/usr/bin/env bash
# `make demo`: write a small model with NetBuilder, load it, inspect it.
set -euo pipefail
build=${1:-build}
out="$build/demo"
mkdir -p "$out"
bin="$build/bin"
echo "== 1. write and load a small CNN (inline and external weights)"
"$bin/kiln-demo-model" "$out"
echo
echo "== 2. kiln-inspect: summary"
"$bin/kiln-inspect" "$out/tiny_cnn.kiln"
echo
echo "== 3. kiln-inspect --map: where every byte lives (first 25 lines and the totals)"
"$bin/kiln-inspect" --map "$out/tiny_cnn.kiln" > "$out/tiny_cnn.map.txt"
head -n 25 "$out/tiny_cnn.map.txt"
echo "   ..."
tail -n 3 "$out/tiny_cnn.map.txt"
echo "   (full map: $out/tiny_cnn.map.txt)"
echo
echo "== 4. kiln-inspect --locate: find the conv1 bias values and a conv param in the file"
"$bin/kiln-inspect" --locate 'tensors[2].data' "$out/tiny_cnn.kiln"
"$bin/kiln-inspect" --locate 'ops[0].params.strides' "$out/tiny_cnn.kiln"
echo
echo "== 5. the same model with its weights in an external file"
"$bin/kiln-inspect" "$out/tiny_cnn_ext.kiln"
echo
echo "== 6. kiln-run: run it, asking for the GPU first (--backend auto); until the GPU"
echo "      backends land, every op falls back to the host, and the placement says why"
"$bin/kiln-run" "$out/tiny_cnn.kiln" --input "image=$out/image.npy" --output-dir "$out/run" --backend auto
