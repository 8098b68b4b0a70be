#!/bin/sh
# kiln-kernelbench end to end: a quick sweep on the given backends must
# measure every kernel (no error, positive GB/s, a roof fraction), write the
# CSV, and draw the roofline PNG with gnuplot.
# usage: kernelbench_check.sh KILN_KERNELBENCH BACKENDS
set -eu
bin=$1
backends=$2
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$bin" --backend "$backends" --quick --loops 2 --warmup 0 --csv "$out/k.csv" --plot "$out/roof.png" > "$out/log" 2>&1 ||
  { cat "$out/log"; exit 1; }
n_backends=$(echo "$backends" | tr ',' '\n' | wc -l)
want=$((11 * n_backends + 1))  # gemm conv1x1 conv3x3 dw3x3 qgemm qconv1x1 qconv3x3 qdw3x3 add reduce copy
got=$(wc -l < "$out/k.csv")
[ "$got" -eq "$want" ] || { echo "CSV has $got lines, want $want"; cat "$out/k.csv"; exit 1; }
# Columns: backend,kernel,size,ms,gflops,gbps,intensity,peak_gflops,peak_gbps,roof_fraction,timer,error
awk -F, 'NR > 1 && !($4 > 0 && $6 > 0 && $8 > 0 && $9 > 0 && $10 > 0 && $12 == "\"\"") { print "bad line: " $0; bad = 1 }
         NR > 1 && $2 != "copy" && !($5 > 0) { print "no GFLOP/s: " $0; bad = 1 }
         END { exit bad }' "$out/k.csv"
[ "$(head -c 4 "$out/roof.png" | od -An -c | tr -d ' ')" = "211PNG" ] || { echo "roof.png is not a PNG"; exit 1; }
# The host says which blocking its GEMM chose for this machine.
case ",$backends," in
  *,host,*) grep -q "GEMM blocking: .* tiles, K blocks of [0-9]*, column blocks of [0-9]*" "$out/log" ||
              { echo "no GEMM blocking line for the host"; cat "$out/log"; exit 1; } ;;
esac
echo "kernelbench ok: $((got - 1)) kernels measured on $backends"
