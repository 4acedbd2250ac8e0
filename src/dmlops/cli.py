"""The `dmlops` command line."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .device import Device
from .errors import DmlError
from .ops import (
    CastDesc,
    DepthToSpace1Desc,
    DepthToSpaceDesc,
    DiagonalMatrix1Desc,
    DiagonalMatrixDesc,
    ElementWiseIdentityDesc,
    FillValueConstantDesc,
    FillValueSequenceDesc,
    GatherDesc,
    GatherElementsDesc,
    GatherNd1Desc,
    GatherNdDesc,
    JoinDesc,
    MaxUnpoolingDesc,
    NonzeroCoordinatesDesc,
    OperatorDesc,
    Padding1Desc,
    PaddingDesc,
    Resample1Desc,
    Resample2Desc,
    ResampleDesc,
    ScatterElementsDesc,
    ScatterNdDesc,
    Slice1Desc,
    SliceDesc,
    SliceGradDesc,
    SpaceToDepth1Desc,
    SpaceToDepthDesc,
    SplitDesc,
    TileDesc,
    Upsample2dDesc,
)
from .ops._indexed import right_aligned
from .sources import element_sources
from .tensor import BufferTensorDesc, DataType, FeatureLevel

__all__ = ["main", "format_tensor", "format_desc"]

_MAPPING_LIMIT = 256


def format_tensor(name: str, desc: BufferTensorDesc, values: np.ndarray | None = None) -> str:
    """A tensor as the DirectML reference pages print it."""
    head = f"{name}: (Sizes:{{{', '.join(map(str, desc.sizes))}}}, DataType:{desc.data_type.name})"
    if values is None:
        return head
    v = values
    if v.dtype.kind == "f" and np.all(np.isfinite(v)) and np.all(v == np.round(v)):
        v = v.astype(np.int64)
    return head + "\n" + np.array2string(v, separator=", ")


def _braces(values: Sequence[int]) -> str:
    return "{" + ", ".join(map(str, values)) + "}"


def format_desc(desc: OperatorDesc) -> str:
    """The descriptor's own fields (not its tensors), as the reference pages write them."""
    lines = []
    for name, value in desc._field_items():
        if isinstance(value, (BufferTensorDesc, list)) and (
            isinstance(value, BufferTensorDesc)
            or (value and isinstance(value[0], BufferTensorDesc))
        ):
            continue
        shown = _braces(value) if isinstance(value, list) else str(value)
        lines.append(f"{name} = {shown}")
    return "\n".join(lines)


def element_mapping(desc: OperatorDesc, indices: dict[int, Any] | None = None) -> list[str]:
    """'Output[c] = Input[i]' lines for every output element written (an indexed operator's
    from its index values, `indices[k]` for its index input k)."""
    ins = [n.removesuffix("Tensor") for n, _ in desc.input_fields()]
    outs = [n.removesuffix("Tensor") for n, _ in desc.output_fields()]
    lines = []
    for (o, dst), (i, src) in element_sources(desc, indices).items():
        where = f"{outs[o]}[{','.join(map(str, dst))}]"
        what = desc.fill_text(i, src) if i < 0 else f"{ins[i]}[{','.join(map(str, src))}]"
        lines.append(f"{where} = {what}")
    return sorted(lines, key=lambda s: s.split(" = ")[0])


def _run_examples(args: argparse.Namespace) -> int:
    from .worked_examples import WORKED_EXAMPLES

    device = Device(FeatureLevel.parse(args.feature_level), backend=args.backend)
    failures = 0
    for ex in WORKED_EXAMPLES:
        x = ex.make_input()
        op = device.create_operator(ex.desc)
        outs = [np.full(t.sizes, np.nan, dtype=np.float32) for _, t in ex.desc.output_fields()]
        if args.backend == "cuda":
            import cupy

            gx, gouts = cupy.asarray(x), [cupy.asarray(o) for o in outs]
            op.execute([gx], gouts)
            outs = [cupy.asnumpy(o) for o in gouts]
        else:
            op.execute([x], outs)
        ok = all(np.array_equal(o, e) for o, e in zip(outs, ex.expected_arrays(), strict=True))
        failures += not ok
        print(f"=== {ex.title} ({'matches the reference page' if ok else 'MISMATCH'})")
        print(format_tensor("InputTensor", ex.desc.input_fields()[0][1], x))
        print(format_desc(ex.desc))
        for (name, t), o in zip(ex.desc.output_fields(), outs, strict=True):
            print(format_tensor(name, t, o))
        print()
    print(f"{len(WORKED_EXAMPLES) - failures} of {len(WORKED_EXAMPLES)} worked examples match")
    return 1 if failures else 0


def _ints(text: str) -> list[int]:
    try:
        return [int(v) for v in text.split(",") if v.strip() != ""]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a comma-separated list of integers"
        ) from None


def _floats(text: str) -> list[float]:
    try:
        return [float(v) for v in text.split(",") if v.strip() != ""]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a comma-separated list of numbers"
        ) from None


