#!/usr/bin/env bash
# The GPU checks for a machine with a real GPU (an NVIDIA card and its driver,
# no Kiln build there): the op and session suites on Vulkan and OpenCL (fp32
# and fp16 storage), kiln-kernelbench, and the real models converted, run on
# each GPU backend and compared with torch's output. Carries nothing but
# binaries: the models are written there (make_models.py, needs torch).
#
# usage: gpu_check.sh BIN_DIR OUT_DIR [suites] [bench] [models] [conformance]
#   BIN_DIR: stripped gpu_test, kiln-kernelbench, kiln-bench, kiln-convert,
#            kiln-run, kiln-conformance; debs of libvulkan1 and ocl-icd-libopencl1 in BIN_DIR/deb
#   OUT_DIR: the logs (one a step) and kernelbench's CSV
# With no step named, suites, bench and models run; "conformance" (ONNX's
# backend cases, BIN_DIR/onnxdata.tar.xz) only when named.
set -u
py=${PYTHON:-python3}  # one with torch and numpy
bin=$(cd "$1" && pwd)
out=$2
shift 2
steps=${*:-suites bench models}
backends=${KILN_CHECK_BACKENDS:-vulkan opencl}
mkdir -p "$out"
log() { echo "== $*" | tee -a "$out/summary.log"; }

. "$(dirname "$0")/gpu_env.sh" "$bin"
{
  nvidia-smi -L
  echo "opencl lib: $nvlib  vulkan icd: $icd"
  lscpu | grep -m1 'Model name'
} 2>&1 | tee -a "$out/summary.log"

# --- the models are written (on the CPU) while the suites run ---------------
if [[ " $steps " == *" models "* ]]; then
  models=${KILN_CHECK_MODELS:-"resnet18 mobilenet_v2 efficientnet_b0 squeezenet1_1 shufflenet_v2_x1_0 mobilenet_v3_small transformer_encoder"}
  ( cd "$(dirname "$0")/../.." && timeout 200 $py tools/models/make_models.py /tmp/models $models ) \
    > "$out/make_models.log" 2>&1 &
  make_pid=$!
fi

# --- the suites: Vulkan and OpenCL, fp32 and fp16 storage, side by side ------
summarize() {  # name log rc
  local counts
  counts=$(grep -E '^\[  (PASSED|FAILED|SKIPPED) +\]' "$2" | grep -v 'listed below' | tr '\n' ' ')
  log "$1: rc $3; $counts"
  grep -E '^\[  FAILED  \]' "$2" | sort -u | head -n 40 | tee -a "$out/summary.log"
}
suite() {  # name env filter
  local name=$1 env=$2 filter=$3
  env $env timeout "${KILN_CHECK_SUITE_TIMEOUT:-180}" stdbuf -oL -eL "$bin/gpu_test" "--gtest_filter=$filter" > "$out/$name.log" 2>&1
  summarize "$name" "$out/$name.log" $?
}
if [[ " $steps " == *" suites "* ]]; then
  fp16_skip='-GpuLayout.MaxUnpool:GpuLayout.Compare:GpuLayout.Cast:GpuQuant.*'
  start=$SECONDS
  pids=()
  for b in $backends; do
    session=$([ "$b" = vulkan ] && echo Vulkan || echo OpenCL)
    suite "$b" "KILN_TEST_GPU=$b" "${KILN_CHECK_FILTER:-Gpu*:$session*}" & pids+=($!)
    [ -n "${KILN_CHECK_FP16-1}" ] && { suite "${b}_fp16" "KILN_TEST_GPU=$b KILN_TEST_PRECISION=low" "Gpu*$fp16_skip" & pids+=($!); }
  done
  wait "${pids[@]}"
  log "suites took $((SECONDS - start)) s"
fi

# --- ONNX's backend cases (BIN_DIR/onnxdata.tar.xz: Debian's libonnx-testdata
# data/ folder), each backend against its expected list ---------------------
if [[ " $steps " == *" conformance "* ]]; then
  start=$SECONDS
  mkdir -p /tmp/onnxdata && tar xJf "$bin/onnxdata.tar.xz" -C /tmp/onnxdata
  for b in $backends; do
    timeout "${KILN_CHECK_CONFORMANCE_TIMEOUT:-240}" "$bin/kiln-conformance" --backend "$b" --data /tmp/onnxdata/data \
      ${KILN_CHECK_CONFORMANCE_FILTER:+--filter "$KILN_CHECK_CONFORMANCE_FILTER"} --expected "$(dirname "$0")/../../tests/conformance/expected_$b.txt" > "$out/conformance_$b.log" 2>&1
    log "conformance $b: rc $? in $((SECONDS - start)) s"
    tail -n 15 "$out/conformance_$b.log" | tee -a "$out/summary.log"
  done
