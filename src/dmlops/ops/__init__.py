"""The DirectML data-movement operator descriptors."""

from ._base import OperatorDesc, SupportRow
from .cast import CastDesc
from .depth_space import (
    DepthSpaceOrder,
    DepthToSpace1Desc,
    DepthToSpaceDesc,
    SpaceToDepth1Desc,
    SpaceToDepthDesc,
)
from .diagonal import DiagonalMatrix1Desc, DiagonalMatrixDesc, triangle_span
from .fill import FillValueConstantDesc, FillValueSequenceDesc
from .gather import GatherDesc, GatherElementsDesc, GatherNd1Desc, GatherNdDesc
from .identity import ElementWiseIdentityDesc
from .join import JoinDesc
from .nonzero import NonzeroCoordinatesDesc
from .one_hot import OneHotDesc
from .padding import Padding1Desc, PaddingDesc, PaddingMode
from .resample import AxisDirection, Resample1Desc, Resample2Desc, ResampleDesc
from .reverse import ReverseSubsequencesDesc
from .scatter import ScatterElementsDesc, ScatterNdDesc
from .slice import SliceDesc
from .slice1 import Slice1Desc
from .slice_grad import SliceGradDesc
from .split import SplitDesc
from .tile import TileDesc
from .unpooling import MaxUnpoolingDesc
from .upsample import InterpolationMode, Upsample2dDesc

__all__ = [
    "triangle_span",
    "NonzeroCoordinatesDesc",
    "CastDesc",
    "DepthSpaceOrder",
    "DepthToSpace1Desc",
    "DepthToSpaceDesc",
    "GatherDesc",
    "GatherElementsDesc",
    "GatherNd1Desc",
    "GatherNdDesc",
    "JoinDesc",
    "OneHotDesc",
    "ScatterElementsDesc",
    "ScatterNdDesc",
    "OperatorDesc",
    "Padding1Desc",
    "PaddingDesc",
    "PaddingMode",
    "ReverseSubsequencesDesc",
    "Slice1Desc",
    "SliceDesc",
    "SliceGradDesc",
    "SpaceToDepth1Desc",
    "SpaceToDepthDesc",
    "SplitDesc",
    "SupportRow",
    "TileDesc",
    "DiagonalMatrixDesc",
    "DiagonalMatrix1Desc",
    "ElementWiseIdentityDesc",
    "FillValueConstantDesc",
    "FillValueSequenceDesc",
    "MaxUnpoolingDesc",
    "InterpolationMode",
    "Upsample2dDesc",
    "AxisDirection",
    "ResampleDesc",
    "Resample1Desc",
    "Resample2Desc",
]
