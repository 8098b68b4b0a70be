"""Kiln: run .kiln models on the host, Vulkan or OpenCL with NumPy arrays.

    import numpy as np, kiln
    interp = kiln.Interpreter("model.kiln")
    session = interp.create_session(backend="auto", threads=4)
    outputs = session.run({"input": np.zeros((1, 3, 224, 224), np.float32)})
"""
from ._kiln import Error, Interpreter, OpInfo, Session, _devices

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


__all__ = ["Error", "Interpreter", "OpInfo", "Session", "devices"]