def _pair(text: str) -> tuple[int, int]:
    values = _ints(text)
    if len(values) != 2:
        raise argparse.ArgumentTypeError(f"{text!r} is not two comma-separated integers")
    return values[0], values[1]


_INDEXED = (
    "gather",
    "gather_elements",
    "gather_nd",
    "scatter_elements",
    "scatter_nd",
    "max_unpooling",
)


def _indexed_desc(args: argparse.Namespace, dt: DataType) -> OperatorDesc:
    """An indexed descriptor from --input-sizes, --indices-sizes (the data's rank: DirectML
    right-aligns every tensor) and --axis / --index-dimensions / --batch-dims."""
    op = args.operator
    if args.input_sizes is None or len(args.input_sizes) != 1 or args.indices_sizes is None:
        raise DmlError(f"{op.upper()}: give --input-sizes once, --indices-sizes and --indices")
    x = BufferTensorDesc(dt, args.input_sizes[0])
    rank = len(x.sizes)
    index = BufferTensorDesc(DataType.parse(args.index_type), args.indices_sizes)
    if op == "gather":
        dims = args.index_dimensions
        if dims is None:
            dims = rank - next((d for d, n in enumerate(index.sizes) if n != 1), rank)
        full = GatherDesc.output_sizes_for(x.sizes, index.sizes, args.axis, dims)
        out = BufferTensorDesc(dt, right_aligned("GATHER", "OutputTensor", full, rank, "it"))
        return GatherDesc(x, index, out, args.axis, dims)
    if op == "gather_elements":
        return GatherElementsDesc(x, index, BufferTensorDesc(dt, index.sizes), args.axis)
    if op == "gather_nd":
        full = GatherNd1Desc.output_sizes_for(x.sizes, index.sizes, args.batch_dims)
        out = BufferTensorDesc(dt, right_aligned("GATHER_ND", "OutputTensor", full, rank, "it"))
        if args.batch_dims:
            return GatherNd1Desc(x, index, out, rank, rank, args.batch_dims)
        return GatherNdDesc(x, index, out, rank, rank)
    if op == "max_unpooling":  # the output's sizes: --output-sizes (default the input's)
        sizes = args.output_sizes if args.output_sizes is not None else x.sizes
        return MaxUnpoolingDesc(x, index, BufferTensorDesc(dt, sizes))
    if op == "scatter_elements":
        updates = BufferTensorDesc(dt, index.sizes)
        return ScatterElementsDesc(x, index, updates, BufferTensorDesc(dt, x.sizes), args.axis)
    full = ScatterNdDesc.updates_sizes_for(x.sizes, index.sizes)
    sizes = right_aligned("SCATTER_ND", "UpdatesTensor", full, rank, "it")
    updates = BufferTensorDesc(dt, sizes)
    return ScatterNdDesc(x, index, updates, BufferTensorDesc(dt, x.sizes), rank, rank)


def _index_values(args: argparse.Namespace, desc: OperatorDesc) -> dict[int, Any]:
    """The --indices values, as the index input of `desc` (empty for other operators)."""
    if desc.INDEX_FIELD is None:
        return {}
    names = [n for n, _ in desc.input_fields()]
    k = names.index(desc.INDEX_FIELD)
    t = desc.input_fields()[k][1]
    if args.indices is None or len(args.indices) != t.element_count:
        raise DmlError(
            f"{desc.OPERATOR}: give --indices, {t.element_count} values (row-major) for "
            f"{desc.INDEX_FIELD} {list(t.sizes)}"
        )
    return {k: np.array(args.indices, t.data_type.numpy_dtype).reshape(t.sizes)}


