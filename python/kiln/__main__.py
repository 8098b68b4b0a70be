"""python -m kiln run|bench|inspect|devices: the kiln-run / kiln-bench /
kiln-inspect workflows through the Python module. MODEL is a .kiln file, or an
.onnx / .tflite model, converted first as kiln.convert does by default (to a
temporary file).

  python -m kiln run MODEL --input NAME=FILE.npy ... [--output-dir DIR]
                     [--backend host|vulkan|opencl|auto] [--threads N] [--precision normal|high|low]
  python -m kiln bench MODEL [--backend B] [--threads N] [--precision P]
                       [--loops 50] [--warmup 5] [--shape NAME=D0,D1,...] [--json]
  python -m kiln inspect MODEL [--json]
  python -m kiln devices [--json]

Exit codes as the tools: 0 ok, 1 model, input or run error (message on
stderr), 2 usage.
"""
import argparse
import json
import os
import statistics
import sys
import time

import numpy as np

from . import Error, _load, devices, inspect

BACKENDS = ["host", "vulkan", "opencl", "auto"]
PRECISIONS = ["normal", "high", "low"]


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # usage errors exit 2, as argparse does, with the usage line
        self.print_usage(sys.stderr)
        print(f"{self.prog}: {message}", file=sys.stderr)
        sys.exit(2)


def _session_args(p):
    p.add_argument("model", help="a .kiln model (or .onnx / .tflite, converted first)")
    p.add_argument("--backend", choices=BACKENDS, default="host")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--precision", choices=PRECISIONS, default="normal")


def _name_value(text, what):
    name, eq, value = text.partition("=")
    if not eq or not name:
        raise argparse.ArgumentTypeError(f"{what} takes NAME=VALUE, not '{text}'")
    return name, value


def _shape(text):
    name, dims = _name_value(text, "--shape")
    try:
        return name, [int(d) for d in dims.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"--shape {text}: dimensions are integers")


def _open(args):
    if not 1 <= args.threads <= 1024:
        print("kiln: --threads must be 1 to 1024", file=sys.stderr)
        sys.exit(2)
    interp = _load(args.model)
    return interp.create_session(backend=args.backend, threads=args.threads, precision=args.precision)


def _shape_text(shape):
    return "x".join(str(d) for d in shape)


def _safe(name):
    return "".join("_" if c in "/\\:" else c for c in name)


def cmd_run(args):
    session = _open(args)
    given = dict(args.input)
    missing = [n for n in session.input_names if n not in given]
    if missing:
        print(f"kiln run: input '{missing[0]}' is not given (--input {missing[0]}=FILE.npy)", file=sys.stderr)
        return 1
    extra = [n for n in given if n not in session.input_names]
    if extra:
        print(f"kiln run: the model has no input '{extra[0]}'", file=sys.stderr)
        return 1
    inputs = {}
    for name, path in given.items():
        try:
            inputs[name] = np.load(path, allow_pickle=False)
        except (OSError, ValueError) as e:
            print(f"kiln run: input '{name}': {path}: {e}", file=sys.stderr)
            return 1
    session.resize({n: a.shape for n, a in inputs.items()})
    t0 = time.perf_counter()
    outputs = session.run(inputs)
    ms = (time.perf_counter() - t0) * 1e3
    print(session.placement)
    print(f"run: {ms:.3f} ms")
    if args.output_dir:
        os.makedirs(args.output_dir, exist_ok=True)
    for name, a in outputs.items():
        line = f"output {name}: {a.dtype} {_shape_text(a.shape)}"
        if args.output_dir:
            path = os.path.join(args.output_dir, _safe(name) + ".npy")
            np.save(path, a)
            line += f" -> {path}"
        print(line)
    return 0


def _random_inputs(session, shapes):
    rng = np.random.default_rng(1)
    inputs = {}
    for name, (shape, dtype) in session.inputs.items():
        shape = [1 if d < 0 else d for d in shapes.get(name, shape)]
        if not isinstance(dtype, np.dtype):
            raise Error(f"unimplemented: input '{name}': dtype {dtype} has no NumPy type")
        if dtype.kind == "f":
            inputs[name] = rng.uniform(-1, 1, shape).astype(dtype)
        else:
            inputs[name] = np.zeros(shape, dtype)
    return inputs


