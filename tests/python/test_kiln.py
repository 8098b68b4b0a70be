"""The kiln Python module against NumPy: run by ctest (python_kiln) with
PYTHONPATH=build/python and KILN_PY_MODELS=build/bin/py_models."""
import json
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import kiln

# A KILN_HOST_ONLY build has no GPU backend; otherwise the GPU cases run and
# fail (never skip) when lavapipe / PoCL are missing.
GPU_BACKENDS = [] if os.environ.get("KILN_PY_HOST_ONLY") == "1" else ["vulkan", "opencl"]
DTYPES = {"f32": np.float32, "f16": np.float16, "i32": np.int32, "i64": np.int64,
          "u8": np.uint8, "i8": np.int8, "bool": np.bool_}


@pytest.fixture(scope="session")
def models(tmp_path_factory):
    d = tmp_path_factory.mktemp("models")
    subprocess.run([os.environ["KILN_PY_MODELS"], str(d)], check=True)
    return d


def relu_input(shape=(3, 5), seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("backend", ["host"] + GPU_BACKENDS)
def test_relu_round_trip(models, backend):
    interp = kiln.Interpreter(str(models / "relu.kiln"))
    session = interp.create_session(backend=backend, threads=2)
    # Not skipped: lavapipe and PoCL are installed here and in CI, so the ops
    # must be on the GPU backend, not fallen back to the host.
    if backend != "host":
        assert backend in session.devices, session.devices
        assert f"{backend} 1 ops" in session.placement, session.placement
    assert session.input_names == ["x"]
    assert session.output_names == ["y"]
    for shape in [(3, 5), (7, 2), (3, 5)]:  # run() resizes when the shape differs
        x = relu_input(shape)
        out = session.run({"x": x})
        assert list(out) == ["y"]
        assert out["y"].dtype == np.float32
        assert out["y"].shape == shape
        np.testing.assert_array_equal(out["y"], np.maximum(x, 0))
    assert session.inputs["x"] == ((3, 5), np.dtype(np.float32))


def test_from_bytes_and_pathlike(models):
    data = (models / "relu.kiln").read_bytes()
    x = relu_input()
    for source in [data, bytearray(data), memoryview(data), models / "relu.kiln"]:
        out = kiln.Interpreter(source).create_session().run({"x": x})
        np.testing.assert_array_equal(out["y"], np.maximum(x, 0))


def test_non_contiguous_and_list_inputs(models):
    session = kiln.Interpreter(str(models / "relu.kiln")).create_session()
    x = relu_input((6, 8))
    view = x[::2, 1::3]  # strided: copied to C order first
    assert not view.flags.c_contiguous
    np.testing.assert_array_equal(session.run({"x": view})["y"], np.maximum(view, 0))
    fortran = np.asfortranarray(x)
    np.testing.assert_array_equal(session.run({"x": fortran})["y"], np.maximum(x, 0))
    swapped = x.astype(">f4")  # non-native byte order
    np.testing.assert_array_equal(session.run({"x": swapped})["y"], np.maximum(x, 0))
    out = session.run({"x": [[1.5, -2.0], [-0.5, 3.0]]})["y"]  # a list takes the input's dtype
    np.testing.assert_array_equal(out, np.array([[1.5, 0], [0, 3.0]], np.float32))


def test_resize_and_two_inputs(models):
    session = kiln.Interpreter(str(models / "add.kiln")).create_session()
    assert session.input_names == ["a", "b"]
    assert session.inputs["a"] == ((-1,), np.dtype(np.float32))  # symbolic "n" until a resize
    session.resize({"a": [4], "b": [4]})
    assert session.inputs["a"] == ((4,), np.dtype(np.float32))
    assert session.outputs["sum"] == ((4,), np.dtype(np.float32))
    a = np.arange(4, dtype=np.float32)
    b = np.full(4, 0.5, np.float32)
    np.testing.assert_array_equal(session.run({"a": a, "b": b})["sum"], a + b)


@pytest.mark.parametrize("name", list(DTYPES))
def test_dtypes(models, name):
    dtype = DTYPES[name]
    session = kiln.Interpreter(str(models / f"identity_{name}.kiln")).create_session()
    assert session.inputs["x"][1] == np.dtype(dtype)
    x = (np.arange(-5, 6) % 3 if name == "bool" else np.arange(-5, 6) if name not in ("u8",) else np.arange(11)).astype(dtype)
    y = session.run({"x": x})["y"]
    assert y.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(y, x)


def test_errors(models):
    session = kiln.Interpreter(str(models / "relu.kiln")).create_session()
    assert issubclass(kiln.Error, RuntimeError)
    with pytest.raises(kiln.Error, match="dtype i32 given, the model takes f32"):
        session.run({"x": np.zeros((2, 2), np.int32)})
    with pytest.raises(kiln.Error, match="input 'x'"):
        session.run({"x": np.zeros((2, 2, 2), np.float32)})  # rank 3 for x[n, c]
    with pytest.raises(kiln.Error, match="input 'x' not given"):
        session.run({})
    with pytest.raises(kiln.Error, match="no input named 'z'"):
        session.run({"x": relu_input(), "z": relu_input()})
    with pytest.raises(kiln.Error, match="no input named 'z'"):
        session.resize({"z": [1, 2]})
    with pytest.raises(ValueError):
        kiln.Interpreter(str(models / "relu.kiln")).create_session(backend="tpu")
    # The session still works after the errors.
    x = relu_input()
    np.testing.assert_array_equal(session.run({"x": x})["y"], np.maximum(x, 0))


def test_corrupt_model(models, tmp_path):
    data = bytearray((models / "relu.kiln").read_bytes())
    with pytest.raises(kiln.Error):
        kiln.Interpreter(bytes(data[: len(data) // 2]))  # truncated
    with pytest.raises(kiln.Error):
        kiln.Interpreter(b"not a kiln model at all")
    data[:8] = b"\xff" * 8  # the root offset and identifier
    with pytest.raises(kiln.Error):
        kiln.Interpreter(bytes(data))
    with pytest.raises(kiln.Error, match="missing.kiln"):
        kiln.Interpreter(str(tmp_path / "missing.kiln"))
    with pytest.raises(TypeError):
        kiln.Interpreter(42)


@pytest.mark.parametrize("backend", ["host"] + GPU_BACKENDS)
def test_threads_match_serial(models, backend):
    # Two Interpreters run at once; two sessions of one Interpreter are
    # serialized by the module. Either way: the serial results.
    path = str(models / "relu.kiln")
    inputs = [relu_input((64, 257), seed) for seed in range(2)]
    interps = [kiln.Interpreter(path), kiln.Interpreter(path)]
    shared = kiln.Interpreter(path)
    for sessions in ([i.create_session(backend=backend) for i in interps],
                     [shared.create_session(backend=backend) for _ in range(2)]):
        serial = [s.run({"x": x})["y"] for s, x in zip(sessions, inputs)]
        results = [[], []]
        errors = []

        def work(i):
            try:
                for _ in range(20):
                    results[i].append(sessions[i].run({"x": inputs[i]})["y"])
            except Exception as e:  # reported below
                errors.append(e)

        threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors
        for i in range(2):
            assert len(results[i]) == 20
            for r in results[i]:
                np.testing.assert_array_equal(r, serial[i])
            np.testing.assert_array_equal(serial[i], np.maximum(inputs[i], 0))



@pytest.mark.parametrize("backend", ["host"] + GPU_BACKENDS)
def test_run_with_callback_records_ops(models, backend):
    session = kiln.Interpreter(str(models / "chain.kiln")).create_session(backend=backend)
    x = np.array([-1.0, 2.0, -3.0, 4.0], np.float32)
    seen = []

    def before(op, tensors):
        if op.index == 0:
            assert repr(op) == f"OpInfo(index=0, name='relu', type='Relu', backend='{backend}')"
        seen.append(("before", op.index, op.name, op.type, {k: v.copy() for k, v in tensors.items()}))

    def after(op, tensors):
        assert op.backend == backend
        seen.append(("after", op.index, op.name, op.type, {k: v.copy() for k, v in tensors.items()}))
        return True

    out = session.run_with_callback({"x": x}, before=before, after=after)
    np.testing.assert_array_equal(out["y"], 2 * np.maximum(x, 0))
    assert [(w, i, n, t) for w, i, n, t, _ in seen] == [
        ("before", 0, "relu", "Relu"), ("after", 0, "relu", "Relu"),
        ("before", 1, "double", "Add"), ("after", 1, "double", "Add")]
    np.testing.assert_array_equal(seen[0][4]["x"], x)
    np.testing.assert_array_equal(seen[1][4]["r"], np.maximum(x, 0))  # the intermediate tensor
    np.testing.assert_array_equal(seen[3][4]["y"], out["y"])


def test_run_with_callback_stops(models):
    session = kiln.Interpreter(str(models / "chain.kiln")).create_session()
    x = np.array([-1.0, 2.0], np.float32)
    ran = []

    def stop_at_add(op, tensors):
        ran.append(op.name)
        return op.type != "Add"  # False before the Add: the run stops there

    with pytest.raises(kiln.Error, match=r"aborted: .*chain.kiln: stopped by the before-callback at op 1 'double' \(Add\)"):
        session.run_with_callback({"x": x}, before=stop_at_add)
    assert ran == ["relu", "double"]
    with pytest.raises(kiln.Error, match="stopped by the after-callback at op 0 'relu'"):
        session.run_with_callback({"x": x}, after=lambda op, t: False)

    def boom(op, tensors):
        raise ValueError("from the callback")

    with pytest.raises(ValueError, match="from the callback"):  # the callback's own exception
        session.run_with_callback({"x": x}, after=boom)

    def reenter(op, tensors):
        session.run({"x": x})  # would deadlock on the Interpreter's lock: raises instead

    with pytest.raises(kiln.Error, match="cannot use a session"):
        session.run_with_callback({"x": x}, before=reenter)
    with pytest.raises(TypeError):
        session.run_with_callback({"x": x}, before=42)
    # The session still runs after all that.
    np.testing.assert_array_equal(session.run({"x": x})["y"], 2 * np.maximum(x, 0))


@pytest.mark.parametrize("backend", ["host"] + GPU_BACKENDS)
def test_outputs_into_caller_arrays(models, backend):
    session = kiln.Interpreter(str(models / "relu.kiln")).create_session(backend=backend)
    x = relu_input((3, 5))
    out = np.full((3, 5), np.nan, np.float32)
    address = out.ctypes.data
    for _ in range(2):
        result = session.run({"x": x}, outputs={"y": out})
        assert result["y"] is out  # the very array, filled in place
        assert out.ctypes.data == address
        np.testing.assert_array_equal(out, np.maximum(x, 0))
    # A view into a bigger buffer works when it is C-contiguous.
    buf = np.zeros((4, 3, 5), np.float32)
    assert session.run({"x": x}, outputs={"y": buf[2]})["y"].ctypes.data == buf[2].ctypes.data
    np.testing.assert_array_equal(buf[2], np.maximum(x, 0))
    assert not buf[1].any()
    # With callbacks too.
    out2 = np.empty((3, 5), np.float32)
    assert session.run_with_callback({"x": x}, after=lambda op, t: None, outputs={"y": out2})["y"] is out2
    np.testing.assert_array_equal(out2, np.maximum(x, 0))


def test_outputs_checked(models):
    session = kiln.Interpreter(str(models / "relu.kiln")).create_session()
    x = relu_input((3, 5))
    with pytest.raises(kiln.Error, match="output 'y': the array is float64, the output is float32"):
        session.run({"x": x}, outputs={"y": np.empty((3, 5), np.float64)})
    with pytest.raises(kiln.Error, match=r"output 'y': the array's shape is \(5, 3\), the output's \(3, 5\)"):
        session.run({"x": x}, outputs={"y": np.empty((5, 3), np.float32)})
    with pytest.raises(kiln.Error, match="C-contiguous"):
        session.run({"x": x}, outputs={"y": np.empty((5, 3), np.float32).T})
    ro = np.empty((3, 5), np.float32)
    ro.flags.writeable = False
    with pytest.raises(kiln.Error, match="writeable"):
        session.run({"x": x}, outputs={"y": ro})
    with pytest.raises(kiln.Error, match="no output named 'z'"):
        session.run({"x": x}, outputs={"z": np.empty((3, 5), np.float32)})
    with pytest.raises(TypeError):
        session.run({"x": x}, outputs={"y": [0.0] * 15})
    np.testing.assert_array_equal(session.run({"x": x})["y"], np.maximum(x, 0))


def test_devices(models):
    found = kiln.devices()
    assert found[0]["backend"] == "host" and found[0]["index"] is None
    for backend in GPU_BACKENDS:  # lavapipe and PoCL here and in CI
        mine = [d for d in found if d["backend"] == backend]
        assert mine, found
        assert [d["index"] for d in mine] == list(range(len(mine)))
        for d in mine:
            assert d["name"] and d["capabilities"], d
            assert d["description"] == f"{d['name']} ({', '.join(d['capabilities'])})"
            # The same device as a session on that index reports.
            session = kiln.Interpreter(str(models / "relu.kiln")).create_session(
                backend=backend, device_index=d["index"])
            assert session.devices[backend] == d["description"]
    with pytest.raises(ValueError):
        kiln.Interpreter(str(models / "relu.kiln")).create_session(device_index=-2)


def kiln_cli(*args):
    return subprocess.run([sys.executable, "-m", "kiln", *map(str, args)], capture_output=True, text=True)


def test_cli_run(models, tmp_path):
    x = relu_input((3, 5))
    np.save(tmp_path / "x.npy", x)
    r = kiln_cli("run", models / "chain.kiln", "--input", f"x={tmp_path / 'x.npy'}",
                 "--threads", "2", "--precision", "high", "--output-dir", tmp_path / "out")
    # chain takes x[n]: a rank-2 array is refused with the input's name.
    assert r.returncode == 1 and "input 'x'" in r.stderr, r
    np.save(tmp_path / "x.npy", x[0])
    r = kiln_cli("run", models / "chain.kiln", "--input", f"x={tmp_path / 'x.npy'}", "--backend", "host",
                 "--threads", "2", "--precision", "high", "--output-dir", tmp_path / "out")
    assert r.returncode == 0, r
    assert "output y: float32 5 -> " in r.stdout and "run: " in r.stdout, r.stdout
    np.testing.assert_array_equal(np.load(tmp_path / "out" / "y.npy"), 2 * np.maximum(x[0], 0))
    r = kiln_cli("run", models / "chain.kiln")
    assert r.returncode == 1 and "input 'x' is not given" in r.stderr, r
    r = kiln_cli("run", models / "chain.kiln", "--input", f"x={tmp_path / 'x.npy'}", "--input", f"z={tmp_path / 'x.npy'}")
    assert r.returncode == 1 and "no input 'z'" in r.stderr, r
    r = kiln_cli("run", models / "chain.kiln", "--backend", "tpu")
    assert r.returncode == 2, r
    r = kiln_cli("run", tmp_path / "missing.kiln", "--input", f"x={tmp_path / 'x.npy'}")
    assert r.returncode == 1 and "missing.kiln" in r.stderr, r


def test_cli_bench_inspect_devices(models):
    r = kiln_cli("bench", models / "relu.kiln", "--shape", "x=4,8", "--loops", "7", "--warmup", "1", "--json")
    assert r.returncode == 0, r
    result = json.loads(r.stdout)
    assert result["loops"] == 7 and 0 < result["min_ms"] <= result["median_ms"] <= result["max_ms"], result
    r = kiln_cli("bench", models / "relu.kiln", "--shape", "x=2,3", "--loops", "3")
    assert r.returncode == 0 and "median" in r.stdout, r
    r = kiln_cli("bench", models / "relu.kiln", "--loops", "2", "--json")  # x[n, c]: symbolic dims taken as 1
    assert r.returncode == 0, r
    r = kiln_cli("inspect", models / "chain.kiln")
    assert r.returncode == 0, r
    assert "x: float32 [" in r.stdout and "ops: 2 (Add 1, Relu 1)" in r.stdout, r.stdout
    r = kiln_cli("inspect", models / "add.kiln", "--json")
    assert json.loads(r.stdout)["ops"] == 1 and list(json.loads(r.stdout)["inputs"]) == ["a", "b"]
    r = kiln_cli("devices", "--json")
    assert r.returncode == 0 and json.loads(r.stdout)[0]["backend"] == "host", r
    assert kiln_cli().returncode == 2


# kiln.convert / kiln.inspect: ONNX models from Debian's libonnx-testdata (a
# build dependency, tools/setup/debian-packages.txt).
ONNX_DATA = "/usr/share/libonnx-testdata/data"
CONV2D = f"{ONNX_DATA}/pytorch-operator/test_operator_conv/model.onnx"  # 7488 weight bytes
RELU = f"{ONNX_DATA}/node/test_relu/model.onnx"
BERNOULLI = f"{ONNX_DATA}/node/test_bernoulli/model.onnx"  # an op Kiln does not have
# A KILN_HOST_ONLY build has no converter (no protobuf): kiln.convert raises.
HOST_ONLY = os.environ.get("KILN_PY_HOST_ONLY") == "1"
needs_converter = pytest.mark.skipif(HOST_ONLY, reason="a KILN_HOST_ONLY build has no converter")


@pytest.mark.skipif(not HOST_ONLY, reason="the converter is built")
def test_convert_host_only(tmp_path):
    with pytest.raises(kiln.Error, match="no converter"):
        kiln.convert(RELU, tmp_path / "relu.kiln")


def only_input(session):
    (name, (shape, dtype)), = session.inputs.items()
    return name, np.random.default_rng(3).standard_normal([max(d, 1) for d in shape]).astype(dtype)


@needs_converter
def test_convert_onnx(tmp_path):
    report = kiln.convert(CONV2D, tmp_path / "conv.kiln")
    assert report["source_format"] == "onnx" and report["ops_in"] >= 1 and report["ops_out"] >= 1, report
    assert report["weight_bytes"] > 0 and report["unsupported"] == {}, report
    assert isinstance(report["passes"], list) and report["fp16_weights"] == 0, report
    assert f"ops in, {report['ops_out']} ops out" in report["summary"] and "passes: " in report["summary"], report
    session = kiln.Interpreter(tmp_path / "conv.kiln").create_session()
    name, x = only_input(session)
    want = session.run({name: x})
    # The same model unoptimized, with external weights, with f16 weights.
    plain = kiln.convert(CONV2D, str(tmp_path / "plain.kiln"), optimize=False, external_weights=True)
    assert "passes:" not in plain["summary"], plain
    assert (tmp_path / "plain.weights").exists()
    info = kiln.inspect(tmp_path / "plain.kiln")
    assert info["external_weight_bytes"] > 0 and info["weight_bytes"] == plain["weight_bytes"], (info, plain)
    got = kiln.Interpreter(tmp_path / "plain.kiln").create_session().run({name: x})
    for n in want:
        np.testing.assert_allclose(got[n], want[n], rtol=1e-5, atol=1e-5)
    half = kiln.convert(CONV2D, tmp_path / "half.kiln", fp16=True)
    assert half["fp16_weights"] >= 1 and half["weight_bytes"] < report["weight_bytes"], half
    assert "fp16: " in half["summary"]
    relu = kiln.convert(RELU, tmp_path / "relu.kiln", input_shapes={"x": (2, 3)})
    assert relu["ops_out"] == 1
    assert kiln.inspect(tmp_path / "relu.kiln")["inputs"]["x"]["shape"] == [2, 3]


@needs_converter
@pytest.mark.parametrize("backend", ["host"] + GPU_BACKENDS)
def test_weights_set_written_back_and_saved(tmp_path, backend):
    # The conv's weights ('1', [13, 16, 3, 3]) live in an external file: the
    # saved model holds them inline.
    kiln.convert(CONV2D, tmp_path / "conv.kiln", external_weights=True)
    interp = kiln.Interpreter(tmp_path / "conv.kiln")
    session, other = interp.create_session(backend=backend), interp.create_session(backend=backend)
    name, x = only_input(session)
    before = session.run({name: x})
    w = session.get_weight("1")
    assert w.shape == (13, 16, 3, 3) and w.dtype == np.float32
    session.set_weight("1", 2 * w)  # no bias: twice the weights, twice the output
    after = session.run({name: x})
    for n in before:
        np.testing.assert_allclose(after[n], 2 * before[n], rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(session.get_weight("1"), 2 * w)
    for n, v in other.run({name: x}).items():  # another session keeps its weights
        np.testing.assert_array_equal(v, before[n])
    with pytest.raises(kiln.Error, match="shape"):
        session.set_weight("1", w[:1])
    with pytest.raises(kiln.Error, match="not found"):
        session.get_weight("nope")
    interp.update_session_to_model(session)
    interp.save_model(tmp_path / "saved.kiln")
    assert kiln.inspect(tmp_path / "saved.kiln")["external_weight_bytes"] == 0
    saved = kiln.Interpreter(tmp_path / "saved.kiln").create_session(backend=backend)
    for n, v in saved.run({name: x}).items():
        np.testing.assert_allclose(v, after[n], rtol=1e-5, atol=1e-5)
    if backend == "host":  # an ahead-of-time bundle of the changed model: the same bytes
        host = interp.create_session()
        want = host.run({name: x})
        interp.save_bundle(host, tmp_path / "conv.kbundle")
        bundled = kiln.Interpreter(tmp_path / "conv.kbundle").create_session()
        assert "prepacked forms used" in bundled.placement, bundled.placement
        for n, v in bundled.run({name: x}).items():
            np.testing.assert_array_equal(v, want[n])


@needs_converter
def test_convert_errors(tmp_path):
    with pytest.raises(kiln.Error, match="Bernoulli"):  # unsupported ops: type, count, node
        kiln.convert(BERNOULLI, tmp_path / "b.kiln")
    assert not (tmp_path / "b.kiln").exists()
    kept = kiln.convert(BERNOULLI, tmp_path / "b.kiln", allow_unsupported=True)
    assert kept["unsupported"] == {"Bernoulli": 1} and "kept unsupported: Bernoulli x1" in kept["summary"], kept
    (tmp_path / "corrupt.onnx").write_bytes(b"\x08\x07garbage, not a protobuf" * 10)
    with pytest.raises(kiln.Error):
        kiln.convert(tmp_path / "corrupt.onnx", tmp_path / "c.kiln")
    (tmp_path / "corrupt.tflite").write_bytes(b"TFL3" * 50)
    with pytest.raises(kiln.Error):
        kiln.convert(tmp_path / "corrupt.tflite", tmp_path / "c.kiln")
    with pytest.raises(kiln.Error, match="missing.onnx"):
        kiln.convert(tmp_path / "missing.onnx", tmp_path / "c.kiln")
    with pytest.raises(kiln.Error, match="only .onnx and .tflite"):
        kiln.convert(tmp_path / "model.pb", tmp_path / "c.kiln")
    with pytest.raises(ValueError):
        kiln.convert(RELU, tmp_path / "r.kiln", input_shapes={"x": [-1, 3]})
    with pytest.raises(TypeError):
        kiln.convert(RELU, tmp_path / "r.kiln", True)  # the options are keyword-only


def test_inspect(models, tmp_path):
    info = kiln.inspect(models / "chain.kiln")
    assert info["ops"] == 2 and info["op_types"] == {"Add": 1, "Relu": 1}, info
    assert info["inputs"]["x"]["dtype"] == "float32" and info["weight_bytes"] == info["inline_weight_bytes"], info
    assert info["external_weight_bytes"] == 0
    if HOST_ONLY:
        return
    onnx = kiln.inspect(CONV2D)  # converted first
    converted = kiln.convert(CONV2D, tmp_path / "conv.kiln")
    assert onnx["ops"] == converted["ops_out"] and onnx["weight_bytes"] == converted["weight_bytes"], (onnx, converted)
    assert onnx["op_types"] == kiln.inspect(tmp_path / "conv.kiln")["op_types"]
    with pytest.raises(kiln.Error):
        kiln.inspect(tmp_path / "missing.kiln")


@needs_converter
def test_cli_onnx(tmp_path):
    r = kiln_cli("inspect", CONV2D, "--json")
    assert r.returncode == 0, r
    info = json.loads(r.stdout)
    assert info["weight_bytes"] > 0 and info["model"] == CONV2D, info
    r = kiln_cli("inspect", RELU)
    assert r.returncode == 0 and "ops: 1 (Relu 1)" in r.stdout and "weights: 0 bytes" in r.stdout, r
    x = np.random.default_rng(0).standard_normal((3, 4, 5)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    r = kiln_cli("run", RELU, "--input", f"x={tmp_path / 'x.npy'}", "--output-dir", tmp_path / "out")
    assert r.returncode == 0, r
    np.testing.assert_array_equal(np.load(tmp_path / "out" / "y.npy"), np.maximum(x, 0))
    r = kiln_cli("bench", RELU, "--loops", "2", "--json")
    assert r.returncode == 0, r
    r = kiln_cli("inspect", BERNOULLI)
    assert r.returncode == 1 and "Bernoulli" in r.stderr, r


# examples/python/segment_photo.py: run as a user would, on the files
# `make demo` leaves in this build's demo/ (the build is where kiln was
# imported from); without them it must say "run make demo first" and exit 0.
EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "python", "segment_photo.py")
BUILD_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(kiln.__file__))))


def run_example(demo_dir):
    env = dict(os.environ, KILN_DEMO_DIR=str(demo_dir))
    return subprocess.run([sys.executable, EXAMPLE], capture_output=True, text=True, env=env, timeout=240)


def test_segment_photo_example_without_demo_files(tmp_path):
    r = run_example(tmp_path / "demo")
    assert r.returncode == 0 and "run make demo first" in r.stdout, r
    assert not (tmp_path / "demo").exists()  # it writes nothing then


@needs_converter
def test_segment_photo_example():
    demo = os.path.join(BUILD_DIR, "demo")
    if not (os.path.isfile(os.path.join(demo, "mediapipe", "package", "selfie_segmentation.tflite")) and
            os.path.isfile(os.path.join(demo, "mediapipe", "astronaut.png"))):
        r = run_example(demo)  # a fresh machine (no `make demo` yet): the message, exit 0
        assert r.returncode == 0 and "run make demo first" in r.stdout, r
        return
    r = run_example(demo)
    assert r.returncode == 0, r
    assert "ops in" in r.stdout and "host: " in r.stdout, r.stdout
    for backend in GPU_BACKENDS:
        assert f"{backend}0 vs host: max abs diff" in r.stdout, r.stdout
        diff = float(r.stdout.split(f"{backend}0 vs host: max abs diff ")[1].split()[0])
        assert diff < 1e-3, r.stdout
    png = os.path.join(demo, "python", "selfie_host.png")
    assert os.path.isfile(png) and "% of the pixels are the person" in r.stdout, r.stdout


@pytest.mark.parametrize("backend", ["host"] + GPU_BACKENDS)
def test_bind_state_streams_the_vad(tmp_path, backend):
    """The torch-exported VAD (tests/models/sequence): its LSTM state bound
    output -> input with bind_state, each call's probability matches torch's
    stream from a zero state; run() needs no array for the bound inputs."""
    seq = os.path.join(os.path.dirname(__file__), "..", "models", "sequence")
    model = str(tmp_path / "vad.kiln")
    kiln.convert(os.path.join(seq, "vad.onnx"), model)
    session = kiln.Interpreter(model).create_session(backend=backend)
    xs = np.load(os.path.join(seq, "vad.stream.x.npy"))
    want = np.load(os.path.join(seq, "vad.stream.prob.npy"))
    sr = np.array(16000, dtype=np.int64)
    session.run({"x": xs[0], "sr": sr, "h": np.zeros((1, 1, 32), np.float32), "c": np.zeros((1, 1, 32), np.float32)})
    session.bind_state("h_out", "h")
    session.bind_state("c_out", "c")
    session.reset_state()
    for k in range(xs.shape[0]):
        out = session.run({"x": xs[k], "sr": sr})
        np.testing.assert_allclose(out["prob"], want[k], rtol=1e-4, atol=1e-5)
    with pytest.raises(kiln.Error, match="not an output"):
        session.bind_state("nope", "h")
