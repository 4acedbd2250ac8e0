"""CUDA backend: one runtime-compiled kernel launch per executed plan, through CuPy.

Every copy of a plan becomes one row of a piece table; a persistent grid walks
fixed-size tiles of all pieces, so SPLIT's outputs and JOIN's inputs move in a
single launch. Kernels are specialised per (rank, element size, vector width,
inner reversal, index width) and cached.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import BindingError, DmlError
from ..plan import Plan, array_byte_span

__all__ = ["CudaBackend", "kernel_source"]

_THREADS = 256
_PER_THREAD = 8
_TILE = _THREADS * _PER_THREAD  # vectors per tile
_TABLE_CACHE = 16
_FIXED = 4  # src address, dst address, vector count, first tile

_ELEMENT_TYPE = {
    1: "unsigned char",
    2: "unsigned short",
    4: "unsigned int",
    8: "unsigned long long",
}
_VECTOR_TYPE = {1: "unsigned char", 2: "unsigned short", 4: "unsigned int", 8: "uint2", 16: "uint4"}


def kernel_source(rank: int, element_size: int, width: int, reverse: bool, index64: bool) -> str:
    """CUDA C source of the copy kernel for one specialisation."""
    vec = width // element_size
    return f"""
#define RANK {rank}
#define V {vec}
#define TILE {_TILE}
#define REVERSE {int(reverse)}
typedef {_ELEMENT_TYPE[element_size]} T;
typedef {_VECTOR_TYPE[width]} VT;
typedef {"long long" if index64 else "int"} IDX;
#define ROW ({_FIXED} + 3 * RANK)

union Vec {{ VT v; T e[V]; }};

extern "C" __global__ void __launch_bounds__({_THREADS})
dmlops_copy(const long long* __restrict__ table, int pieces, long long tiles)
{{
    for (long long t = blockIdx.x; t < tiles; t += gridDim.x) {{
        int lo = 0, hi = pieces - 1;
        while (lo < hi) {{
            int mid = (lo + hi + 1) >> 1;
            if (table[(long long)mid * ROW + 3] <= t) lo = mid; else hi = mid - 1;
        }}
        const long long* row = table + (long long)lo * ROW;
        const char* src = (const char*)row[0];
        char* dst = (char*)row[1];
        const IDX count = (IDX)row[2];
        const IDX first = (IDX)((t - row[3]) * TILE);
        IDX shape[RANK], sstr[RANK], dstr[RANK];
        #pragma unroll
        for (int d = 0; d < RANK; ++d) {{
            shape[d] = (IDX)row[{_FIXED} + d];
            sstr[d] = (IDX)row[{_FIXED} + RANK + d];
            dstr[d] = (IDX)row[{_FIXED} + 2 * RANK + d];
        }}
        IDX end = first + TILE < count ? first + TILE : count;
        VT buf[{_PER_THREAD}];
        IDX dofs[{_PER_THREAD}];
        #pragma unroll
        for (int k = 0; k < {_PER_THREAD}; ++k) {{
            IDX i = first + (IDX)threadIdx.x + (IDX)k * {_THREADS};
            if (i < end) {{
                IDX rem = i;
                IDX inner = rem % shape[RANK - 1];
                rem /= shape[RANK - 1];
                IDX so = 0, dof = 0;
                #pragma unroll
                for (int d = RANK - 2; d >= 0; --d) {{
                    IDX c = rem % shape[d];
                    rem /= shape[d];
                    so += c * sstr[d];
                    dof += c * dstr[d];
                }}
#if V == 1
                so += inner * sstr[RANK - 1];
#elif REVERSE
                so -= inner * V + (V - 1);
#else
                so += inner * V;
#endif
                dof += inner * V * dstr[RANK - 1];
                buf[k] = *(const VT*)(src + (long long)so * sizeof(T));
                dofs[k] = dof;
            }}
        }}
        #pragma unroll
        for (int k = 0; k < {_PER_THREAD}; ++k) {{
            IDX i = first + (IDX)threadIdx.x + (IDX)k * {_THREADS};
            if (i < end) {{
#if REVERSE && V > 1
                Vec a, b;
                a.v = buf[k];
                #pragma unroll
                for (int j = 0; j < V; ++j) b.e[j] = a.e[V - 1 - j];
                *(VT*)(dst + (long long)dofs[k] * sizeof(T)) = b.v;
#else
                *(VT*)(dst + (long long)dofs[k] * sizeof(T)) = buf[k];
#endif
            }}
        }}
    }}
}}
"""


@dataclass(frozen=True)
class _Prepared:
    """A plan's piece table without addresses, at one vector width."""

    rank: int
    width: int
    reverse: bool
    index64: bool
    rows: np.ndarray[Any, Any]  # int64 [pieces, ROW]; columns 0/1 hold byte offsets
    src_index: np.ndarray[Any, Any]
    dst_index: np.ndarray[Any, Any]
    tiles: int