fi

if [[ " $steps " == *" bench "* ]]; then
  start=$SECONDS
  timeout 150 "$bin/kiln-kernelbench" --backend "${backends// /,}" --csv "$out/kernelbench.csv" \
    > "$out/kernelbench.log" 2>&1
  log "kernelbench: rc $? in $((SECONDS - start)) s"
  cat "$out/kernelbench.log" >> "$out/summary.log"
fi

if [[ " $steps " == *" models "* ]]; then
  wait "$make_pid"
  log "make_models: rc $?"
  for name in $models; do
    m=/tmp/models/$name
    onnx=$m.onnx
    if ! "$bin/kiln-convert" "$onnx" "$m.kiln" > "$m.convert.log" 2>&1; then
      log "$name: conversion failed: $(tail -n 2 "$m.convert.log" | tr '\n' ' ')"
      continue
    fi
    for backend in $backends; do
      for precision in normal low; do
        rm -rf "$m.out"
        run=("$bin/kiln-run" "$m.kiln" --input "input=$m.input.npy" --output-dir "$m.out"
             --backend "$backend" --precision "$precision")
        timeout 60 "${run[@]}" > "$m.run.log" 2>&1
        rc=$?
        if [ $rc -ne 0 ]; then
          log "$name $backend $precision: run failed (rc $rc): $(tail -n 3 "$m.run.log" | tr '\n' ' ')"
          # A crash: where, from cuda-gdb (the image has no gdb).
          if [ $rc -ge 128 ] && [ $rc -ne 137 ] && command -v cuda-gdb > /dev/null; then
            timeout 60 cuda-gdb -q -batch -ex run -ex bt --args "${run[@]}" 2>&1 | grep -E '^#|signal' |
              head -n 25 | tee -a "$out/summary.log"
          fi
          continue
        fi
        err=$($py -c "
import numpy as np
want = np.load('$m.output.npy'); got = np.load('$m.out/output.npy')
print('shape %s != %s' % (got.shape, want.shape) if got.shape != want.shape else
      '%.2e' % (np.abs(got - want).max() / max(np.abs(want).max(), 1e-12)))")
        placement=$(grep -m1 '^placement:' "$m.run.log" | sed 's/^placement: //')
        log "$name $backend $precision: max rel err $err; $placement"
      done
    done
    # One process a backend: a crash in one keeps the other's figures.
    for backend in $backends; do
      timeout 90 "$bin/kiln-bench" "$m.kiln" --backend "$backend" --loops 30 --warmup 5 \
        --input "input=$m.input.npy" > "$m.bench.log" 2>&1
      rc=$?
      grep -E '\[|placement|session|first:|warm cache:|first run|  run ' "$m.bench.log" | tee -a "$out/summary.log"
      [ $rc -eq 0 ] || log "$name $backend: kiln-bench rc $rc"
    done
  done
  # A peer on the same card: torch (cuDNN, fp32, eager), median of 30 after 5.
  [ -n "${KILN_CHECK_TORCH-1}" ] && ( cd "$(dirname "$0")/../.." && timeout 120 $py - $models <<'EOF'
import sys, time, torch, numpy as np
sys.path.insert(0, "tools/models")
import make_models
for name in sys.argv[1:]:
    model, x = make_models.build(name)
    model = model.eval().cuda(); x = x.cuda()
    with torch.no_grad():
        for _ in range(5): model(x)
        ts = []
        for _ in range(30):
            torch.cuda.synchronize(); t = time.perf_counter(); model(x); torch.cuda.synchronize()
            ts.append((time.perf_counter() - t) * 1e3)
    print(f"torch cuda {name}: median {np.median(ts):.3f} ms, min {min(ts):.3f} ms")
EOF
  ) 2>&1 | tee -a "$out/summary.log"
fi
log "done"