def _explain_desc(args: argparse.Namespace) -> OperatorDesc:
    dt = DataType.parse(args.data_type)
    op = args.operator
    if op in _INDEXED:
        return _indexed_desc(args, dt)
    if op in ("slice", "slice1"):
        if args.input_sizes is None or len(args.input_sizes) != 1:
            raise DmlError(f"{op.upper()}: give --input-sizes once")
        inp = BufferTensorDesc(dt, args.input_sizes[0])
        if op == "slice":
            out = BufferTensorDesc(dt, args.sizes)
            return SliceDesc(inp, out, args.offsets, args.sizes, args.strides)
        window = (args.window_offsets, args.window_sizes, args.window_strides)
        sizes = args.output_sizes
        if sizes is None:
            sizes = Slice1Desc(inp, inp, *window).default_output_sizes()
        return Slice1Desc(inp, BufferTensorDesc(dt, sizes), *window)
    if op == "slice_grad":
        if args.input_sizes is None or len(args.input_sizes) != 1 or args.output_sizes is None:
            raise DmlError(
                "SLICE_GRAD: give --input-sizes (InputGradientTensor) once and --output-sizes "
                "(OutputGradientTensor, the forward input's sizes)"
            )
        window = (args.window_offsets, args.window_sizes, args.window_strides)
        return SliceGradDesc(
            BufferTensorDesc(dt, args.input_sizes[0]),
            BufferTensorDesc(dt, args.output_sizes),
            *window,
        )
    if op == "padding1":
        if args.input_sizes is None or len(args.input_sizes) != 1:
            raise DmlError("PADDING1: give --input-sizes once, --start-padding and --end-padding")
        inp = BufferTensorDesc(dt, args.input_sizes[0])
        sizes = Padding1Desc.output_sizes_for(inp.sizes, args.start_padding, args.end_padding)
        return Padding1Desc(
            inp,
            BufferTensorDesc(dt, sizes),
            args.padding_mode,
            None,
            args.padding_value,
            args.start_padding,
            args.end_padding,
        )
    if op == "tile":
        if args.input_sizes is None or len(args.input_sizes) != 1:
            raise DmlError("TILE: give --input-sizes once, and --repeats")
        inp = BufferTensorDesc(dt, args.input_sizes[0])
        sizes = TileDesc.output_sizes_for(inp.sizes, args.repeats)
        return TileDesc(inp, BufferTensorDesc(dt, sizes), args.repeats)
    if op in ("depth_to_space1", "space_to_depth1"):
        if args.input_sizes is None or len(args.input_sizes) != 1:
            raise DmlError(f"{op.upper()}: give --input-sizes once")
        inp = BufferTensorDesc(dt, args.input_sizes[0])
        block: type[DepthToSpace1Desc] | type[SpaceToDepth1Desc] = (
            DepthToSpace1Desc if op == "depth_to_space1" else SpaceToDepth1Desc
        )
        probe = block(inp, inp, args.block_size, args.order)
        ok = inp.dimension_count == 4 and probe.block_size >= 1
        moved = probe.expected_output_sizes() if ok else inp.sizes
        return block(inp, BufferTensorDesc(dt, moved), args.block_size, args.order)
    if op in _FIRST_AND_NEW:
        return _first_and_new_desc(args, dt)
    if op == "split":
        if args.input_sizes is None or len(args.input_sizes) != 1:
            raise DmlError("SPLIT: give --input-sizes once")
        whole = args.input_sizes[0]
        outs = [
            BufferTensorDesc(dt, [p if d == args.axis else n for d, n in enumerate(whole)])
            for p in args.split_sizes
        ]
        return SplitDesc(BufferTensorDesc(dt, whole), outs, args.axis)
    pieces = [BufferTensorDesc(dt, s) for s in args.input_sizes or []]
    whole = list(args.input_sizes[0]) if args.input_sizes else [1]
    if 0 <= args.axis < len(whole):
        whole[args.axis] = sum(s[args.axis] if len(s) > args.axis else 0 for s in args.input_sizes)
    return JoinDesc(pieces, BufferTensorDesc(dt, whole), args.axis)


_FIRST_AND_NEW = (
    "padding",
    "depth_to_space",
    "space_to_depth",
    "upsample_2d",
    "element_wise_identity",
    "fill_value_constant",
    "fill_value_sequence",
    "cast",
    "nonzero_coordinates",
    "diagonal_matrix",
    "diagonal_matrix1",
    "resample",
    "resample1",
    "resample2",
)


