"""Type stub for the kiln module (python/kiln_module.cpp)."""
import os
from typing import Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

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
        device_index: int = -1,
    ) -> "Session":
        """backend: 'host' | 'vulkan' | 'opencl' | 'auto'; precision: 'normal' | 'high' | 'low'."""
    def update_session_to_model(self, session: "Session") -> None:
        """Writes the weights `session` changed (set_weight) into this Interpreter's model."""
    def save_model(self, path: Union[str, "os.PathLike[str]"]) -> None:
        """Writes the model to a self-contained .kiln file."""
    def save_bundle(self, session: "Session", path: Union[str, "os.PathLike[str]"]) -> None:
        """Writes an ahead-of-time host bundle of the model at the session's shapes."""
    @property
    def model_name(self) -> str:
        """The file path, or '<buffer>'."""

class OpInfo:
    """An op as run_with_callback's callbacks see it."""

    @property
    def index(self) -> int: ...
    @property
    def name(self) -> str: ...
    @property
    def type(self) -> str: ...
    @property
    def backend(self) -> str: ...

# before/after callbacks: (op, {tensor name: array or None}) -> False stops the run.
Callback = Callable[[OpInfo, Dict[str, Optional[np.ndarray]]], Optional[bool]]

class Session:
    """A planned, runnable instance of a model (created by Interpreter.create_session)."""

    def run(
        self, inputs: Mapping[str, npt.ArrayLike], outputs: Optional[Mapping[str, np.ndarray]] = None
    ) -> Dict[str, np.ndarray]:
        """{input name: array} -> {output name: ndarray}; resizes when shapes differ.
        outputs: caller arrays the named outputs are written into (and returned)."""
    def run_with_callback(
        self,
        inputs: Mapping[str, npt.ArrayLike],
        before: Optional[Callback] = None,
        after: Optional[Callback] = None,
        outputs: Optional[Mapping[str, np.ndarray]] = None,
    ) -> Dict[str, np.ndarray]:
        """run() with before(op, inputs) / after(op, outputs) per op; a callback
        returning False stops the run with kiln.Error ("aborted: ...")."""
    def resize(self, shapes: Mapping[str, Sequence[int]]) -> None:
        """Sets input shapes and resizes the session."""
    def bind_state(self, output: str, input: str) -> None:
        """After each run, `output` becomes `input` of the next (on the device);
        run() then needs no array for `input`."""
    def reset_state(self) -> None:
        """Zeros every bound state input (a new stream)."""
    def get_weight(self, name: str) -> np.ndarray:
        """A copy of weight (constant) `name` as this session has it."""
    def set_weight(self, name: str, value: np.ndarray) -> None:
        """Replaces weight `name` for this session (same dtype and shape)."""
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
    def ops(self) -> List[OpInfo]:
        """The ops in run order."""
    @property
    def placement(self) -> str:
        """kiln::Placement::toString(): ops per backend, switches, fallbacks."""
    @property
    def devices(self) -> Dict[str, str]:
        """{backend: device name}."""

def devices() -> List[Dict[str, object]]:
    """[{'backend', 'index', 'name', 'capabilities', 'description'}] per device found."""

def convert(
    src_path: Union[str, "os.PathLike[str]"],
    out_path: Union[str, "os.PathLike[str]"],
    *,
    optimize: bool = True,
    external_weights: bool = False,
    allow_unsupported: bool = False,
    fp16: bool = False,
    input_shapes: Optional[Mapping[str, Sequence[int]]] = None,
) -> Dict[str, object]:
    """.onnx / .tflite -> .kiln as kiln-convert does; returns the report
    (ops_in, ops_out, passes, unsupported, weight_bytes, summary, ...).
    Raises kiln.Error when the conversion fails."""

def inspect(path: Union[str, "os.PathLike[str]"]) -> Dict[str, object]:
    """{'model', 'inputs', 'outputs', 'ops', 'op_types', 'parameters', 'weight_bytes',
    'inline_weight_bytes', 'external_weight_bytes'}; .onnx / .tflite are converted first."""
