"""ONNX models of data-movement nodes on dask arrays: one lazy task graph.

The model is lowered as `dmlops.onnx` lowers it (the same parameter reading, folding of
shape arithmetic and validation, `onnx.lowering.lower_model`), onto a builder whose nodes are
dmlops.dask operators instead of a Graph's: a chain of strided nodes (a Focus stem's slices
and Concat, a pad, a tile) composes into one layer of chunk tasks, the indexed nodes route
their indices to the chunks that hold them, Cast runs chunk by chunk, and Transpose and
Reshape are dask.array's own (they move no element until the graph runs).
"""

from __future__ import annotations

import types
from collections import ChainMap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from .. import calls
from ..device import Device
from ..elements import element_of, unsigned_dtype, word_element
from ..errors import ModelError
from ..graph import GraphTensor
from ..tensor import BufferTensorDesc, FeatureLevel, packed_strides
from . import blockwise, indexed, moves
from ._chunks import _dask

__all__ = ["run_onnx"]


@dataclass(frozen=True)
class _Lazy(GraphTensor):
    """A value of the model as the builder makes it: a dask array (its `desc` the graph
    tensor's, for the lowering's shape reading)."""

    array: Any = None


class _DaskBuilder:
    """The builder methods the ONNX lowering calls on a Graph, made of dmlops.dask calls."""

    def __init__(self, sources: Mapping[str, Any], level: FeatureLevel) -> None:
        self.sources = sources
        self.level = level
        self.count = 0

    def wrap(self, array: Any) -> _Lazy:
        element = word_element(array.dtype, "dmlops.dask.run_onnx")
        desc = BufferTensorDesc(element.described_as, tuple(array.shape))
        self.count += 1
        return _Lazy(cast(Any, self), self.count, desc, None, array)

    def input(self, desc: BufferTensorDesc, name: str | None = None) -> _Lazy:
        array = self.sources[str(name)]
        if not _is_dask(array):
            array = _dask().from_array(np.asarray(array), chunks=-1)
        if tuple(array.shape) != tuple(desc.sizes):  # a scalar enters as one element
            array = array.reshape(desc.sizes)
        return self.wrap(array)

    def slice1(
        self,
        x: _Lazy,
        offsets: Sequence[int],
        sizes: Sequence[int],
        strides: Sequence[int],
        output_sizes: Sequence[int] | None = None,
        name: str | None = None,
    ) -> _Lazy:
        window = (offsets, sizes, strides, output_sizes)
        return self.wrap(moves.slice1(x.array, *window, feature_level=self.level))

    def split(
        self, x: _Lazy, axis: int, sizes: Sequence[int], name: str | None = None
    ) -> list[_Lazy]:
        return [self.wrap(p) for p in moves.split(x.array, axis, sizes, feature_level=self.level)]

    def join(self, xs: Sequence[_Lazy], axis: int, name: str | None = None) -> _Lazy:
        arrays = [x.array for x in xs]
        return self.wrap(moves.join(arrays, axis, feature_level=self.level))

    def tile(self, x: _Lazy, repeats: Sequence[int], name: str | None = None) -> _Lazy:
        return self.wrap(moves.tile(x.array, repeats, feature_level=self.level))

    def padding(
        self,
        x: _Lazy,
        start: Sequence[int],
        end: Sequence[int],
        mode: Any = "CONSTANT",
        value: float | int = 0,
        name: str | None = None,
    ) -> _Lazy:
        array = x.array
        if element_of(array.dtype).data_type is None:  # the value is the element's bits
            bits = array.view(unsigned_dtype(array.dtype.itemsize))
            made = moves.padding(bits, start, end, mode, value, feature_level=self.level)
            return self.wrap(made.view(array.dtype))
        return self.wrap(moves.padding(array, start, end, mode, value, feature_level=self.level))

    def depth_to_space(
        self, x: _Lazy, block_size: int, order: Any = 0, name: str | None = None
    ) -> _Lazy:
        made = moves.depth_to_space(x.array, block_size, order, feature_level=self.level)
        return self.wrap(made)

    def space_to_depth(
        self, x: _Lazy, block_size: int, order: Any = 0, name: str | None = None
    ) -> _Lazy:
        made = moves.space_to_depth(x.array, block_size, order, feature_level=self.level)
        return self.wrap(made)

    def upsample_2d(self, x: _Lazy, scale_size: Sequence[int], name: str | None = None) -> _Lazy:
        return self.wrap(moves.upsample_2d(x.array, scale_size, feature_level=self.level))

    def diagonal_matrix1(
        self, x: _Lazy, begin: int, end: int, value: float | int = 0, name: str | None = None
    ) -> _Lazy:
        made = blockwise.diagonal_matrix1(x.array, begin, end, value, feature_level=self.level)
        return self.wrap(made)

    def resample2(
        self,
        x: _Lazy,
        sizes: Sequence[int],
        scales: Sequence[float],
        input_pixel_offsets: Sequence[float],
        output_pixel_offsets: Sequence[float],
        rounding_direction: Any = "DECREASING",
        maps: Sequence[Any] | None = None,
        name: str | None = None,
    ) -> _Lazy:
        if maps is None:
            made = blockwise.resample(
                x.array,
                scales,
                sizes=sizes,
                input_pixel_offsets=input_pixel_offsets,
                output_pixel_offsets=output_pixel_offsets,
                rounding_direction=rounding_direction,
                feature_level=self.level,
            )
            return self.wrap(made)
        array = x.array  # the importer's own index maps: a routed gather along each axis moved
        for d, index in enumerate(maps):
            index = np.asarray(index, np.int64)
            if not np.array_equal(index, np.arange(array.shape[d])):
                array = indexed.gather(array, index, d, feature_level=self.level)
        return self.wrap(array)

    def broadcast(self, x: _Lazy, sizes: Sequence[int], name: str | None = None) -> _Lazy:
        return self.wrap(_dask().broadcast_to(x.array, tuple(sizes)))

    def filled(self, desc: BufferTensorDesc, value: bytes, name: str | None = None) -> _Lazy:
        dtype = np.dtype(desc.data_type.numpy_dtype)
        one = np.frombuffer(value, dtype)[0]
        return self.wrap(_dask().full(desc.sizes, one, dtype=dtype))

    def reinterpret(
        self,
        x: _Lazy,
        sizes: Sequence[int],
        strides: Sequence[int] | None = None,
        name: str | None = None,
    ) -> _Lazy:
        sizes = tuple(int(n) for n in sizes)
        if strides is None or tuple(strides) == packed_strides(sizes):
            return self.wrap(_reshaped(x.array, sizes))
        perm = _permutation(tuple(x.array.shape), sizes, tuple(strides))
        if perm is None:
            raise ModelError(
                f"a view of sizes {list(sizes)} and strides {list(strides)} of a tensor of "
                f"{list(x.array.shape)}: on Dask, a view is a reshape or a transpose"
            )
        return self.wrap(x.array.transpose(perm))


