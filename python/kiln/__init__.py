"""Kiln: run .kiln models on the host, Vulkan or OpenCL with NumPy arrays.

    import numpy as np, kiln
    kiln.convert("model.onnx", "model.kiln")      # or a .tflite; as kiln-convert
    interp = kiln.Interpreter("model.kiln")
    session = interp.create_session(backend="auto", threads=4)
    outputs = session.run({"input": np.zeros((1, 3, 224, 224), np.float32)})
    kiln.inspect("model.kiln")                    # inputs, outputs, ops, weight bytes
"""
import os
import tempfile
import time

from ._kiln import Error, Interpreter, OpInfo, Session, _convert, _devices

for _cls in (Error, Interpreter, OpInfo, Session):
    _cls.__module__ = "kiln"
del _cls



def _split_description(description):
    """'llvmpipe (LLVM 15, 256 bits) (cpu, Vulkan 1.3, fp16 storage yes, ...)' ->
    ('llvmpipe (LLVM 15, 256 bits)', ['cpu', 'Vulkan 1.3', 'fp16 storage yes', ...])."""
    if description.endswith(")") and " (" in description:
        cut = description.rindex(" (")
        return description[:cut], [c.strip() for c in description[cut + 2:-1].split(", ")]
    return description, []


def devices():
    """The devices sessions can run on: a list of dicts, one per device:
    {'backend': 'host' | 'vulkan' | 'opencl', 'index': the device_index for
    Interpreter.create_session (None for the host), 'name': the device,
    'capabilities': [...] as the backend reports them ('cpu', 'Vulkan 1.3',
    'fp16 storage yes', ... for Vulkan; 'gpu', 'OpenCL 3.0 ...', ... for OpenCL;
    the SIMD level and threads for the host), 'description': the whole string
    Session.devices gives}. Found by starting a session per backend and device
    index on a one-op model, so it costs a device start-up (once per process)."""
    result = []
    for backend, index, description in _devices():
        name, caps = _split_description(description)
        result.append({"backend": backend, "index": None if index < 0 else index, "name": name,
                       "capabilities": caps, "description": description})
    return result


def _summary(src, out, report, ms, optimize):
    """kiln-convert's stdout for this conversion."""
    lines = [f"{src} ({report['source_format']} opset {report['opset']}): {report['ops_in']} ops in, "
             f"{report['ops_out']} ops out, {report['weight_bytes']} weight bytes, {ms:.1f} ms -> {out}"]
    if optimize:
        applied = ", ".join(f"{name} {n}" for name, n in report["passes"])
        lines.append(f"  passes: {applied or 'none applied'}")
    for op_type, n in report["unsupported"].items():
        lines.append(f"  kept unsupported: {op_type} x{n}")
    if report["fp16_weights"]:
        lines.append(f"  fp16: {report['fp16_weights']} weight tensors stored as f16, widened to f32 at session resize")
    return "\n".join(lines)


def convert(src_path, out_path, *, optimize=True, external_weights=False, allow_unsupported=False, fp16=False,
            input_shapes=None):
    """Converts an ONNX (.onnx) or TFLite (.tflite) model to a .kiln file, as the
    kiln-convert tool does (the same library; keyword arguments for its options):

      optimize           run the graph passes (kiln-convert without --no-optimize)
      external_weights   weights in OUT.weights beside the model (--external-weights)
      allow_unsupported  keep unknown ops as Custom ops (--allow-unsupported)
      fp16               store f32 weights as f16 (--fp16)
      input_shapes       {input name: shape} overriding graph input shapes (--input-shape)

    The written model is loaded once to check it verifies. Returns the report:
    {'source_format': 'onnx' | 'tflite', 'opset', 'ops_in', 'ops_out',
    'weight_bytes', 'fp16_weights', 'unsupported': {op type: count} (kept as
    Custom), 'passes': [(pass name, rewrites)], 'progress': [lines], 'ms',
    'summary': kiln-convert's output text}. Raises kiln.Error on a failed
    conversion: unsupported ops (their types, counts and node names), a
    corrupt or unreadable file, a file that is neither .onnx nor .tflite."""
    src, out = os.fspath(src_path), os.fspath(out_path)
    shapes = {}
    for name, shape in (input_shapes or {}).items():
        shapes[str(name)] = [int(d) for d in shape]
    t0 = time.perf_counter()
    report = _convert(src, out, bool(optimize), bool(external_weights), bool(allow_unsupported), bool(fp16), shapes)
    report["ms"] = (time.perf_counter() - t0) * 1e3
    report["summary"] = _summary(src, out, report, report["ms"], optimize)
    return report


_CONVERTIBLE = (".onnx", ".tflite")


def _load(path):
    """An Interpreter over a .kiln file, or over an .onnx / .tflite model
    converted first (kiln.convert's defaults) to a temporary .kiln file that is
    deleted once loaded (the loaded model is kept mapped)."""
    path = os.fspath(path)
    if not path.endswith(_CONVERTIBLE):
        return Interpreter(path)
    with tempfile.TemporaryDirectory(prefix="kiln-") as tmp:
        kiln_path = os.path.join(tmp, os.path.splitext(os.path.basename(path))[0] + ".kiln")
        convert(path, kiln_path)
        return Interpreter(kiln_path)


def inspect(path):
    """What a model takes and holds, as `python -m kiln inspect` prints it:
    {'model': path, 'inputs' / 'outputs': {name: {'shape': [...] (-1 for a
    symbolic dimension), 'dtype': 'float32', ...}}, 'ops': the op count,
    'op_types': {op type: count} (most frequent first), 'parameters',
    'weight_bytes' (inline + external), 'inline_weight_bytes',
    'external_weight_bytes'}. A .onnx or .tflite path is converted first (to a
    temporary file). Raises kiln.Error for a missing or malformed model."""
    path = os.fspath(path)
    interp = _load(path)
    session = interp.create_session()
    ops = session.ops
    types = {}
    for op in ops:
        types[op.type] = types.get(op.type, 0) + 1

    def io(info):
        return {n: {"shape": list(s), "dtype": str(d)} for n, (s, d) in info.items()}

    params, inline_bytes, external_bytes = interp._weights()
    return {"model": path, "inputs": io(session.inputs), "outputs": io(session.outputs), "ops": len(ops),
            "op_types": dict(sorted(types.items(), key=lambda kv: (-kv[1], kv[0]))), "parameters": params,
            "weight_bytes": inline_bytes + external_bytes, "inline_weight_bytes": inline_bytes,
            "external_weight_bytes": external_bytes}


__all__ = ["Error", "Interpreter", "OpInfo", "Session", "convert", "devices", "inspect"]
