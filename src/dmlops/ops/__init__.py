"""The four DirectML data-movement operator descriptors."""

from ._base import OperatorDesc, SupportRow
from .join import JoinDesc
from .slice import SliceDesc
from .slice1 import Slice1Desc
from .split import SplitDesc

__all__ = ["JoinDesc", "OperatorDesc", "Slice1Desc", "SliceDesc", "SplitDesc", "SupportRow"]