def _reshaped(array: Any, sizes: tuple[int, ...]) -> Any:
    """dask.array's reshape; where it cannot split or merge the chunks as they are, the axes
    after those the reshape keeps are made one chunk first (said in the Dask guide)."""
    try:
        return array.reshape(sizes)
    except NotImplementedError:
        kept = 0
        while kept < min(len(sizes), array.ndim) and sizes[kept] == array.shape[kept]:
            kept += 1
        return array.rechunk({d: -1 for d in range(kept, array.ndim)}).reshape(sizes)


def _permutation(
    shape: tuple[int, ...], sizes: tuple[int, ...], strides: tuple[int, ...]
) -> list[int] | None:
    """The axes of `shape` that a view of `sizes` and `strides` (of its packed elements)
    takes in order, where the view is a transpose."""
    if len(sizes) != len(shape):
        return None
    packed = packed_strides(shape)
    free = list(range(len(shape)))
    perm = []
    for n, s in zip(sizes, strides, strict=True):
        match = next((j for j in free if shape[j] == n and (packed[j] == s or n == 1)), None)
        if match is None:
            return None
        free.remove(match)
        perm.append(match)
    return perm


def _is_dask(a: Any) -> bool:
    return type(a).__module__.split(".")[0] == "dask"


def _run_time(builder: _DaskBuilder) -> Any:
    """The nodes the lowering cannot fix when it compiles (their indices, updates or cast
    data are arrays) as dmlops.dask calls."""
    from ..onnx.indexed import indexed_node
    from ..onnx.lowering import INDEXED_OPS, Lowered
    from ..onnx.values import _Empty, _Scalar

    def unpool(*_: Any, **__: Any) -> Any:
        raise ModelError("MaxUnpool is not on Dask (a scatter into a whole output)")

    library = types.SimpleNamespace(
        gather=indexed.gather,
        gather_elements=indexed.gather_elements,
        gather_nd=indexed.gather_nd,
        scatter_elements=indexed.scatter_elements,
        scatter_nd=indexed.scatter_nd,
        one_hot=indexed.one_hot,
        reverse_subsequences=indexed.reverse_subsequences,
        max_unpooling=unpool,
        cast_in_library=lambda a, dtype: a.astype(dtype),
    )

    def array_of(low: Lowered, name: str) -> Any:
        if not name:
            return None
        if name in low.constants:
            return np.asarray(low.constants[name])
        v = low.values[name]
        if isinstance(v, _Empty):
            return _dask().empty(v.shape, dtype=v.dtype)
        if isinstance(v, _Scalar):
            return cast(_Lazy, v.tensor).array.reshape(())
        return cast(_Lazy, v).array

    def value_of(array: Any, dtype: np.dtype[Any]) -> Any:
        if 0 in array.shape:
            return _Empty(tuple(array.shape), dtype)
        if not _is_dask(array):
            array = _dask().from_array(np.asarray(array), chunks=-1)
        if array.ndim == 0:
            return _Scalar(builder.wrap(array.reshape(1)))
        return builder.wrap(array)

    def run(node: Any, attrs: dict[str, Any], low: Lowered) -> list[tuple[Any, np.dtype[Any]]]:
        names = list(node.input)
        if node.op_type == "Cast":
            from onnx import helper

            target = np.dtype(helper.tensor_dtype_to_np_dtype(int(attrs["to"])))
            made = blockwise.cast(array_of(low, names[0]), target, feature_level=builder.level)
            return [(value_of(made, target), target)]
        if node.op_type not in INDEXED_OPS:
            raise ModelError(
                f"ONNX node '{node.name or node.op_type}': {node.op_type} is not data "
                "movement dmlops runs on Dask"
            )

        def type_of(name: str) -> tuple[tuple[int, ...], np.dtype[Any]]:
            a = array_of(low, name)
            return tuple(int(n) for n in a.shape), np.dtype(
                low.dtypes.get(name, getattr(a, "dtype", None))
            )

        def constant(name: str) -> Any:
            return low.constants.get(name)

        made_node = indexed_node(node, attrs, type_of, constant, builder.level, library)
        made = made_node.call([array_of(low, n) for n in names])
        return [(value_of(made, made_node.dtype), made_node.dtype)]

    return run