def _first_and_new_desc(args: argparse.Namespace, dt: DataType) -> OperatorDesc:
    """PADDING, DEPTH_TO_SPACE, SPACE_TO_DEPTH (the first versions), UPSAMPLE_2D,
    ELEMENT_WISE_IDENTITY and FILL_VALUE_CONSTANT from the command line."""
    op = args.operator
    if op == "diagonal_matrix":
        if args.output_sizes is None:
            raise DmlError("DIAGONAL_MATRIX: give --output-sizes (and --diagonal-offset)")
        value = args.padding_value if args.padding_value else 1.0
        return DiagonalMatrixDesc(
            BufferTensorDesc(dt, args.output_sizes), args.diagonal_offset, value
        )
    if op == "diagonal_matrix1":
        given = args.input_sizes[0] if args.input_sizes else None
        sizes = args.output_sizes if args.output_sizes is not None else given
        if sizes is None:
            raise DmlError("DIAGONAL_MATRIX1: give --input-sizes or --output-sizes")
        begin, end = args.diagonal_fill
        value = args.padding_value if args.padding_value else 1
        if dt.numpy_dtype.kind in "iu" and float(value).is_integer():
            value = int(value)
        source = None if given is None else BufferTensorDesc(dt, given)
        return DiagonalMatrix1Desc(source, BufferTensorDesc(dt, sizes), None, value, begin, end)
    if op == "fill_value_sequence":
        if args.output_sizes is None:
            raise DmlError("FILL_VALUE_SEQUENCE: give --output-sizes (and --sequence START,DELTA)")
        start, delta = args.sequence
        if dt.numpy_dtype.kind in "iu":
            start, delta = int(start), int(delta)
        return FillValueSequenceDesc(BufferTensorDesc(dt, args.output_sizes), None, start, delta)
    if op == "fill_value_constant":
        if args.output_sizes is None:
            raise DmlError("FILL_VALUE_CONSTANT: give --output-sizes (and --padding-value)")
        value = args.padding_value
        if dt.numpy_dtype.kind in "iu" and float(value).is_integer():
            value = int(value)
        return FillValueConstantDesc(BufferTensorDesc(dt, args.output_sizes), None, value)
    if args.input_sizes is None or len(args.input_sizes) != 1:
        raise DmlError(f"{op.upper()}: give --input-sizes once")
    inp = BufferTensorDesc(dt, args.input_sizes[0])
    if op == "padding":
        sizes = Padding1Desc.output_sizes_for(inp.sizes, args.start_padding, args.end_padding)
        return PaddingDesc(
            inp,
            BufferTensorDesc(dt, sizes),
            args.padding_mode,
            args.padding_value,
            args.start_padding,
            args.end_padding,
        )
    if op in ("depth_to_space", "space_to_depth"):
        first = DepthToSpaceDesc if op == "depth_to_space" else SpaceToDepthDesc
        return first(
            inp, BufferTensorDesc(dt, first.output_sizes_for(inp, args.block_size)), args.block_size
        )
    if op == "nonzero_coordinates":
        count, coords = NonzeroCoordinatesDesc.output_sizes_for(inp.sizes)
        return NonzeroCoordinatesDesc(
            inp, BufferTensorDesc(DataType.UINT32, count), BufferTensorDesc(DataType.UINT32, coords)
        )
    if op == "cast":
        target = DataType.parse(args.output_data_type, "CAST.OutputTensor.DataType")
        return CastDesc(inp, BufferTensorDesc(target, inp.sizes))
    if op in ("resample", "resample1", "resample2"):
        scales = args.scales if args.scales is not None else [1.0] * len(inp.sizes)
        sizes = (
            args.output_sizes
            if args.output_sizes is not None
            else ResampleDesc.output_sizes_for(inp.sizes, scales)
        )
        out = BufferTensorDesc(dt, sizes)
        if op == "resample":
            return ResampleDesc(inp, out, scales)
        ins = args.input_pixel_offsets or [0.5] * len(scales)
        outs = args.output_pixel_offsets or [-0.5] * len(scales)
        if op == "resample1":
            return Resample1Desc(inp, out, scales, ins, outs)
        return Resample2Desc(inp, out, scales, ins, outs, args.rounding_direction)
    if op == "upsample_2d":
        sizes = Upsample2dDesc.output_sizes_for(inp.sizes, args.scale_size)
        return Upsample2dDesc(inp, BufferTensorDesc(dt, sizes), args.scale_size)
    return ElementWiseIdentityDesc(inp, BufferTensorDesc(dt, inp.sizes, args.output_strides))


_OPERATORS = (
    "slice",
    "slice1",
    "slice_grad",
    "split",
    "join",
    "tile",
    "padding1",
    "depth_to_space1",
    "space_to_depth1",
    *_FIRST_AND_NEW,
    *_INDEXED,
)


def _run_explain_onnx(
    path: str, level: FeatureLevel, shapes: list[str], max_file_bytes: int
) -> int:
    """Compile an ONNX model as one graph for its declared input shapes; print the copies."""
    import onnx

    from . import onnx as dml_onnx

    given: dict[str, list[int]] = {}
    for item in shapes:
        name, _, text = item.partition("=")
        given[name] = _ints(text)
    model = dml_onnx.load(path, max_file_bytes)
    initialized = {i.name for i in model.graph.initializer}
    arrays = {}
    for i in model.graph.input:
        if i.name in initialized:
            continue
        t = i.type.tensor_type
        shape = given.get(i.name) or [int(d.dim_value) for d in t.shape.dim]
        if i.name not in given and any(d.dim_value <= 0 for d in t.shape.dim):
            raise DmlError(f"ONNX input '{i.name}' has an open shape: give --input-shape")
        dtype = onnx.helper.tensor_dtype_to_np_dtype(t.elem_type)
        arrays[i.name] = np.zeros(shape, dtype)
    try:
        compiled = dml_onnx.compile(model, arrays, Device(level))
    except DmlError as e:
        print(f"INVALID at {level.dml_name}: {e}")
        return 1
    if isinstance(compiled, dml_onnx.StagedModel):
        print(
            f"VALID at {level.dml_name}: {path} in steps (its data flow needs run-time values; "
            "indices are read only where each plan runs)"
        )
        print(compiled.describe())
        return 0
    if isinstance(compiled, dml_onnx.DynamicModel):
        print(f"VALID at {level.dml_name}: {path} {compiled.describe()}")
        return 0
    notes = getattr(compiled.operator, "notes", [])
    passes = f"in {len(notes) + 1} passes" if notes else "as one graph"
    print(f"VALID at {level.dml_name}: {path} {passes}")
    for name in compiled.data_inputs:
        print(f"input {name}: {list(arrays[name].shape)} {arrays[name].dtype}")
    for name, spec in compiled.outputs:
        print(
            f"output {name}: "
            + ("empty, no dispatch" if spec[0] == "empty" else f"plan output {spec[1]}")
        )
    for note in notes:
        print(f"copy added: {note}")
    describe = getattr(compiled.operator, "describe", None)
    if notes and describe is not None:
        print(describe())
    elif compiled.plan is not None:
        print(compiled.plan.describe())
    return 0