def cmd_bench(args):
    if args.loops < 1 or args.warmup < 0:
        print("kiln bench: --loops must be at least 1, --warmup at least 0", file=sys.stderr)
        return 2
    session = _open(args)
    inputs = _random_inputs(session, dict(args.shape))
    try:
        session.resize({n: a.shape for n, a in inputs.items()})
    except Error as e:  # an input whose shape the model leaves open
        raise Error(f"{e} (give its shape: --shape NAME=D0,D1,...)")
    outputs = {n: np.empty(s, d) for n, (s, d) in session.outputs.items()
               if isinstance(d, np.dtype) and all(x >= 0 for x in s)}
    t0 = time.perf_counter()
    outputs.update(session.run(inputs, outputs=outputs))
    first = (time.perf_counter() - t0) * 1e3
    for _ in range(args.warmup):
        session.run(inputs, outputs=outputs)
    times = []
    for _ in range(args.loops):
        t0 = time.perf_counter()
        session.run(inputs, outputs=outputs)
        times.append((time.perf_counter() - t0) * 1e3)
    result = {"model": os.path.basename(args.model), "backend": args.backend, "threads": args.threads,
              "devices": session.devices, "first_run_ms": first, "min_ms": min(times),
              "median_ms": statistics.median(times), "max_ms": max(times), "loops": args.loops}
    if args.json:
        print(json.dumps(result))
    else:
        print(f"{result['model']} [{args.backend}] on {'; '.join(session.devices.values())}")
        print(f"  first run {first:.3f} ms; min / median / max over {args.loops} runs: "
              f"{result['min_ms']:.3f} / {result['median_ms']:.3f} / {result['max_ms']:.3f} ms")
    return 0


def cmd_inspect(args):
    result = inspect(args.model)
    if args.json:
        print(json.dumps(result))
        return 0
    print(f"model: {args.model}")
    for what in ("inputs", "outputs"):
        print(f"{what}:")
        for name, v in result[what].items():
            dims = ", ".join("?" if d < 0 else str(d) for d in v["shape"])
            print(f"  {name}: {v['dtype']} [{dims}]")
    print(f"ops: {result['ops']} ({', '.join(f'{t} {n}' for t, n in result['op_types'].items())})")
    print(f"weights: {result['weight_bytes']} bytes ({result['inline_weight_bytes']} inline, "
          f"{result['external_weight_bytes']} external), {result['parameters']} parameters")
    return 0


def cmd_devices(args):
    found = devices()
    if args.json:
        print(json.dumps(found))
        return 0
    for d in found:
        where = d["backend"] if d["index"] is None else f"{d['backend']} {d['index']}"
        print(f"{where}: {d['name']}" + (f" [{', '.join(d['capabilities'])}]" if d["capabilities"] else ""))
    return 0


def main(argv=None):
    parser = _Parser(prog="python -m kiln", description="Run, time and inspect .kiln models.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    p = sub.add_parser("run", help="run a model on .npy inputs, write .npy outputs")
    _session_args(p)
    p.add_argument("--input", action="append", default=[], metavar="NAME=FILE.npy",
                   type=lambda t: _name_value(t, "--input"))
    p.add_argument("--output-dir", metavar="DIR")
    p.set_defaults(fn=cmd_run)
    p = sub.add_parser("bench", help="median time of session.run over --loops runs (random inputs)")
    _session_args(p)
    p.add_argument("--loops", type=int, default=50)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--shape", action="append", default=[], metavar="NAME=D0,D1,...", type=_shape)
    p.add_argument("--json", action="store_true")
    p.set_defaults(fn=cmd_bench)
    p = sub.add_parser("inspect", help="inputs, outputs, ops by type and weight bytes (kiln.inspect)")
    p.add_argument("model")
    p.add_argument("--json", action="store_true")
    p.set_defaults(fn=cmd_inspect)
    p = sub.add_parser("devices", help="the devices found (kiln.devices())")
    p.add_argument("--json", action="store_true")
    p.set_defaults(fn=cmd_devices)
    args = parser.parse_args(argv)
    try:
        return args.fn(args)
    except Error as e:
        print(f"kiln {args.command}: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