def _vector_width(plan: Plan) -> tuple[int, bool]:
    """Widest access (bytes) every copy allows, ignoring base addresses; and inner reversal."""
    es = plan.element_size
    best = es
    for reverse in (False, True):
        for width in (16, 8, 4, 2):
            if width <= es:
                break
            v = width // es
            ok = True
            for c in plan.copies:
                inner_src = c.src_strides[-1]
                if c.dst_strides[-1] != 1 or inner_src != (-1 if reverse else 1):
                    ok = False
                    break
                if c.shape[-1] % v or any(s % v for s in c.src_strides[:-1] + c.dst_strides[:-1]):
                    ok = False
                    break
            if ok and width > best:
                return width, reverse
    return best, False


class CudaBackend:
    """Executes plans on the current CUDA device with one kernel launch per plan."""

    name = "cuda"
    _instance: CudaBackend | None = None

    def __init__(self) -> None:
        try:
            import cupy
        except ImportError as e:
            raise DmlError("the cuda backend needs CuPy: pip install 'dmlops[cuda]'") from e
        try:
            props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
        except Exception as e:
            raise DmlError(f"the cuda backend found no usable CUDA device: {e}") from e
        self.cupy = cupy
        self.multiprocessors = int(props["multiProcessorCount"])
        self._kernels: dict[tuple[int, int, int, bool, bool], Any] = {}
        self._prepared: dict[tuple[int, bool], tuple[Plan, _Prepared]] = {}
        self._tables: OrderedDict[tuple[Any, ...], tuple[Plan, Any]] = OrderedDict()

    @classmethod
    def instance(cls) -> CudaBackend:
        """The shared backend object."""
        if cls._instance is None:
            cls._instance = cls()
        return cls._instance

    # -- arrays and buffers ------------------------------------------------------------

    def as_array(self, obj: Any) -> Any:
        cp = self.cupy
        if isinstance(obj, cp.ndarray):
            return obj
        if hasattr(obj, "__cuda_array_interface__"):
            return cp.asarray(obj)
        if hasattr(obj, "__dlpack__"):
            return cp.from_dlpack(obj)
        raise BindingError(f"{type(obj).__name__} is not a GPU array")

    def is_writable(self, arr: Any) -> bool:
        return True

    def byte_view(self, obj: Any, writable: bool) -> Any:
        cp = self.cupy
        if isinstance(obj, cp.cuda.MemoryPointer):
            return cp.ndarray((obj.mem.size - (obj.ptr - obj.mem.ptr),), cp.uint8, memptr=obj)
        if isinstance(obj, cp.cuda.memory.BaseMemory):
            return cp.ndarray((obj.size,), cp.uint8, memptr=cp.cuda.MemoryPointer(obj, 0))
        try:
            arr = self.as_array(obj)
        except BindingError:
            raise BindingError(
                f"{type(obj).__name__} is not a GPU buffer: bind a CuPy array, a DLPack GPU "
                "array or a cupy.cuda.MemoryPointer"
            ) from None
        if not (arr.flags.c_contiguous or arr.flags.f_contiguous):
            raise BindingError("a bound buffer must be contiguous memory")
        return cp.ndarray((arr.nbytes,), cp.uint8, memptr=arr.data)

    def array_span(self, arr: Any) -> tuple[Any, int]:
        cp = self.cupy
        item = arr.itemsize
        low, nbytes = array_byte_span(arr.shape, arr.strides, item)
        flat = cp.ndarray((nbytes,), cp.uint8, memptr=arr.data + low)
        return flat, -low // item

    def empty(self, shape: tuple[int, ...], dtype: Any) -> Any:
        return self.cupy.empty(shape, dtype=dtype)

    def like(self, result: Any, template: Any) -> Any:
        """`result` (a CuPy array) in the array library of `template`, without a copy."""
        module = type(template).__module__.split(".")[0]
        if module == "torch":
            import torch

            return torch.utils.dlpack.from_dlpack(result)
        if module in ("jax", "jaxlib"):
            import jax

            return jax.dlpack.from_dlpack(result)
        return result

    # -- execution ---------------------------------------------------------------------

    def _prepare(self, plan: Plan, scalar: bool = False) -> _Prepared:
        key = (id(plan), scalar)
        cached = self._prepared.get(key)
        if cached is not None and cached[0] is plan:
            return cached[1]
        es = plan.element_size
        width, reverse = (es, False) if scalar else _vector_width(plan)
        v = width // es
        rank = max(len(c.shape) for c in plan.copies)
        rows = np.zeros((len(plan.copies), _FIXED + 3 * rank), dtype=np.int64)
        tiles = 0
        reach = 0
        for i, c in enumerate(plan.copies):
            pad = rank - len(c.shape)
            shape = (1,) * pad + c.shape[:-1] + (c.shape[-1] // v,)
            count = int(np.prod(shape))
            rows[i, :_FIXED] = (c.src_offset, c.dst_offset, count, tiles)
            rows[i, _FIXED : _FIXED + rank] = shape
            rows[i, _FIXED + rank : _FIXED + 2 * rank] = (0,) * pad + c.src_strides
            rows[i, _FIXED + 2 * rank :] = (0,) * pad + c.dst_strides
            tiles += -(-count // _TILE)
            for strides in (c.src_strides, c.dst_strides):
                span = sum((n - 1) * abs(s) for n, s in zip(c.shape, strides, strict=True))
                reach = max(reach, span + v)
            reach = max(reach, count + _TILE)
        prepared = _Prepared(
            rank,
            width,
            reverse,
            reach >= 2**31 - 1,
            rows,
            np.array([c.src for c in plan.copies], dtype=np.int64),
            np.array([c.dst for c in plan.copies], dtype=np.int64),
            tiles,
        )
        if len(self._prepared) > 256:
            self._prepared.clear()
        self._prepared[key] = (plan, prepared)
        return prepared

    def _kernel(self, rank: int, es: int, width: int, reverse: bool, index64: bool) -> Any:
        key = (rank, es, width, reverse, index64)
        kernel = self._kernels.get(key)
        if kernel is None:
            source = kernel_source(rank, es, width, reverse, index64)
            kernel = self.cupy.RawKernel(source, "dmlops_copy", options=("--std=c++14",))
            self._kernels[key] = kernel
        return kernel

    def bind(self, plan: Plan, inputs: list[Any], outputs: list[Any]) -> Callable[[], None]:
        cp = self.cupy
        prep = self._prepare(plan)
        in_ptrs = np.array([a.data.ptr for a in inputs], dtype=np.int64)
        out_ptrs = np.array([a.data.ptr for a in outputs], dtype=np.int64)
        es = plan.element_size
        if prep.width > es:
            src = prep.rows[:, 0] + in_ptrs[prep.src_index]
            dst = prep.rows[:, 1] + out_ptrs[prep.dst_index]
            if prep.reverse:
                src = src - (prep.width - es)
            if np.any(src % prep.width) or np.any(dst % prep.width):
                prep = self._prepare(plan, scalar=True)
        key = (id(plan), prep.width, *in_ptrs.tolist(), *out_ptrs.tolist())
        entry = self._tables.get(key)
        if entry is not None and entry[0] is plan:
            table = entry[1]
            self._tables.move_to_end(key)
        else:
            host = prep.rows.copy()
            host[:, 0] += in_ptrs[prep.src_index]
            host[:, 1] += out_ptrs[prep.dst_index]
            table = cp.asarray(host)
            self._tables[key] = (plan, table)
            if len(self._tables) > _TABLE_CACHE:
                self._tables.popitem(last=False)
        kernel = self._kernel(prep.rank, es, prep.width, prep.reverse, prep.index64)
        grid = int(min(prep.tiles, self.multiprocessors * 8))
        args = (table, np.int32(len(plan.copies)), np.int64(prep.tiles))

        def launch() -> None:
            kernel((grid,), (_THREADS,), args)

        return launch

    def execute(self, plan: Plan, inputs: list[Any], outputs: list[Any]) -> None:
        self.bind(plan, inputs, outputs)()