def _plot(desc: OperatorDesc, path: str, level: FeatureLevel, indices: dict[int, Any]) -> None:
    from .picture import draw

    if Path(path).suffix.lower() not in (".png", ".svg", ".pdf"):
        raise DmlError(f"explain --plot: {path!r} must end in .png, .svg or .pdf")
    values = None
    if indices:  # cells show each data element's logical index, the indices their values
        values = [
            indices.get(k, np.arange(t.element_count).reshape(t.sizes))
            for k, (_, t) in enumerate(desc.input_fields())
        ]
    draw(desc, path, level, values)
    print(f"picture written to {path}")


def _run_explain(args: argparse.Namespace) -> int:
    level = FeatureLevel.parse(args.feature_level)
    if args.operator.endswith(".onnx"):
        return _run_explain_onnx(args.operator, level, args.input_shape, args.max_file_bytes)
    if args.operator not in _OPERATORS:
        raise DmlError(
            f"explain: {args.operator!r} is not one of {', '.join(_OPERATORS)} or an .onnx file"
        )
    desc = None
    try:
        desc = _explain_desc(args)
        indices = _index_values(args, desc)
        if args.plot:
            _plot(desc, args.plot, level, indices)
        desc.validate(level)
        element_sources(desc, indices)  # indices out of range: refused here, by name
    except DmlError as e:
        print(f"INVALID at {level.dml_name}: {e}")
        return 1
    print(f"VALID at {level.dml_name}: {desc.operator_type}")
    for name, t in desc.input_fields():
        print(format_tensor(name, t))
    print(format_desc(desc))
    for name, t in desc.output_fields():
        print(format_tensor(name, t))
    print(desc.lower().describe())
    total = sum(t.element_count for _, t in desc.output_fields())
    if total <= _MAPPING_LIMIT:
        print("\n".join(element_mapping(desc, indices)))
    else:
        print(f"({total} output elements: mapping shown for at most {_MAPPING_LIMIT})")
    return 0


def _run_model(args: argparse.Namespace) -> int:
    device = Device(args.feature_level, backend="numpy" if args.device == "cpu" else "cuda")
    if args.model.endswith(".onnx"):
        return _run_onnx(args, device)
    from .dxdispatch import load_model, run_model

    model = load_model(Path(args.model), args.max_bytes, args.max_file_bytes)
    run_model(model, device)
    return 0


def _run_onnx(args: argparse.Namespace, device: Device) -> int:
    """An ONNX model through an InferenceSession: inputs from .npy files, outputs printed."""
    from .onnx import InferenceSession

    session = InferenceSession(args.model, device, args.max_file_bytes)
    feed: dict[str, Any] = {}
    for item in args.input:
        name, _, path = item.partition("=")
        try:
            feed[name] = np.load(path, allow_pickle=False)
        except (OSError, ValueError) as e:
            raise DmlError(f"--input {item}: not a readable .npy file ({e})") from None
    missing = [i for i in session.get_inputs() if i.name not in feed]
    if missing:
        wanted = ", ".join(f"{i.name} {i.shape} {i.type}" for i in missing)
        raise DmlError(f"{args.model}: give --input NAME=FILE.npy for {wanted}")
    for out, value in zip(session.get_outputs(), session.run(None, feed), strict=True):
        host = np.asarray(value.get() if hasattr(value, "get") else value)
        print(f"Output '{out.name}' {list(host.shape)} {host.dtype}: {_values_text(host)}")
    return 0


def _values_text(a: np.ndarray[Any, Any], limit: int = 64) -> str:
    flat = a.reshape(-1)
    shown = ", ".join(str(v) for v in flat[:limit].tolist())
    return shown + (f", ... ({flat.size} values)" if flat.size > limit else "")


def _run_gen_tests(args: argparse.Namespace) -> int:
    ops = [o.strip() for o in args.operators.split(",") if o.strip()] if args.operators else None
    if args.format == "onnx":
        from .conformance.backend_tests import write_cases
        from .conformance.onnx_cases import generate as onnx_cases

        written = write_cases(
            onnx_cases(args.seed, args.count, ops, args.invalid_fraction), args.outdir
        )
        valid = sum(1 for e in written if e["valid"] and "path" in e)
        invalid = sum(1 for e in written if not e["valid"])
        refused = len(written) - valid - invalid
        print(
            f"wrote {valid} valid ONNX backend tests to {Path(args.outdir) / 'valid'}, "
            f"{invalid} invalid models to {Path(args.outdir) / 'invalid'}"
            + (f" ({refused} valid models dmlops refused: see index.json)" if refused else "")
        )
        return 0
    if args.format == "webnn":
        from .conformance.webnn_cases import generate as webnn_cases
        from .conformance.webnn_cases import write

        found = webnn_cases(args.seed, args.count, ops)
        files = write(found, args.outdir)
        total = sum(len(t) for t in found.values())
        print(f"wrote {total} WebNN cases in {len(files)} files to {args.outdir}")
        return 0
    from .testvectors import generate

    index = generate(
        args.outdir,
        args.count,
        args.seed,
        ops,
        args.feature_level,
        args.invalid_fraction,
        args.max_bytes,
    )
    valid = sum(1 for e in index if e["valid"])
    print(
        f"wrote {len(index)} models ({valid} valid, {len(index) - valid} invalid) to {args.outdir}"
    )
    return 0


