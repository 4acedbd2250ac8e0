"""WebNN conformance cases in the shape the web-platform-tests' WebNN conformance files use:
`{"name", "graph": {"inputs": {NAME: {"data", "descriptor": {"shape", "dataType"},
"constant"?}}, "operators": [{"name", "arguments": [{ARG: VALUE}, ...], "outputs"}],
"expectedOutputs": {NAME: {"data", "descriptor"}}}}`, for WebNN's data-movement operations.

Expected outputs come from plain numpy (slicing, `np.take`, `np.pad`, ...), not from dmlops,
so running the cases through `dmlops.webnn` (`run_case`) checks dmlops too.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["OPERATIONS", "generate", "write", "load", "run_case"]

_TYPES = ("float32", "float16", "int32", "uint32", "int64", "uint64", "int8", "uint8")
_OPERAND_ARGUMENTS = ("input", "inputs", "indices", "updates")


def _values(rng: np.random.Generator, shape: Sequence[int], dtype: str) -> np.ndarray[Any, Any]:
    n = math.prod(shape)
    if dtype.startswith("float"):
        return (rng.integers(-400, 400, n) / 4).astype(dtype).reshape(shape)
    low = 0 if dtype.startswith("uint") else -100
    return rng.integers(low, 100, n).astype(dtype).reshape(shape)


def _shape(rng: np.random.Generator, low_rank: int = 1) -> list[int]:
    return [int(d) for d in rng.integers(1, 5, int(rng.integers(low_rank, 5)))]


def _slice(rng: np.random.Generator, x: Any) -> tuple[list[Any], Any]:
    # WebNN: sizes[i] input elements from starts[i], every strides[i]-th of them kept
    starts = [int(rng.integers(0, d)) for d in x.shape]
    sizes = [int(rng.integers(1, d - s + 1)) for d, s in zip(x.shape, starts, strict=True)]
    strides = [int(rng.integers(1, 3)) for _ in x.shape]
    window = tuple(slice(s, s + n, t) for s, n, t in zip(starts, sizes, strides, strict=True))
    args: list[Any] = [{"starts": starts}, {"sizes": sizes}]
    if any(t != 1 for t in strides):
        args.append({"options": {"strides": strides}})
    return args, x[window]


def _split(rng: np.random.Generator, x: Any) -> tuple[list[Any], Any]:
    axis = int(rng.integers(0, x.ndim))
    d = x.shape[axis]
    if rng.random() < 0.5:
        count = int(rng.choice([n for n in range(1, d + 1) if d % n == 0]))
        splits: Any = count
        cuts = [d // count * k for k in range(1, count)]
    else:
        cuts = (
            sorted(
                int(c) for c in rng.choice(np.arange(1, d), int(rng.integers(0, d)), replace=False)
            )
            if d > 1
            else []
        )
        edges = [0, *cuts, d]
        splits = [edges[k + 1] - edges[k] for k in range(len(edges) - 1)]
    return [{"splits": splits}, {"options": {"axis": axis}}], np.split(x, cuts, axis=axis)


def _expand(rng: np.random.Generator, x: Any) -> tuple[list[Any], Any]:
    shape = [int(rng.integers(1, 4)) if d == 1 else d for d in x.shape]
    shape = [int(d) for d in rng.integers(1, 3, int(rng.integers(0, 2)))] + shape
    return [{"newShape": shape}], np.broadcast_to(x, shape)


def _tile(rng: np.random.Generator, x: Any) -> tuple[list[Any], Any]:
    reps = [int(r) for r in rng.integers(1, 4, x.ndim)]
    return [{"repetitions": reps}], np.tile(x, reps)


def _transpose(rng: np.random.Generator, x: Any) -> tuple[list[Any], Any]:
    perm = [int(p) for p in rng.permutation(x.ndim)]
    return [{"options": {"permutation": perm}}], np.transpose(x, perm)


def _reverse(rng: np.random.Generator, x: Any) -> tuple[list[Any], Any]:
    axes = sorted(int(a) for a in rng.permutation(x.ndim)[: int(rng.integers(0, x.ndim + 1))])
    return [{"options": {"axes": axes}}], np.flip(x, tuple(axes)) if axes else x


def _reshape(rng: np.random.Generator, x: Any) -> tuple[list[Any], Any]:
    n, dims, p = x.size, [1] * int(rng.integers(1, 5)), 2
    while n > 1:
        while n % p == 0:
            dims[int(rng.integers(0, len(dims)))] *= p
            n //= p
        p += 1
    return [{"newShape": dims}], x.reshape(dims)


def _pad(rng: np.random.Generator, x: Any) -> tuple[list[Any], Any]:
    mode = str(rng.choice(["constant", "edge", "reflection"]))
    high = [min(2, d - 1) if mode == "reflection" else 2 for d in x.shape]
    begin = [int(rng.integers(0, h + 1)) for h in high]
    end = [int(rng.integers(0, h + 1)) for h in high]
    options: dict[str, Any] = {"mode": mode}
    widths = list(zip(begin, end, strict=True))
    if mode == "constant":
        value = int(rng.integers(0, 9))
        options["value"] = value
        want = np.pad(x, widths, constant_values=np.array(value).astype(x.dtype))
    else:
        want = np.pad(x, widths, mode="edge" if mode == "edge" else "reflect")
    return [{"beginningPadding": begin}, {"endingPadding": end}, {"options": options}], want


def _triangular(rng: np.random.Generator, x: Any) -> tuple[list[Any], Any]:
    upper = bool(rng.integers(0, 2))
    diagonal = int(rng.integers(-x.shape[-2] - 1, x.shape[-1] + 2))
    want = (np.triu if upper else np.tril)(x, diagonal)
    return [{"options": {"upper": upper, "diagonal": diagonal}}], want


def _cast(rng: np.random.Generator, x: Any) -> tuple[list[Any], Any]:
    """A cast whose every value is in the target's range (out of range WebNN leaves the
    answer to the implementation): floats truncate toward zero, integers wrap never."""
    target = str(rng.choice(_TYPES))
    values = np.abs(x) if np.dtype(target).kind == "u" else x  # (the case's input: see _case)
    with np.errstate(invalid="ignore"):
        want = values.astype(target)
    return [{"type": target}], want


def _resample2d(rng: np.random.Generator, x: Any) -> tuple[list[Any], Any]:
    """Nearest-neighbour, half-pixel coordinates at the scale output / input size, ties to
    the smaller index (web-platform-tests' rule), of two axes by scales or sizes."""
    axes = [2, 3] if rng.random() < 0.6 else [1, 2]
    options: dict[str, Any] = {"axes": axes}
    if rng.random() < 0.5:
        scales = [float(rng.choice([0.5, 0.75, 1.0, 1.5, 2.0])) for _ in axes]
        sizes = [max(1, int(np.float32(f) * x.shape[a])) for f, a in zip(scales, axes, strict=True)]
        if any(int(np.float32(f) * x.shape[a]) < 1 for f, a in zip(scales, axes, strict=True)):
            scales = [1.0, 1.0]
            sizes = [x.shape[a] for a in axes]
        options["scales"] = scales
    else:
        sizes = [int(rng.integers(1, 2 * x.shape[a] + 2)) for a in axes]
        options["sizes"] = sizes
    want = x
    for a, n in zip(axes, sizes, strict=True):
        size_in = x.shape[a]
        o = np.arange(n, dtype=np.float32)
        coordinate = (o + np.float32(0.5)) / np.float32(n / size_in) - np.float32(0.5)
        index = np.clip(np.ceil(coordinate - np.float32(0.5)), 0, size_in - 1).astype(np.int64)
        want = np.take(want, index, axis=a)
    return [{"options": options}], want


_UNARY: dict[str, Callable[[np.random.Generator, Any], tuple[list[Any], Any]]] = {
    "slice": _slice,
    "split": _split,
    "expand": _expand,
    "tile": _tile,
    "transpose": _transpose,
    "reverse": _reverse,
    "reshape": _reshape,
    "pad": _pad,
    "triangular": _triangular,
    "cast": _cast,
    "resample2d": _resample2d,
}
OPERATIONS = (
    *_UNARY,
    "concat",
    "gather",
    "gatherElements",
    "gatherND",
    "scatterElements",
    "scatterND",
)


def _descriptor(a: np.ndarray[Any, Any]) -> dict[str, Any]:
    return {"shape": [int(d) for d in a.shape], "dataType": str(a.dtype)}


def _operand(a: np.ndarray[Any, Any], constant: bool = False) -> dict[str, Any]:
    entry: dict[str, Any] = {"data": a.reshape(-1).tolist(), "descriptor": _descriptor(a)}
    if constant:
        entry["constant"] = True
    return entry


def _case(rng: np.random.Generator, op: str, dtype: str) -> dict[str, Any]:
    if op == "resample2d" and not dtype.startswith("float"):
        dtype = "float32"  # (WebNN's resample2d takes float32 and float16)
    shape = _shape(rng, 2)[:2] + _shape(rng, 2)[:2] if op == "resample2d" else _shape(rng)
    if op == "triangular" and len(shape) < 2:
        shape = [*shape, 2]
    x = _values(rng, shape, dtype)
    inputs = {f"{op}Input": _operand(x)}
    operand: list[Any] = [{"input": f"{op}Input"}]
    if op in _UNARY:
        args, want = _UNARY[op](rng, x)
        args = operand + args
        if op == "cast" and want.dtype.kind == "u":  # the input as the case casts it
            x = np.abs(x)
            inputs = {f"{op}Input": _operand(x)}
    elif op == "concat":
        axis = int(rng.integers(0, x.ndim))
        parts = [x]
        for _ in range(int(rng.integers(1, 3))):
            shape = list(x.shape)
            shape[axis] = int(rng.integers(1, 4))
            parts.append(_values(rng, shape, dtype))
        inputs = {f"concatInput{k}": _operand(p) for k, p in enumerate(parts)}
        args = [{"inputs": list(inputs)}, {"axis": axis}]
        want = np.concatenate(parts, axis=axis)
    else:
        index_type = str(rng.choice(["int32", "uint32", "int64"]))
        axis = int(rng.integers(0, x.ndim))
        if op == "gather":
            ids = rng.integers(0, x.shape[axis], _shape(rng, 0)[: int(rng.integers(0, 3))])
            want = np.take(x, ids, axis=axis)
        elif op == "gatherElements":
            shape = list(x.shape)  # WebNN: only the axis may differ
            shape[axis] = int(rng.integers(1, 4))
            ids = rng.integers(0, x.shape[axis], shape)
            want = np.take_along_axis(x, ids, axis=axis)
        elif op == "gatherND":
            k = int(rng.integers(1, x.ndim + 1))
            lead = [int(d) for d in rng.integers(1, 4, int(rng.integers(0, 3)))]
            ids = np.stack([rng.integers(0, x.shape[j], lead) for j in range(k)], axis=-1)
            rows = [x[tuple(c)] for c in ids.reshape(-1, k)]
            want = np.array(rows, dtype=x.dtype).reshape((*lead, *x.shape[k:]))
        elif op == "scatterElements":
            shape = list(x.shape)
            shape[axis] = int(rng.integers(1, x.shape[axis] + 1))
            lines = np.moveaxis(np.empty(shape, np.int64), axis, -1)
            flat = lines.reshape(-1, shape[axis])
            for row in flat:  # distinct targets per line: the result is defined
                row[:] = rng.permutation(x.shape[axis])[: shape[axis]]
            ids = np.moveaxis(flat.reshape(lines.shape), -1, axis)
            updates = _values(rng, shape, dtype)
            want = x.copy()
            np.put_along_axis(want, ids, updates, axis=axis)
        else:  # scatterND
            k = int(rng.integers(1, x.ndim + 1))
            cells = math.prod(x.shape[:k])
            picked = rng.permutation(cells)[: int(rng.integers(1, min(cells, 4) + 1))]
            ids = np.stack(np.unravel_index(picked, x.shape[:k]), axis=-1)
            updates = _values(rng, [len(picked), *x.shape[k:]], dtype)
            want = x.copy()
            for c, u in zip(ids, updates, strict=True):
                want[tuple(c)] = u
        inputs[f"{op}Indices"] = _operand(np.asarray(ids).astype(index_type), constant=True)
        args = [*operand, {"indices": f"{op}Indices"}]
        if op.startswith("scatter"):
            inputs[f"{op}Updates"] = _operand(updates)
            args.append({"updates": f"{op}Updates"})
        if op in ("gather", "gatherElements", "scatterElements"):
            args.append({"options": {"axis": axis}})
    many = isinstance(want, list)
    outs = [f"{op}Output{k}" for k in range(len(want))] if many else [f"{op}Output"]
    wants = want if many else [want]
    shapes = "x".join(str(d) for d in x.shape) or "scalar"
    return {
        "name": f"{op} {dtype} {x.ndim}D [{shapes}] {json.dumps(args[1:], separators=(',', ':'))}",
        "graph": {
            "inputs": inputs,
            "operators": [{"name": op, "arguments": args, "outputs": outs if many else outs[0]}],
            "expectedOutputs": {
                n: _operand(np.array(w, dtype=np.asarray(w).dtype if op == "cast" else x.dtype))
                for n, w in zip(outs, wants, strict=True)
            },
        },
    }


def generate(
    seed: int, count: int, operations: Sequence[str] | None = None
) -> dict[str, list[dict[str, Any]]]:
    """`count` cases by operation (each in turn, a random data type), deterministic for a seed."""
    ops = list(operations or OPERATIONS)
    unknown = [o for o in ops if o not in OPERATIONS]
    if unknown:
        raise KeyError(f"not a WebNN operation the generator knows: {', '.join(unknown)}")
    rng = np.random.default_rng(seed)
    found: dict[str, list[dict[str, Any]]] = {op: [] for op in ops}
    for k in range(count):
        op = ops[k % len(ops)]
        found[op].append(_case(rng, op, str(rng.choice(_TYPES))))
    return {op: tests for op, tests in found.items() if tests}


def write(cases: Mapping[str, list[dict[str, Any]]], outdir: str | Path) -> list[Path]:
    """One OPERATION.json per operation (`{"operation", "tests"}`); the files written."""
    where = Path(outdir)
    where.mkdir(parents=True, exist_ok=True)
    written = []
    for op, tests in cases.items():
        path = where / f"{op}.json"
        path.write_text(json.dumps({"operation": op, "tests": tests}, indent=1) + "\n")
        written.append(path)
    return written


def load(path: str | Path) -> list[dict[str, Any]]:
    """The tests of a file `write` made, or of a JSON list of WPT-shaped tests."""
    doc = json.loads(Path(path).read_text())
    return list(doc["tests"] if isinstance(doc, dict) else doc)


def _array(entry: Mapping[str, Any]) -> np.ndarray[Any, Any]:
    d = entry["descriptor"]
    shape = d.get("shape", d.get("dimensions", []))
    array: np.ndarray[Any, Any] = np.array(entry["data"], dtype=d["dataType"])
    shaped: np.ndarray[Any, Any] = array.reshape(shape)
    return shaped


def run_case(test: Mapping[str, Any]) -> str | None:
    """Run one WPT-shaped case through `dmlops.webnn`: None where every expected output
    matches bit for bit, else what went wrong."""
    from .. import webnn
    from ..errors import DmlError

    graph = test["graph"]
    values = {name: _array(entry) for name, entry in graph["inputs"].items()}
    for op in graph["operators"]:
        args: list[Any] = []
        for argument in op["arguments"]:
            ((key, value),) = argument.items()
            if key in _OPERAND_ARGUMENTS:
                value = [values[v] for v in value] if isinstance(value, list) else values[value]
            args.append(value)
        try:
            result = getattr(webnn, op["name"])(*args)
        except DmlError as e:
            return f"{op['name']}: refused ({e})"
        names = op["outputs"] if isinstance(op["outputs"], list) else [op["outputs"]]
        results = result if isinstance(result, list) else [result]
        values.update(zip(names, (np.asarray(r) for r in results), strict=True))
    for name, entry in graph["expectedOutputs"].items():
        want, got = _array(entry), values[name]
        if got.dtype != want.dtype or got.shape != want.shape:
            return f"{name}: {got.dtype}{list(got.shape)}, expected {want.dtype}{list(want.shape)}"
        if np.ascontiguousarray(got).tobytes() != want.tobytes():
            return f"{name}: values differ ({got.reshape(-1)[:8]} ...)"
    return None
