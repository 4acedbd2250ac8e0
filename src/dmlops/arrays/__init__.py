"""DirectML's operators on arrays: each call's fields made into the operator's descriptor
and run through the call machinery (`dmlops.calls`: signature cache, validation, lowering,
the backend of the arrays). The adapters build on this layer: the functional API (which
adds the torch route), the torch wing, WebNN, Dask and the ONNX steps.

`strided`: SLICE, SLICE1, SLICE_GRAD, SPLIT, JOIN, TILE, PADDING1, DEPTH_TO_SPACE1,
SPACE_TO_DEPTH1, UPSAMPLE_2D, ELEMENT_WISE_IDENTITY. `family`: the generated tensors
(FILL_VALUE_CONSTANT / SEQUENCE, DIAGONAL_MATRIX / 1), RESAMPLE, CAST,
NONZERO_COORDINATES. `indexed`: the GATHER / SCATTER family, ONE_HOT, REVERSE_SUBSEQUENCES.
"""
