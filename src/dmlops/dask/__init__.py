"""DirectML's data-movement operators on Dask arrays: lazy, chunk by chunk (extra `dmlops[dask]`).

Every operator validates its descriptor eagerly from shapes and dtypes (the array layer's
rules and messages), the indexed ones (gather, gather_elements, gather_nd, the scatters,
one_hot, reverse_subsequences) by their indices too where their values are known. A result
of the strided ones remembers where its elements come from as boxes of the arrays it was
first built from, so a chain of them composes into one layer: each output chunk is one task
that runs one plan over exactly the source chunks it reads (numpy chunks on the numpy
backend, CuPy chunks on the cuda one). A negative stride reverses chunk order without
materialising more than one output chunk and its inputs. Output chunks are cut where the
source's chunks are, so each reads one source chunk per piece (as dask.array's slicing and
concatenate do), and not between pieces that go on one from another (a split's parts joined
back in order); `chunks=` overrides.
"""

from .blockwise import cast, diagonal_matrix1, resample, tril, triu
from .indexed import (
    gather,
    gather_elements,
    gather_nd,
    one_hot,
    reverse_subsequences,
    scatter_elements,
    scatter_nd,
)
from .moves import (
    depth_to_space,
    element_wise_identity,
    join,
    padding,
    slice,  # noqa: A004 - DirectML's operator name
    slice1,
    slice_grad,
    space_to_depth,
    split,
    tile,
    upsample_2d,
)
from .onnx import run_onnx

__all__ = [
    "slice",
    "slice1",
    "split",
    "join",
    "tile",
    "padding",
    "depth_to_space",
    "space_to_depth",
    "slice_grad",
    "upsample_2d",
    "element_wise_identity",
    "gather",
    "gather_elements",
    "gather_nd",
    "one_hot",
    "reverse_subsequences",
    "scatter_elements",
    "scatter_nd",
    "cast",
    "diagonal_matrix1",
    "tril",
    "triu",
    "resample",
    "run_onnx",
]
