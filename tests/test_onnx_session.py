"""InferenceSession against onnxruntime's answers on the exported models: inputs, outputs,
run (all outputs or some), IOBinding into caller-given arrays; and run's content-keyed cache."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from conftest import HAS_CUDA, to_host

onnx = pytest.importorskip("onnx")

from dmlops import Device, ModelError  # noqa: E402
from dmlops import onnx as dml_onnx  # noqa: E402

DATA = Path(__file__).resolve().parent / "data" / "exported"
MODELS = sorted(DATA.glob("*.onnx"))


def _case(path: Path) -> tuple[dict[str, np.ndarray], list[np.ndarray]]:
    data = np.load(path.with_suffix(".npz"))
    inputs = {k: data[k] for k in data.files if k.startswith("in")}
    outs = sorted((k for k in data.files if k.startswith("out")), key=lambda k: int(k[3:]))
    return inputs, [data[k] for k in outs]


def _ort(path: Path):  # type: ignore[no-untyped-def]
    ort = pytest.importorskip("onnxruntime")
    return ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])


@pytest.mark.parametrize("path", MODELS, ids=lambda p: p.stem)
def test_session_answers_as_onnxruntime(path: Path) -> None:
    ours, theirs = dml_onnx.InferenceSession(str(path)), _ort(path)
    for mine, other in (
        (ours.get_inputs(), theirs.get_inputs()),
        (ours.get_outputs(), theirs.get_outputs()),
    ):
        assert [a.name for a in mine] == [b.name for b in other]
        assert [a.type for a in mine] == [b.type for b in other]
        for a, b in zip(mine, other):
            # ONNX's shape inference and onnxruntime's may each resolve a dimension the
            # other leaves symbolic; every number both state agrees
            assert len(a.shape) == len(b.shape)
            assert all(
                x == y
                for x, y in zip(a.shape, b.shape)
                if isinstance(x, int) and isinstance(y, int)
            )
    assert [a.shape for a in ours.get_inputs()] == [b.shape for b in theirs.get_inputs()]
    inputs, expected = _case(path)
    got = ours.run(None, inputs)
    want = theirs.run(None, inputs)
    for g, w, e in zip(got, want, expected):
        assert g.tobytes() == w.tobytes() == e.tobytes() and g.shape == w.shape
    last = ours.get_outputs()[-1].name
    (only,) = ours.run([last], inputs)
    assert only.tobytes() == expected[-1].tobytes()


@pytest.mark.parametrize("path", MODELS[::3], ids=lambda p: p.stem)
def test_inputs_of_the_other_byte_order_give_the_same_values(path: Path) -> None:
    """A feed in the other (non-native) byte order is read by value: the outputs equal the
    native feed's, in the machine's order (one-plan models and staged ones alike); an output
    array bound in the other order is written by value."""
    inputs, expected = _case(path)
    swapped = {k: v.astype(v.dtype.newbyteorder("S")) for k, v in inputs.items()}
    got = dml_onnx.InferenceSession(str(path)).run(None, swapped)
    for g, e in zip(got, expected):
        assert g.dtype.isnative and g.dtype == e.dtype and g.tobytes() == e.tobytes()
    session = dml_onnx.InferenceSession(str(path))
    binding = session.io_binding()
    for name, value in inputs.items():
        binding.bind_input(name, value)
    first = expected[0]
    swapped_out = np.empty(first.shape, first.dtype.newbyteorder("S"))
    swapped_out.view(np.uint8)[...] = 0xA5  # not the answer
    binding.bind_output(session.get_outputs()[0].name, swapped_out)
    session.run_with_iobinding(binding)  # an output array in the other order: by value
    assert swapped_out.astype(first.dtype).tobytes() == first.tobytes()


@pytest.mark.parametrize("path", MODELS[::7], ids=lambda p: p.stem)
def test_iobinding_writes_into_given_arrays(path: Path) -> None:
    session = dml_onnx.InferenceSession(str(path))
    inputs, expected = _case(path)
    binding = session.io_binding()
    for name, value in inputs.items():
        binding.bind_input(name, value)
    outs = [np.full(e.shape, 7, e.dtype) for e in expected]
    for o, out in zip(session.get_outputs(), outs):
        binding.bind_output(o.name, out)
    session.run_with_iobinding(binding)
    for got, out, e in zip(binding.get_outputs(), outs, expected):
        assert got is out and out.tobytes() == e.tobytes()
    assert [c.tobytes() for c in binding.copy_outputs_to_cpu()] == [e.tobytes() for e in expected]


def test_iobinding_refuses_arrays_that_cannot_take_the_output() -> None:
    path = MODELS[0]
    session = dml_onnx.InferenceSession(str(path))
    inputs, expected = _case(path)
    binding = session.io_binding()
    for name, value in inputs.items():
        binding.bind_input(name, value)
    name = session.get_outputs()[0].name
    binding.bind_output(name, np.empty((1, *expected[0].shape), expected[0].dtype))
    with pytest.raises(ModelError, match=f"output '{name}' is"):
        session.run_with_iobinding(binding)
    wide = np.empty((*expected[0].shape[:-1], expected[0].shape[-1] * 2), expected[0].dtype)
    binding.bind_output(name, wide[..., ::2])
    with pytest.raises(ModelError, match="C-contiguous"):
        session.run_with_iobinding(binding)
    with pytest.raises(ModelError, match="no output named 'nope'"):
        binding.bind_output("nope")


def test_session_errors_name_inputs_and_outputs() -> None:
    path = MODELS[0]
    session = dml_onnx.InferenceSession(str(path))
    inputs, _ = _case(path)
    with pytest.raises(ModelError, match="no input named 'bogus'"):
        session.run(None, {**inputs, "bogus": np.zeros(1)})
    first = session.get_inputs()[0].name
    with pytest.raises(ModelError, match=f"input '{first}' was not given"):
        session.run(None, {k: v for k, v in inputs.items() if k != first})
    with pytest.raises(ModelError, match="no output named 'nope'"):
        session.run(["nope"], inputs)


def test_one_compiled_graph_per_signature() -> None:
    path = next(p for p in MODELS if "unet_crop_concat__torchscript_opset17" in p.name)
    session = dml_onnx.InferenceSession(path.read_bytes())
    inputs, _ = _case(path)
    a, _ = session.compiled_for(inputs)
    b, _ = session.compiled_for({k: v.copy() for k, v in inputs.items()})
    assert a is b


def test_run_caches_sessions_by_content_not_identity() -> None:
    path = MODELS[0]
    inputs, _ = _case(path)
    dml_onnx._SESSIONS.clear()
    dml_onnx.run(path.read_bytes(), inputs)
    dml_onnx.run(bytes(path.read_bytes()), inputs)  # a new bytes object of the same content
    dml_onnx.run(str(path), inputs)  # the same content through a path
    assert len(dml_onnx._SESSIONS) == 1
    dml_onnx.run(str(path), inputs, Device("4_1"))  # another feature level: another session
    assert len(dml_onnx._SESSIONS) == 2


@pytest.mark.skipif(not HAS_CUDA, reason="no CUDA GPU")
@pytest.mark.gpu
def test_session_on_the_gpu() -> None:
    import cupy

    path = MODELS[0]
    inputs, expected = _case(path)
    session = dml_onnx.InferenceSession(str(path), Device(backend="cuda"))
    got = session.run(None, {k: cupy.asarray(v) for k, v in inputs.items()})
    assert [to_host(g).tobytes() for g in got] == [e.tobytes() for e in expected]


def test_cli_runs_onnx_models_through_a_session(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from dmlops.cli import main

    path = next(p for p in MODELS if p.stem == "flip__torchscript_opset17")
    inputs, expected = _case(path)
    np.save(tmp_path / "x.npy", inputs["in0"])
    assert main(["run", str(path), "--input", f"in0={tmp_path / 'x.npy'}"]) == 0
    printed = capsys.readouterr().out
    shape = list(expected[0].shape)
    assert printed.startswith(f"Output '5' {shape} float32: ")
    first = ", ".join(str(v) for v in expected[0].reshape(-1)[:3].tolist())
    assert first in printed
    assert main(["run", str(path)]) == 1
    assert "give --input NAME=FILE.npy for in0" in capsys.readouterr().err


def test_no_import_circles() -> None:
    """The onnx modules import only those before them (loading, params, resize, indexed, host,
    values, nodes, compiled, lowering, staged, dynamic, session);
    the operators never import the picture module (their notebook view does, lazily)."""
    import ast

    root = Path(__file__).resolve().parent.parent / "src" / "dmlops"
    order = [
        "loading",
        "params",
        "resize",
        "indexed",
        "host",
        "values",
        "nodes",
        "compiled",
        "lowering",
        "staged",
        "dynamic",
        "session",
    ]
    for k, name in enumerate(order):
        tree = ast.parse((root / "onnx" / f"{name}.py").read_text())
        local = {
            node.module
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module
        }
        assert local <= set(order[:k]), (name, local)
    for path in (root / "ops").glob("*.py"):
        tree = ast.parse(path.read_text())
        top = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
        assert not any("picture" in (getattr(n, "module", "") or "") for n in top), path


def test_a_shufflenet_unit_runs_with_intermediates_and_explain_says_why(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from dmlops.cli import main

    path = DATA / "shufflenet_unit__torchscript_opset13.onnx"
    inputs, expected = _case(path)
    compiled = dml_onnx.compile(str(path), inputs)
    assert len(compiled.operator.passes) == 3  # two intermediates, then the outputs
    assert compiled.plan.bytes_written == expected[0].nbytes
    assert main(["explain", str(path), "--input-shape", "in0=2,8,6,6"]) == 0
    out = capsys.readouterr().out
    assert "in 3 passes" in out
    assert "copy added: intermediate 0 (node 5 reads the output of node 4 through a reshape" in out


def test_sessions_run_from_many_threads_with_intermediates_of_their_own() -> None:
    """A plan of three passes (two intermediates) run from 8 threads at once on inputs large
    enough that numpy lets go of the GIL: each call gets the answer for its own input."""
    from concurrent.futures import ThreadPoolExecutor

    path = DATA / "shufflenet_unit__torchscript_opset13.onnx"
    session = dml_onnx.InferenceSession(str(path))
    theirs = _ort(path)
    rng = np.random.default_rng(0)
    feeds = [{"in0": rng.standard_normal((4096, 8, 6, 6), dtype=np.float32)} for _ in range(8)]
    want = [theirs.run(None, f)[0] for f in feeds]
    compiled, _ = session.compiled_for(feeds[0])
    assert len(compiled.operator.passes) == 3
    with ThreadPoolExecutor(8) as pool:
        for _ in range(3):
            got = list(pool.map(lambda f: session.run(None, f)[0], feeds * 2))
            for k, g in enumerate(got):
                assert np.array_equal(g, want[k % 8])
