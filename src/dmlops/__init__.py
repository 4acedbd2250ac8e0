"""dmlops: DirectML's data-movement operators (SLICE, SLICE1, SPLIT, JOIN) for Python."""

from .device import Binding, BindingTable, CompiledOperator, Device
from .errors import (
    BindingError,
    DmlError,
    InvalidDescriptorError,
    ModelError,
    UnsupportedFeatureLevelError,
)
from .functional import join, slice, slice1, split
from .graph import Graph, GraphTensor
from .ops import JoinDesc, OperatorDesc, Slice1Desc, SliceDesc, SplitDesc
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
    "CompiledOperator",
    "DataType",
    "Device",
    "DmlError",
    "FeatureLevel",
    "Graph",
    "GraphTensor",
    "InvalidDescriptorError",
    "JoinDesc",
    "ModelError",
    "OperatorDesc",
    "Plan",
    "Slice1Desc",
    "SliceDesc",
    "SplitDesc",
    "StridedCopy",
    "TensorFlags",
    "UnsupportedFeatureLevelError",
    "calc_buffer_tensor_size",
    "join",
    "slice",
    "slice1",
    "split",
]
