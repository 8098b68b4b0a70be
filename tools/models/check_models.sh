#!/usr/bin/env bash
# make models-check: write the real models (make_models.py), convert each with
# kiln-convert, run it with kiln-run on the host, and compare with torch's
# output: max |kiln - torch| / max |torch| must be <= 1e-3.
# Usage: check_models.sh [BUILD_DIR] [BACKEND]  (BACKEND: host, vulkan, opencl, auto)
set -uo pipefail
build=${1:-build}
backend=${2:-host}
dir="$build/models"
/usr/bin/python3 tools/models/make_models.py "$dir" || exit 1
fail=0
printf '%-22s %-9s %-12s %-6s %s\n' model converted "max rel err" result "placement ($backend)"
for onnx in "$dir"/*.onnx; do
  name=$(basename "$onnx" .onnx)
  if ! "$build/bin/kiln-convert" "$onnx" "$dir/$name.kiln" > "$dir/$name.convert.log" 2>&1; then
    printf '%-22s %-9s %-12s %s\n' "$name" no - "$(tail -n 3 "$dir/$name.convert.log" | tr '\n' ' ')"
    fail=1
    continue
  fi
  if ! "$build/bin/kiln-run" "$dir/$name.kiln" --input "input=$dir/$name.input.npy" --output-dir "$dir/$name.out" \
      --threads "$(nproc)" --backend "$backend" > "$dir/$name.run.log" 2>&1; then
    printf '%-22s %-9s %-12s %s\n' "$name" yes - "run failed: $(tail -n 2 "$dir/$name.run.log" | tr '\n' ' ')"
    fail=1
    continue
  fi
  err=$(/usr/bin/python3 -c "
import numpy as np, sys
want = np.load('$dir/$name.output.npy'); got = np.load('$dir/$name.out/output.npy')
if got.shape != want.shape: print('shape', got.shape, want.shape); sys.exit(0)
print('%.2e' % (np.abs(got - want).max() / max(np.abs(want).max(), 1e-12)))")
  ok=$(/usr/bin/python3 -c "import sys; print('ok' if '$err'.replace('.','',1).replace('e-','',1).isdigit() and float('$err') <= 1e-3 else 'FAIL')")
  [ "$ok" = ok ] || fail=1
  placement=$(grep -m1 '^placement:' "$dir/$name.run.log" | sed 's/^placement: //')
  printf '%-22s %-9s %-12s %-6s %s\n' "$name" yes "$err" "$ok" "$placement"
done
exit $fail
