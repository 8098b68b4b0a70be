"""Kiln: run .kiln models on the host, Vulkan or OpenCL with NumPy arrays.

    import numpy as np, kiln
    interp = kiln.Interpreter("model.kiln")
    session = interp.create_session(backend="auto", threads=4)
    outputs = session.run({"input": np.zeros((1, 3, 224, 224), np.float32)})
"""
from ._kiln import Error, Interpreter, Session

for _cls in (Error, Interpreter, Session):
    _cls.__module__ = "kiln"
del _cls

__all__ = ["Error", "Interpreter", "Session"]
