"""`dmlops explain`: a descriptor built from the command line's fields (or an ONNX
node), validated, printed with its element mapping and, asked, drawn."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np

from ..device import Device
from ..errors import DmlError
from ..ops import (
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
from ..ops._indexed import right_aligned
from ..sources import element_sources
from ..tensor import BufferTensorDesc, DataType, FeatureLevel
from .text import _MAPPING_LIMIT, _ints, element_mapping, format_desc, format_tensor

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

    from .. import onnx as dml_onnx

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
    from ..picture import draw

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
