"""dmlops: DirectML's data-movement operators (SLICE, SLICE1, SPLIT, JOIN, SLICE_GRAD,
DEPTH_TO_SPACE1, SPACE_TO_DEPTH1) for Python."""

from .backends.cpu_engine.threads import get_num_threads, set_num_threads
from .device import Binding, BindingTable, CompiledOperator, Device
from .errors import (
    BindingError,
    DmlError,
    IndexOutOfRangeError,
    InvalidDescriptorError,
    ModelError,
    UnsupportedFeatureLevelError,
)
from .functional import (
    arange,
    cast,
    depth_to_space,
    diagonal_matrix,
    diagonal_matrix1,
    element_wise_identity,
    fill_value_constant,
    fill_value_sequence,
    join,
    padding,
    resample,
    slice,
    slice1,
    slice_grad,
    space_to_depth,
    split,
    tile,
    tril,
    triu,
    upsample_2d,
)
from .functional_indexed import (
    gather,
    gather_elements,
    gather_nd,
    max_unpooling,
    one_hot,
    reverse_subsequences,
    scatter_elements,
    scatter_nd,
)
from .graph import Graph, GraphTensor
from .ops import (
    CastDesc,
    DepthSpaceOrder,
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
    OneHotDesc,
    OperatorDesc,
    Padding1Desc,
    PaddingDesc,
    PaddingMode,
    Resample1Desc,
    Resample2Desc,
    ResampleDesc,
    ReverseSubsequencesDesc,
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
from .plan import Plan, StridedCopy
from .tensor import (
    BufferTensorDesc,
    DataType,
    FeatureLevel,
    TensorFlags,
    calc_buffer_tensor_size,
)

__version__ = "0.1.0"

__all__ = [
    "Binding",
    "BindingError",
    "BindingTable",
    "BufferTensorDesc",
    "CastDesc",
    "CompiledOperator",
    "DataType",
    "DepthSpaceOrder",
    "DepthToSpace1Desc",
    "DepthToSpaceDesc",
    "Device",
    "DmlError",
    "FeatureLevel",
    "GatherDesc",
    "GatherElementsDesc",
    "GatherNd1Desc",
    "GatherNdDesc",
    "Graph",
    "GraphTensor",
    "IndexOutOfRangeError",
    "InvalidDescriptorError",
    "JoinDesc",
    "ModelError",
    "OneHotDesc",
    "OperatorDesc",
    "Padding1Desc",
    "PaddingDesc",
    "PaddingMode",
    "Plan",
    "ResampleDesc",
    "Resample1Desc",
    "Resample2Desc",
    "ReverseSubsequencesDesc",
    "ScatterElementsDesc",
    "ScatterNdDesc",
    "Slice1Desc",
    "SliceDesc",
    "SliceGradDesc",
    "SpaceToDepth1Desc",
    "SpaceToDepthDesc",
    "SplitDesc",
    "StridedCopy",
    "TensorFlags",
    "TileDesc",
    "DiagonalMatrixDesc",
    "DiagonalMatrix1Desc",
    "ElementWiseIdentityDesc",
    "FillValueConstantDesc",
    "FillValueSequenceDesc",
    "MaxUnpoolingDesc",
    "Upsample2dDesc",
    "UnsupportedFeatureLevelError",
    "calc_buffer_tensor_size",
    "depth_to_space",
    "gather",
    "gather_elements",
    "gather_nd",
    "max_unpooling",
    "get_num_threads",
    "join",
    "one_hot",
    "padding",
    "resample",
    "reverse_subsequences",
    "scatter_elements",
    "scatter_nd",
    "set_num_threads",
    "slice",
    "slice1",
    "slice_grad",
    "space_to_depth",
    "split",
    "tile",
    "upsample_2d",
    "fill_value_constant",
    "fill_value_sequence",
    "arange",
    "cast",
    "element_wise_identity",
    "diagonal_matrix",
    "diagonal_matrix1",
    "tril",
    "triu",
]

from . import picture as _picture  # noqa: F401 - installs the notebook view of descriptors
from ._after_import import after_import as _after_import
from ._moved import keep_old_names as _keep_old_names
from .calls import route_torch_through as _route


def _load_torch_ops() -> object:
    from .torch import operators

    return operators


_keep_old_names()  # (dmlops.torch_block and the other moved modules' old names)
_route(_load_torch_ops)
# the torch operators registered as soon as torch is there (now, or when torch is imported
# later: before anything can trace a call, so torch.compile sees the functional calls)
_after_import("torch", _load_torch_ops)
