"""Bad files and bad models end in the library's own errors, quickly and with bounded reads."""

from __future__ import annotations

import contextlib
import io
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dmlops import DmlError, ModelError
from dmlops._files import read_bounded
from dmlops.cli import main
from dmlops.dxdispatch import load_model

ROOT = Path(__file__).parent.parent


def _cli(*args: str) -> tuple[int, str]:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
        rc = main(list(args))
    return rc, buf.getvalue()


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero")
def test_run_refuses_a_device_file_without_reading_it() -> None:
    rc, text = _cli("run", "/dev/zero")
    assert rc != 0 and "/dev/zero: not a regular file" in text
    with pytest.raises(ModelError, match="not a regular file"):
        load_model("/dev/zero")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_run_refuses_a_fifo_without_waiting_for_a_writer(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    rc, text = _cli("run", str(fifo))
    assert rc != 0 and "not a regular file" in text


def test_run_refuses_a_directory_and_a_missing_file(tmp_path: Path) -> None:
    assert "not a regular file" in _cli("run", str(tmp_path))[1]
    assert "No such file" in _cli("run", str(tmp_path / "missing.json"))[1]


def test_files_over_the_limit_are_refused_before_parsing(tmp_path: Path) -> None:
    model = ROOT / "examples" / "split_axis2.json"
    size = model.stat().st_size
    assert _cli("run", str(model), "--max-file-bytes", str(size))[0] == 0
    rc, text = _cli("run", str(model), "--max-file-bytes", str(size - 1))
    assert rc != 0 and f"{size} bytes, over the limit of {size - 1} bytes" in text
    big = tmp_path / "big.onnx"
    big.write_bytes(b"\0" * 1000)
    rc, text = _cli("explain", str(big), "--max-file-bytes", "999")
    assert rc != 0 and "over the limit of 999 bytes" in text


def test_read_bounded_reads_at_most_one_byte_past_the_limit(tmp_path: Path) -> None:
    p = tmp_path / "f"
    p.write_bytes(b"x" * 10)
    assert read_bounded(p, 10) == b"x" * 10
    with pytest.raises(ModelError, match="over the limit of 9"):
        read_bounded(p, 9)


def test_non_utf8_json_is_a_model_error(tmp_path: Path) -> None:
    p = tmp_path / "m.json"
    p.write_bytes(b'{"resources": "\xff"}')
    with pytest.raises(ModelError, match="not UTF-8"):
        load_model(p)


onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import dmlops.onnx  # noqa: E402


def _model(node: Any, initializers: list[Any], opset: int = 17) -> Any:
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 4])],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in node.output],
        initializers,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


X = {"x": np.arange(12, dtype=np.float32).reshape(1, 3, 4)}


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int8, np.uint64, np.int16])
def test_slice_index_inputs_must_be_int32_or_int64(dtype: Any) -> None:
    starts = numpy_helper.from_array(np.array([0], dtype), "starts")
    ends = numpy_helper.from_array(np.array([3], dtype), "ends")
    model = _model(
        helper.make_node("Slice", ["x", "starts", "ends"], ["y"], name="s"), [starts, ends]
    )
    with pytest.raises(
        ModelError,
        match=r"ONNX node 's': input 'starts' \(starts\) is .*tensor\(int32\), tensor\(int64\)",
    ):
        dmlops.onnx.run(model, X)
    for good in (np.int32, np.int64):
        model.graph.initializer[0].CopyFrom(numpy_helper.from_array(np.array([0], good), "starts"))
        model.graph.initializer[1].CopyFrom(numpy_helper.from_array(np.array([3], good), "ends"))
        assert dmlops.onnx.run(model, X)[0].shape == (1, 3, 4)


