"""Graphs of data-movement operators compiled to one pass over memory.

A builder in the spirit of DirectMLX (`dml::Graph`): inputs, then SLICE,
SLICE1, SPLIT, JOIN, Reinterpret and Identity nodes. Every node is validated
as DirectML validates its operator at the graph's feature level, with errors
naming the node. Every tensor of the graph is held as *pieces*: boxes of its
coordinates that read a graph input at an element offset with element
strides. SLICE/SLICE1/SPLIT cut and step pieces, JOIN shifts them, Identity
passes them on and Reinterpret re-expresses them where the new strides line
up with the tensor's packed order. A graph output is then copied straight
from the graph inputs: one plan, no intermediate tensor, bytes moved = bytes
of the outputs.
"""

from .compiling import Graph, GraphDesc
from .core import GraphTensor

__all__ = ["Graph", "GraphDesc", "GraphTensor"]