def _run_conform(args: argparse.Namespace) -> int:
    from .conformance.differential import OnnxRuntimeRunner, conform

    runner = OnnxRuntimeRunner(args.provider or None)
    ops = [o.strip() for o in args.operators.split(",") if o.strip()] if args.operators else None
    report = conform(
        runner,
        args.count,
        args.seed,
        ops,
        args.out,
        shrink_findings=not args.no_shrink,
        most_shrunk=args.most_shrunk,
    )
    print(
        f"{report.runtime} against dmlops: {len(report.outcomes)} cases, seed {args.seed}, "
        f"{report.seconds:.1f} s\n"
    )
    print(report.table())
    refusals = report.refusals()
    if refusals:
        print("\nvalid models the runtime refused, single operators (operator-opset: data types):")
        by_op: dict[str, list[str]] = {}
        chains = 0
        for (ops_opset, dtype), n in refusals.items():
            if "+" in ops_opset:
                chains += n
                continue
            by_op.setdefault(ops_opset, []).append(dtype if n == 1 else f"{dtype} x{n}")
        for ops_opset, kinds in by_op.items():
            print(f"  {ops_opset}: {', '.join(kinds)}")
        if chains:
            print(f"  and {chains} chains of operators")
    if report.shrunk:
        print("\nfindings (shrunk):")
        for found, small, where in report.shrunk:
            print(
                f"  {small.verdict}: {small.case.name} (size {found.case.size} -> "
                f"{small.case.size}) {small.detail}" + (f"\n    {where}" if where else "")
            )
    return 0


def _run_check(args: argparse.Namespace) -> int:
    import json

    from .testvectors import check

    expected = json.loads(Path(args.expected).read_text())
    problems = check(expected, Path(args.run_output).read_text())
    if problems:
        print("\n".join(problems))
        return 1
    print("match")
    return 0