@pytest.mark.parametrize(
    ("node", "inits", "rule"),
    [
        (helper.make_node("Split", ["x", "s"], ["a", "b"], name="n", axis=2),
         [numpy_helper.from_array(np.array([2, 2], np.int32), "s")], r"input 's' \(split\) is int32"),
        (helper.make_node("Reshape", ["x", "s"], ["a"], name="n"),
         [numpy_helper.from_array(np.array([12.0], np.float32), "s")], r"input 's' \(shape\) is float32"),
        (helper.make_node("Unsqueeze", ["x", "s"], ["a"], name="n"),
         [numpy_helper.from_array(np.array([0], np.int32), "s")], r"input 's' \(axes\) is int32"),
        (helper.make_node("Concat", ["x"], ["a"], name="n", axis=1.0),
         [], "attribute 'axis' is FLOAT: Concat takes INT"),
        (helper.make_node("Transpose", ["x"], ["a"], name="n", perm=[0, 1, 2], axis=1),
         [], "'axis' is not an attribute of Transpose"),
        (helper.make_node("Concat", ["x"], ["a"], name="n"), [], "required attribute 'axis' is missing"),
        (helper.make_node("Identity", ["x", "x"], ["a"], name="n"), [], "2 inputs; Identity-16 takes 1 to 1"),
        (helper.make_node("Unsqueeze", ["x", ""], ["a"], name="n"), [], r"required input 1 \(axes\) is empty"),
        (helper.make_node("Unsqueeze", ["x", "s"], ["a"], name="n"),
         [numpy_helper.from_array(np.array([1, 1], np.int64), "s")], "name an axis twice"),
        (helper.make_node("Gather", ["x", "i"], ["a"], name="n"),
         [numpy_helper.from_array(np.array([0.0], np.float32), "i")], r"input 'i' \(indices\) is float32"),
    ],
)  # fmt: skip
def test_every_typed_input_and_attribute_is_checked(node: Any, inits: list[Any], rule: str) -> None:
    with pytest.raises(ModelError, match=rf"ONNX node 'n': .*{rule}"):
        dmlops.onnx.run(_model(node, inits), X)


def test_corrupt_and_truncated_onnx_bytes_are_model_errors(tmp_path: Path) -> None:
    node = helper.make_node("Slice", ["x", "starts", "ends"], ["y"], name="s")
    inits = [
        numpy_helper.from_array(np.array([v], np.int64), n) for n, v in (("starts", 0), ("ends", 2))
    ]
    data = _model(node, inits).SerializeToString()
    outcomes = set()
    for cut in range(0, len(data), 3):
        try:
            dmlops.onnx.run(data[:cut], X)
            outcomes.add("ran")
        except DmlError:
            outcomes.add("DmlError")
    assert "DmlError" in outcomes
    rng = np.random.default_rng(0)
    for _ in range(200):
        noisy = bytearray(data)
        for k in rng.integers(0, len(data), 3):
            noisy[k] = int(rng.integers(0, 256))
        with contextlib.suppress(DmlError):
            dmlops.onnx.run(bytes(noisy), X)
    path = tmp_path / "bad.onnx"
    path.write_bytes(b"\x0a\xff\xff\xff\xff\x0f garbage")
    with pytest.raises(ModelError, match=r"bad.onnx: not an ONNX model \(DecodeError"):
        dmlops.onnx.run(path, X)
    with pytest.raises(ModelError, match="expected a ModelProto, bytes or a path"):
        dmlops.onnx.run(12, X)


@pytest.mark.parametrize(
    ("op", "inputs", "attrs"),
    [("Reshape", ["x", "s"], {}), ("Slice", ["x", "s", "s"], {}), ("Unsqueeze", ["x", "s"], {})],
)
def test_index_inputs_must_be_vectors_not_scalars(op: str, inputs: list[str], attrs: Any) -> None:
    """Found by the fuzzer: a 0-d index tensor ran; ONNX's reference rejects it."""
    node = helper.make_node(op, inputs, ["a"], name="n", **attrs)
    scalar = numpy_helper.from_array(np.array(0, np.int64), "s")
    with pytest.raises(ModelError, match=r"input 's' has 0 dimensions: .* takes a 1-D tensor"):
        dmlops.onnx.run(_model(node, [scalar]), X)
