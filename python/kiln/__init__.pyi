"""Type stub for the kiln module (python/kiln_module.cpp)."""
import os
from typing import Dict, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np
import numpy.typing as npt

class Error(RuntimeError):
    """A failed Kiln call; the message is Kiln's status ("invalid argument: ...")."""

class Interpreter:
    """One loaded, verified model. Sessions of one Interpreter run one at a time."""

    def __init__(self, model: Union[str, "os.PathLike[str]", bytes, bytearray, memoryview]) -> None:
        """Loads a model from a path (mapped) or from its bytes (copied)."""
    def create_session(
        self,
        backend: str = "host",
        threads: int = 1,
        precision: str = "normal",
        cache_file: Optional[Union[str, "os.PathLike[str]"]] = None,
    ) -> "Session":
        """backend: 'host' | 'vulkan' | 'opencl' | 'auto'; precision: 'normal' | 'high' | 'low'."""
    @property
    def model_name(self) -> str:
        """The file path, or '<buffer>'."""

class Session:
    """A planned, runnable instance of a model (created by Interpreter.create_session)."""

    def run(self, inputs: Mapping[str, npt.ArrayLike]) -> Dict[str, np.ndarray]:
        """{input name: array} -> {output name: ndarray}; resizes when shapes differ."""
    def resize(self, shapes: Mapping[str, Sequence[int]]) -> None:
        """Sets input shapes and resizes the session."""
    @property
    def input_names(self) -> List[str]: ...
    @property
    def output_names(self) -> List[str]: ...
    @property
    def inputs(self) -> Dict[str, Tuple[Tuple[int, ...], Union[np.dtype, str]]]:
        """{name: (shape, dtype)}; -1 for a dimension not yet known."""
    @property
    def outputs(self) -> Dict[str, Tuple[Tuple[int, ...], Union[np.dtype, str]]]: ...
    @property
    def placement(self) -> str:
        """kiln::Placement::toString(): ops per backend, switches, fallbacks."""
    @property
    def devices(self) -> Dict[str, str]:
        """{backend: device name}."""