def _add_max_file_bytes(parser: argparse.ArgumentParser) -> None:
    from ._files import DEFAULT_MAX_FILE_BYTES

    parser.add_argument(
        "--max-file-bytes",
        type=int,
        default=DEFAULT_MAX_FILE_BYTES,
        help="refuse model files larger than this, before parsing (default 64 MiB)",
    )


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the `dmlops` command."""
    parser = argparse.ArgumentParser(
        prog="dmlops",
        description="DirectML's SLICE, SLICE1, SPLIT and JOIN operators: run, explain, validate.",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    ex = sub.add_parser(
        "examples",
        help="run the six worked examples of DirectML's reference pages",
        description="Run the worked examples of the SLICE, SLICE1 and SPLIT reference pages and "
        "print input, descriptor and output as the pages show them. Exit status 1 on a mismatch.",
    )
    ex.add_argument(
        "--backend", choices=["numpy", "cuda"], default="numpy", help="execution backend"
    )
    ex.add_argument(
        "--feature-level", default=None, help="device feature level, e.g. 3_0 (default: the newest)"
    )
    ex.set_defaults(func=_run_examples)

    xp = sub.add_parser(
        "explain",
        help="validate a descriptor and show which input element each output element copies",
        description="Validate one operator descriptor at a feature level; print the verdict, the "
        "strided-copy plan and, for up to 256 output elements, the element mapping. "
        "Exit status 1 when the descriptor is invalid.",
    )
    xp.add_argument(
        "operator",
        help="slice, slice1, slice_grad, split, join, tile, padding1, depth_to_space1, "
        "space_to_depth1, gather, gather_elements, gather_nd, scatter_elements or scatter_nd; "
        "or the path of an ONNX model (.onnx) to show the whole model compiled",
    )
    xp.add_argument(
        "--input-shape",
        action="append",
        default=[],
        metavar="NAME=D0,D1,...",
        help="ONNX: the shape of a model input whose shape the model leaves open",
    )
    xp.add_argument(
        "--input-sizes",
        type=_ints,
        action="append",
        help="input tensor sizes, e.g. 1,1,4,4 (join: repeat once per input)",
    )
    xp.add_argument(
        "--plot",
        metavar="FILE",
        help="also draw the operator to FILE (.png/.svg/.pdf; needs pip install 'dmlops[plot]')",
    )
    xp.add_argument("--data-type", default="FLOAT32", help="DML data type name (default FLOAT32)")
    xp.add_argument(
        "--feature-level", default=None, help="feature level, e.g. 2_1 (default: the newest)"
    )
    xp.add_argument("--offsets", type=_ints, default=[], help="SLICE Offsets")
    xp.add_argument("--sizes", type=_ints, default=[], help="SLICE Sizes (= output sizes)")
    xp.add_argument("--strides", type=_ints, default=[], help="SLICE Strides")
    xp.add_argument(
        "--window-offsets", type=_ints, default=[], help="SLICE1/SLICE_GRAD InputWindowOffsets"
    )
    xp.add_argument(
        "--window-sizes", type=_ints, default=[], help="SLICE1/SLICE_GRAD InputWindowSizes"
    )
    xp.add_argument(
        "--window-strides", type=_ints, default=[], help="SLICE1/SLICE_GRAD InputWindowStrides"
    )
    xp.add_argument(
        "--output-sizes",
        type=_ints,
        default=None,
        help="SLICE1 output sizes (default MaxCopiedElements); SLICE_GRAD OutputGradientTensor "
        "sizes (required)",
    )
    xp.add_argument("--axis", type=int, default=0, help="SPLIT/JOIN/GATHER/... Axis")
    xp.add_argument(
        "--indices-sizes", type=_ints, default=None, help="GATHER/SCATTER IndicesTensor sizes"
    )
    xp.add_argument(
        "--indices",
        type=_ints,
        default=None,
        help="GATHER/SCATTER index values, row-major (which source element lands where)",
    )
    xp.add_argument(
        "--index-type", default="INT32", help="GATHER/SCATTER IndicesTensor type (default INT32)"
    )
    xp.add_argument(
        "--index-dimensions",
        type=int,
        default=None,
        help="GATHER IndexDimensions (default: the indices' sizes after their leading ones)",
    )
    xp.add_argument("--batch-dims", type=int, default=0, help="GATHER_ND1 BatchDimensionCount")
    xp.add_argument("--repeats", type=_ints, default=[], help="TILE Repeats")
    xp.add_argument("--start-padding", type=_ints, default=[], help="PADDING1 StartPadding")
    xp.add_argument("--end-padding", type=_ints, default=[], help="PADDING1 EndPadding")
    xp.add_argument(
        "--padding-mode",
        default="CONSTANT",
        help="PADDING1 PaddingMode: CONSTANT, EDGE, REFLECTION, SYMMETRIC or WRAP",
    )
    xp.add_argument("--padding-value", type=float, default=0.0, help="PADDING1 PaddingValue")
    xp.add_argument(
        "--block-size", type=int, default=2, help="DEPTH_TO_SPACE1/SPACE_TO_DEPTH1 BlockSize"
    )
    xp.add_argument(
        "--order",
        default="DEPTH_COLUMN_ROW",
        help="DEPTH_TO_SPACE1/SPACE_TO_DEPTH1 Order: DEPTH_COLUMN_ROW (DCR) or "
        "COLUMN_ROW_DEPTH (CRD)",
    )
    xp.add_argument(
        "--split-sizes", type=_ints, default=[], help="SPLIT: each output's size along Axis"
    )
    xp.add_argument(
        "--scale-size", type=_ints, default=[2, 2], help="UPSAMPLE_2D ScaleSize: Height,Width"
    )
    xp.add_argument("--diagonal-offset", type=int, default=0, help="DIAGONAL_MATRIX Offset")
    xp.add_argument("--scales", type=_floats, default=None, help="RESAMPLE* Scales")
    xp.add_argument(
        "--output-data-type", default="INT32", help="CAST OutputTensor DataType (INT32)"
    )
    xp.add_argument(
        "--sequence",
        type=_floats,
        default=[0.0, 1.0],
        help="FILL_VALUE_SEQUENCE ValueStart,ValueDelta (default 0,1)",
    )
    xp.add_argument(
        "--input-pixel-offsets", type=_floats, default=None, help="RESAMPLE1/2 (default 0.5)"
    )
    xp.add_argument(
        "--output-pixel-offsets", type=_floats, default=None, help="RESAMPLE1/2 (default -0.5)"
    )
    xp.add_argument(
        "--rounding-direction",
        default="DECREASING",
        help="RESAMPLE2 RoundingDirection: INCREASING (up) or DECREASING (down)",
    )
    xp.add_argument(
        "--diagonal-fill",
        type=_pair,
        default=(0, 1),
        help="DIAGONAL_MATRIX1 DiagonalFillBegin,DiagonalFillEnd (default 0,1)",
    )
    xp.add_argument(
        "--output-strides",
        type=_ints,
        default=None,
        help="ELEMENT_WISE_IDENTITY OutputTensor Strides (a layout change)",
    )
    _add_max_file_bytes(xp)
    xp.set_defaults(func=_run_explain)

    gen = sub.add_parser(
        "gen-tests",
        help="write random DxDispatch-style test models with their expected outputs",
        description="Write COUNT DxDispatch-style JSON models of random SLICE/SLICE1/SPLIT/JOIN "
        "descriptors, a sidecar NAME.expected.json per model (the expected printout of every "
        "output, or the rule an invalid descriptor breaks) and index.json. Deterministic for "
        "a seed.",
    )
    gen.add_argument("outdir", help="directory to write into")
    gen.add_argument(
        "--format",
        choices=["dxdispatch", "onnx", "webnn"],
        default="dxdispatch",
        help="dxdispatch: DirectML descriptors as DxDispatch JSON models (default); onnx: "
        "ONNX backend-test directories (OUTDIR/valid/test_*/model.onnx + test_data_set_0, "
        "OUTDIR/invalid/ for models ONNX forbids); webnn: web-platform-tests-shaped WebNN "
        "cases, one OPERATION.json each",
    )
    gen.add_argument("--count", type=int, default=100, help="number of models (default 100)")
    gen.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    gen.add_argument(
        "--operators",
        default=None,
        help="comma-separated operators (default: all). dxdispatch: slice, slice1, slice_grad, "
        "split, join, tile, padding, padding1, depth_to_space, depth_to_space1, space_to_depth, "
        "space_to_depth1, upsample_2d, fill_value_constant, fill_value_sequence, cast, "
        "element_wise_identity, "
        "diagonal_matrix, diagonal_matrix1, resample, resample1, resample2, gather, "
        "gather_elements, "
        "gather_nd, scatter_elements, scatter_nd, one_hot, reverse_subsequences (those the "
        "feature level has); onnx: ONNX op types (Slice, Gather, ...); webnn: WebNN operations "
        "(slice, gatherND, ...)",
    )
    gen.add_argument("--feature-level", default=None, help="feature level (default: the newest)")
    gen.add_argument(
        "--invalid-fraction", type=float, default=0.2, help="share of invalid models (0.2)"
    )
    gen.add_argument(
        "--max-bytes", type=int, default=1 << 20, help="largest tensor bytes in one model"
    )
    gen.set_defaults(func=_run_gen_tests)

    conf = sub.add_parser(
        "conform",
        help="differential fuzz of an ONNX runtime against dmlops",
        description="Generate COUNT random data-movement ONNX models (valid ones and ones ONNX "
        "forbids), run each on RUNTIME and on dmlops, compare every output bit for bit, shrink "
        "each finding (a disagreement, an invalid model the runtime answers, a valid model "
        "dmlops refuses) to a smallest case that keeps it, write it as a backend-test "
        "directory under --out, and print a table per operator. Findings are reported, not "
        "failures: the exit status is 0 unless the run itself fails.",
    )
    conf.add_argument("runtime", choices=["onnxruntime"], help="the runtime to test")
    conf.add_argument(
        "--provider",
        action="append",
        default=[],
        help="an execution provider (repeat; default CPUExecutionProvider)",
    )
    conf.add_argument("--count", type=int, default=2000, help="cases (default 2000)")
    conf.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    conf.add_argument("--operators", default=None, help="comma-separated ONNX op types")
    conf.add_argument("--out", default=None, help="write shrunk findings under this directory")
    conf.add_argument("--no-shrink", action="store_true", help="report findings as generated")
    conf.add_argument(
        "--most-shrunk", type=int, default=20, help="shrink at most this many findings (20)"
    )
    conf.set_defaults(func=_run_conform)

    chk = sub.add_parser(
        "check",
        help="compare a DxDispatch-style printout with a test model's expected outputs",
        description="Compare RUN_OUTPUT (what a backend printed for a model, in the format "
        "`dmlops run` and DxDispatch print, or its error text) with EXPECTED (a sidecar from "
        "`dmlops gen-tests`), element by element; prints the first mismatches. Exit status 1 "
        "on a mismatch.",
    )
    chk.add_argument("expected", help="NAME.expected.json")
    chk.add_argument("run_output", help="a file holding the printout")
    chk.set_defaults(func=_run_check)

    run = sub.add_parser(
        "run",
        help="execute a DxDispatch-style JSON model file or an ONNX model",
        description="Execute a model file in DxDispatch's JSON format (resources, dispatchables of "
        "type DML_OPERATOR_SLICE/SLICE1/SLICE_GRAD/SPLIT/JOIN/..., commands 'dispatch' and "
        "'print') and print resources as DxDispatch does; or an ONNX model (.onnx) through an "
        "InferenceSession, inputs from --input NAME=FILE.npy, outputs printed. Exit status 1 "
        "when the model is malformed or invalid.",
    )
    run.add_argument("model", help="path of the JSON model file or the .onnx model")
    run.add_argument(
        "--input",
        action="append",
        default=[],
        metavar="NAME=FILE.npy",
        help="ONNX models: an input's values (repeat for each input)",
    )
    run.add_argument("--device", choices=["cpu", "cuda"], default="cpu", help="where to execute")
    run.add_argument(
        "--feature-level", default=None, help="device feature level (default: the newest)"
    )
    run.add_argument(
        "--max-bytes",
        type=int,
        default=256 << 20,
        help="refuse models whose resources exceed this many bytes (default 256 MiB)",
    )
    _add_max_file_bytes(run)
    run.set_defaults(func=_run_model)

    sub.add_parser(
        "bench",
        help="time dmlops against numpy, torch, CuPy, onnxruntime and JAX",
        description="Run the benchmark suite; all arguments after 'bench' go to it "
        "(see 'dmlops bench --help').",
        add_help=False,
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `dmlops` console script."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["bench"]:
        from .bench import main as bench_main

        return bench_main(argv[1:])
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except DmlError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