def run_onnx(
    model: Any,
    inputs: Mapping[str, Any],
    *,
    feature_level: FeatureLevel | int | str | None = None,
) -> list[Any]:
    """Run an ONNX model of data-movement nodes (those `dmlops.onnx` runs) on dask arrays,
    lazily: one dask array per graph output, the whole model one task graph. `model` is a
    ModelProto, its bytes or a path; `inputs` maps each graph input's name to a dask array
    (numpy arrays are taken as one chunk). Parameters given as inputs (Slice's starts, ...)
    are read when the model is applied, as `dmlops.onnx` reads them. Nothing runs until the
    results are computed; an invalid model or parameter is an error now."""
    from ..onnx.loading import load
    from ..onnx.lowering import lower_model, opset_of
    from ..onnx.values import _Empty, _Scalar

    level = calls._level(feature_level)
    proto = load(model)
    arrays = dict(inputs)
    constants: dict[str, Any] = {}
    builder = _DaskBuilder(ChainMap(arrays, constants), level)
    low = lower_model(
        proto,
        arrays,
        builder,
        opset_of(proto),
        Device(level, backend="numpy"),
        constants=constants,
        run_time=_run_time(builder),
    )
    da = _dask()
    results = []
    for o in proto.graph.output:
        if o.name in low.constants:
            results.append(da.from_array(np.asarray(low.constants[o.name]), chunks=-1))
            continue
        if o.name not in low.values:
            raise ModelError(f"ONNX graph output '{o.name}' is produced by no node or input")
        v, dtype = low.values[o.name], low.dtypes[o.name]
        if isinstance(v, _Empty):
            results.append(da.empty(v.shape, dtype=dtype))
            continue
        array = cast(_Lazy, v.tensor if isinstance(v, _Scalar) else v).array
        if isinstance(v, _Scalar):
            array = array.reshape(())
        if array.dtype != dtype:  # a carrier's fill: the model's own type
            array = array.view(dtype)
        results.append(array)
    return results
