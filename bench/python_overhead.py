#!/usr/bin/python3
"""What a Python session.run costs on top of the C++ run, on one model.

  PYTHONPATH=build/python /usr/bin/python3 bench/python_overhead.py MODEL.kiln
      [--backend host] [--threads 1] [--loops 50] [--warmup 5] [--shape NAME=D0,D1,...]
      [--kiln-bench build/bin/kiln-bench] [--json]

Times, on one session of one process, after --warmup runs each:
  cpp          kiln::Session::run() timed in C++ (Session._time_runs): no copies;
  py           session.run(inputs): copy in, run, new output arrays, the dict;
  py_out       session.run(inputs, outputs=preallocated): no output allocation;
and, when --kiln-bench is given (or build/bin/kiln-bench exists), kiln-bench's
median in its own process at the same settings. Prints each median and the
ratios py / cpp and py_out / cpp (the per-run overhead in ms too). Inputs are
random (symbolic dims 1, or --shape); --json prints one JSON object instead.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

import kiln


def median_ms(fn, loops, warmup):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(loops):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("model")
    p.add_argument("--backend", default="host")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--loops", type=int, default=50)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--kiln-bench", default=os.path.join(root, "build", "bin", "kiln-bench"))
    p.add_argument("--shape", action="append", default=[], metavar="NAME=D0,D1,...",
                   help="an input's shape (needed where the model leaves it open)")
    p.add_argument("--json", action="store_true")
    args = p.parse_args()

    shapes = {}
    for text in args.shape:
        name, _, dims = text.partition("=")
        shapes[name] = [int(d) for d in dims.split(",")]
    session = kiln.Interpreter(args.model).create_session(backend=args.backend, threads=args.threads)
    rng = np.random.default_rng(1)
    inputs = {}
    for name, (shape, dtype) in session.inputs.items():
        shape = [1 if d < 0 else d for d in shapes.get(name, shape)]
        inputs[name] = (rng.uniform(-1, 1, shape) if dtype.kind == "f" else np.zeros(shape)).astype(dtype)
    first = session.run(inputs)  # resizes, fills the inputs
    outputs = {n: np.empty_like(a) for n, a in first.items()}

    # Interleaved rounds so that drift (other load, clocks) hits each alike.
    cpp, py, py_out = [], [], []
    rounds = 5
    per = max(1, args.loops // rounds)
    for _ in range(rounds):
        cpp.append(statistics.median(session._time_runs(per, args.warmup)))
        py.append(median_ms(lambda: session.run(inputs), per, args.warmup))
        py_out.append(median_ms(lambda: session.run(inputs, outputs=outputs), per, args.warmup))
    result = {"model": os.path.basename(args.model), "backend": args.backend, "threads": args.threads,
              "loops": per * rounds, "cpp_ms": statistics.median(cpp), "py_ms": statistics.median(py),
              "py_out_ms": statistics.median(py_out)}
    result["py_over_cpp"] = result["py_ms"] / result["cpp_ms"]
    result["py_out_over_cpp"] = result["py_out_ms"] / result["cpp_ms"]
    if args.kiln_bench and os.path.exists(args.kiln_bench):
        cmd = [args.kiln_bench, args.model, "--backend", args.backend, "--threads", str(args.threads),
               "--loops", str(args.loops), "--warmup", str(args.warmup), "--json"]
        for text in args.shape:
            cmd += ["--shape", text]
        r = subprocess.run(cmd,
                           capture_output=True, text=True, env=dict(os.environ, KILN_QUIET="1"))
        if r.returncode == 0:
            result["kiln_bench_ms"] = json.loads(r.stdout)[0]["median_ms"]
        else:
            print(f"kiln-bench failed: {r.stderr.strip()}", file=sys.stderr)
    if args.json:
        print(json.dumps(result))
        return 0
    print(f"{result['model']} [{args.backend}, {args.threads} thread(s)], median of {result['loops']} runs:")
    print(f"  C++ Session::run (same process)        {result['cpp_ms']:10.4f} ms")
    if "kiln_bench_ms" in result:
        print(f"  kiln-bench (own process)               {result['kiln_bench_ms']:10.4f} ms")
    print(f"  session.run(inputs)                    {result['py_ms']:10.4f} ms  "
          f"x{result['py_over_cpp']:.3f}  ({(result['py_ms'] - result['cpp_ms']) * 1e3:+.1f} us per run)")
    print(f"  session.run(inputs, outputs=prealloc)  {result['py_out_ms']:10.4f} ms  "
          f"x{result['py_out_over_cpp']:.3f}  ({(result['py_out_ms'] - result['cpp_ms']) * 1e3:+.1f} us per run)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
