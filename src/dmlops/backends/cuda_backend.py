"""CUDA backend: one runtime-compiled kernel launch per executed plan, through CuPy.

Every copy of a plan becomes one row of a piece table; a persistent grid walks
fixed-size tiles of all pieces, so SPLIT's outputs and JOIN's inputs move in a
single launch. Kernels are specialised per (rank, element size, vector width,
inner reversal, index width) and cached.
"""

from __future__ import annotations

import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import BindingError, DmlError
from ..plan import Plan

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

    def array_keys(self) -> dict[type, Callable[[Any], Hashable]]:
        keys: dict[type, Callable[[Any], Hashable]] = {
            self.cupy.ndarray: lambda a: (a.dtype, a.shape, a.strides)
        }
        torch = _torch()
        if torch is not None:
            keys[torch.Tensor] = lambda t: (t.dtype, t.shape, t.stride(), t.device)
        return keys

    def _pointer(self, obj: Any) -> int:
        """Device address of an array's index 0."""
        if isinstance(obj, self.cupy.ndarray):
            return int(obj.data.ptr)
        ptr = getattr(obj, "data_ptr", None)
        if ptr is not None:
            return int(ptr())
        cai = getattr(obj, "__cuda_array_interface__", None)
        if cai is not None:
            return int(cai["data"][0])
        return int(self.as_array(obj).data.ptr)

    def byte_view(self, obj: Any, writable: bool) -> tuple[int, int]:
        cp = self.cupy
        if isinstance(obj, cp.cuda.MemoryPointer):
            return int(obj.ptr), int(obj.mem.size - (obj.ptr - obj.mem.ptr))
        if isinstance(obj, cp.cuda.memory.BaseMemory):
            return int(obj.ptr), int(obj.size)
        try:
            arr = self.as_array(obj)
        except BindingError:
            raise BindingError(
                f"{type(obj).__name__} is not a GPU buffer: bind a CuPy array, a DLPack GPU "
                "array or a cupy.cuda.MemoryPointer"
            ) from None
        if not (arr.flags.c_contiguous or arr.flags.f_contiguous):
            raise BindingError("a bound buffer must be contiguous memory")
        return int(arr.data.ptr), int(arr.nbytes)

    def window(self, flat: Any, offset: int, size: int) -> int:
        return int(flat) + offset

    def flat_function(self, low: int, nbytes: int, contiguous: bool) -> Callable[[Any], Any]:
        pointer = self._pointer
        return lambda arr: pointer(arr) + low

    def owner(self, obj: Any) -> object | None:
        return None  # device addresses are cheap to read

    def address(self, flat: Any) -> int:
        return int(flat)

    def new_like(self, template: Any, shape: tuple[int, ...]) -> Any:
        cp = self.cupy
        if isinstance(template, cp.ndarray):
            return cp.empty(shape, dtype=template.dtype)
        torch = _torch()
        if torch is not None and isinstance(template, torch.Tensor):
            return torch.empty(shape, dtype=template.dtype, device=template.device)
        return self._library_of(cp.empty(shape, dtype=self.as_array(template).dtype), template)

    def copy_of(self, arr: Any) -> Any:
        cp = self.cupy
        torch = _torch()
        if torch is not None and isinstance(arr, torch.Tensor):
            return arr.clone(memory_format=torch.contiguous_format)
        copy = cp.array(self.as_array(arr), copy=True, order="C")
        return copy if isinstance(arr, cp.ndarray) else self._library_of(copy, arr)

    def _library_of(self, result: Any, template: Any) -> Any:
        """`result` (a CuPy array) in the array library of `template`, without a copy."""
        module = type(template).__module__.split(".")[0]
        if module in ("jax", "jaxlib"):
            import jax

            return jax.dlpack.from_dlpack(result)
        return result

    # -- execution ---------------------------------------------------------------------

    def _prepare(self, plan: Plan, scalar: bool = False) -> _Prepared:
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
        return _Prepared(
            rank,
            width,
            reverse,
            reach >= 2**31 - 1,
            rows,
            np.array([c.src for c in plan.copies], dtype=np.int64),
            np.array([c.dst for c in plan.copies], dtype=np.int64),
            tiles,
        )

    def _kernel(self, rank: int, es: int, width: int, reverse: bool, index64: bool) -> Any:
        key = (rank, es, width, reverse, index64)
        kernel = self._kernels.get(key)
        if kernel is None:
            source = kernel_source(rank, es, width, reverse, index64)
            kernel = self.cupy.RawKernel(source, "dmlops_copy", options=("--std=c++14",))
            self._kernels[key] = kernel
        return kernel

    def executor(self, plan: Plan) -> Callable[[Sequence[Any], Sequence[Any]], None]:
        """Run `plan` on device addresses; piece tables are cached per address tuple."""
        vector = self._prepare(plan)
        es = plan.element_size
        scalar: list[_Prepared] = []
        tables: OrderedDict[tuple[int, ...], tuple[Any, int, tuple[Any, ...]]] = OrderedDict()
        lock = threading.Lock()

        def launch_for(ins: Sequence[int], outs: Sequence[int]) -> tuple[Any, int, tuple[Any, ...]]:
            in_ptrs = np.array(ins, dtype=np.int64)
            out_ptrs = np.array(outs, dtype=np.int64)
            src = vector.rows[:, 0] + in_ptrs[vector.src_index]
            dst = vector.rows[:, 1] + out_ptrs[vector.dst_index]
            prep = vector
            if prep.width > es:
                if prep.reverse:
                    src = src - (prep.width - es)
                if np.any(src % prep.width) or np.any(dst % prep.width):
                    if not scalar:
                        scalar.append(self._prepare(plan, scalar=True))
                    prep = scalar[0]
            host = prep.rows.copy()
            host[:, 0] += in_ptrs[prep.src_index]
            host[:, 1] += out_ptrs[prep.dst_index]
            table = self.cupy.asarray(host)
            kernel = self._kernel(prep.rank, es, prep.width, prep.reverse, prep.index64)
            grid = int(min(prep.tiles, self.multiprocessors * 8))
            args = (np.uint64(table.data.ptr), np.int32(len(plan.copies)), np.int64(prep.tiles))
            return kernel, grid, (table, args)

        def run(ins: Sequence[int], outs: Sequence[int]) -> None:
            key = (*ins, *outs)
            entry = tables.get(key)
            if entry is None:
                entry = launch_for(ins, outs)
                with lock:
                    tables[key] = entry
                    if len(tables) > _TABLE_CACHE:
                        tables.popitem(last=False)
            kernel, grid, (_, args) = entry
            kernel((grid,), (_THREADS,), args)

        return run

    def bind(self, plan: Plan, inputs: list[Any], outputs: list[Any]) -> Callable[[], None]:
        run = self.executor(plan)
        return lambda: run(inputs, outputs)


def _torch() -> Any:
    """The torch module if it is already imported (never imported here)."""
    return sys.modules.get("torch")
