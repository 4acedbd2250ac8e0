"""The `dmlops` argument parser: every command, its options and its run function."""

from __future__ import annotations

import argparse

from .commands import _run_check, _run_conform, _run_examples, _run_gen_tests, _run_model
from .explain import _run_explain
from .text import _floats, _ints, _pair


def _add_max_file_bytes(parser: argparse.ArgumentParser) -> None:
    from .._files import DEFAULT_MAX_FILE_BYTES

    parser.add_argument(
        "--max-file-bytes",
        type=int,
        default=DEFAULT_MAX_FILE_BYTES,
        help="refuse model files larger than this, before parsing (default 64 MiB)",
    )


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the `dmlops` command."""
    parser = argparse.ArgumentParser(
        prog="dmlops",
        description="DirectML's data-movement operators: run, explain, validate, generate tests.",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    ex = sub.add_parser(
        "examples",
        help="run the six worked examples of DirectML's reference pages",
        description="Run the worked examples of the SLICE, SLICE1 and SPLIT reference pages and "
        "print input, descriptor and output as the pages show them. Exit status 1 on a mismatch.",
    )
    ex.add_argument(
        "--backend", choices=["numpy", "cuda"], default="numpy", help="execution backend"
    )
    ex.add_argument(
        "--feature-level", default=None, help="device feature level, e.g. 3_0 (default: the newest)"
    )
    ex.set_defaults(func=_run_examples)

    xp = sub.add_parser(
        "explain",
        help="validate a descriptor and show which input element each output element copies",
        description="Validate one operator descriptor at a feature level; print the verdict, the "
        "strided-copy plan and, for up to 256 output elements, the element mapping. "
        "Exit status 1 when the descriptor is invalid.",
    )
    xp.add_argument(
        "operator",
        help="slice, slice1, slice_grad, split, join, tile, padding1, depth_to_space1, "
        "space_to_depth1, gather, gather_elements, gather_nd, scatter_elements or scatter_nd; "
        "or the path of an ONNX model (.onnx) to show the whole model compiled",
    )
    xp.add_argument(
        "--input-shape",
        action="append",
        default=[],
        metavar="NAME=D0,D1,...",
        help="ONNX: the shape of a model input whose shape the model leaves open",
    )
    xp.add_argument(
        "--input-sizes",
        type=_ints,
        action="append",
        help="input tensor sizes, e.g. 1,1,4,4 (join: repeat once per input)",
    )
    xp.add_argument(
        "--plot",
        metavar="FILE",
        help="also draw the operator to FILE (.png/.svg/.pdf; needs pip install 'dmlops[plot]')",
    )
    xp.add_argument("--data-type", default="FLOAT32", help="DML data type name (default FLOAT32)")
    xp.add_argument(
        "--feature-level", default=None, help="feature level, e.g. 2_1 (default: the newest)"
    )
    xp.add_argument("--offsets", type=_ints, default=[], help="SLICE Offsets")
    xp.add_argument("--sizes", type=_ints, default=[], help="SLICE Sizes (= output sizes)")
    xp.add_argument("--strides", type=_ints, default=[], help="SLICE Strides")
    xp.add_argument(
        "--window-offsets", type=_ints, default=[], help="SLICE1/SLICE_GRAD InputWindowOffsets"
    )
    xp.add_argument(
        "--window-sizes", type=_ints, default=[], help="SLICE1/SLICE_GRAD InputWindowSizes"
    )
    xp.add_argument(
        "--window-strides", type=_ints, default=[], help="SLICE1/SLICE_GRAD InputWindowStrides"
    )
    xp.add_argument(
        "--output-sizes",
        type=_ints,
        default=None,
        help="SLICE1 output sizes (default MaxCopiedElements); SLICE_GRAD OutputGradientTensor "
        "sizes (required)",
    )
    xp.add_argument("--axis", type=int, default=0, help="SPLIT/JOIN/GATHER/... Axis")
    xp.add_argument(
        "--indices-sizes", type=_ints, default=None, help="GATHER/SCATTER IndicesTensor sizes"
    )
    xp.add_argument(
        "--indices",
        type=_ints,
        default=None,
        help="GATHER/SCATTER index values, row-major (which source element lands where)",
    )
    xp.add_argument(
        "--index-type", default="INT32", help="GATHER/SCATTER IndicesTensor type (default INT32)"
    )
    xp.add_argument(
        "--index-dimensions",
        type=int,
        default=None,
        help="GATHER IndexDimensions (default: the indices' sizes after their leading ones)",
    )
    xp.add_argument("--batch-dims", type=int, default=0, help="GATHER_ND1 BatchDimensionCount")
    xp.add_argument("--repeats", type=_ints, default=[], help="TILE Repeats")
    xp.add_argument("--start-padding", type=_ints, default=[], help="PADDING1 StartPadding")
    xp.add_argument("--end-padding", type=_ints, default=[], help="PADDING1 EndPadding")
    xp.add_argument(
        "--padding-mode",
        default="CONSTANT",
        help="PADDING1 PaddingMode: CONSTANT, EDGE, REFLECTION, SYMMETRIC or WRAP",
    )
    xp.add_argument("--padding-value", type=float, default=0.0, help="PADDING1 PaddingValue")
    xp.add_argument(
        "--block-size", type=int, default=2, help="DEPTH_TO_SPACE1/SPACE_TO_DEPTH1 BlockSize"
    )
    xp.add_argument(
        "--order",
        default="DEPTH_COLUMN_ROW",
        help="DEPTH_TO_SPACE1/SPACE_TO_DEPTH1 Order: DEPTH_COLUMN_ROW (DCR) or "
        "COLUMN_ROW_DEPTH (CRD)",
    )
    xp.add_argument(
        "--split-sizes", type=_ints, default=[], help="SPLIT: each output's size along Axis"
    )
    xp.add_argument(
        "--scale-size", type=_ints, default=[2, 2], help="UPSAMPLE_2D ScaleSize: Height,Width"
    )
    xp.add_argument("--diagonal-offset", type=int, default=0, help="DIAGONAL_MATRIX Offset")
    xp.add_argument("--scales", type=_floats, default=None, help="RESAMPLE* Scales")
    xp.add_argument(
        "--output-data-type", default="INT32", help="CAST OutputTensor DataType (INT32)"
    )
    xp.add_argument(
        "--sequence",
        type=_floats,
        default=[0.0, 1.0],
        help="FILL_VALUE_SEQUENCE ValueStart,ValueDelta (default 0,1)",
    )
    xp.add_argument(
        "--input-pixel-offsets", type=_floats, default=None, help="RESAMPLE1/2 (default 0.5)"
    )
    xp.add_argument(
        "--output-pixel-offsets", type=_floats, default=None, help="RESAMPLE1/2 (default -0.5)"
    )
    xp.add_argument(
        "--rounding-direction",
        default="DECREASING",
        help="RESAMPLE2 RoundingDirection: INCREASING (up) or DECREASING (down)",
    )
    xp.add_argument(
        "--diagonal-fill",
        type=_pair,
        default=(0, 1),
        help="DIAGONAL_MATRIX1 DiagonalFillBegin,DiagonalFillEnd (default 0,1)",
    )
    xp.add_argument(
        "--output-strides",
        type=_ints,
        default=None,
        help="ELEMENT_WISE_IDENTITY OutputTensor Strides (a layout change)",
    )
    _add_max_file_bytes(xp)
    xp.set_defaults(func=_run_explain)

    gen = sub.add_parser(
        "gen-tests",
        help="write random DxDispatch-style test models with their expected outputs",
        description="Write COUNT DxDispatch-style JSON models of random SLICE/SLICE1/SPLIT/JOIN "
        "descriptors, a sidecar NAME.expected.json per model (the expected printout of every "
        "output, or the rule an invalid descriptor breaks) and index.json. Deterministic for "
        "a seed.",
    )
    gen.add_argument("outdir", help="directory to write into")
    gen.add_argument(
        "--format",
        choices=["dxdispatch", "onnx", "webnn"],
        default="dxdispatch",
        help="dxdispatch: DirectML descriptors as DxDispatch JSON models (default); onnx: "
        "ONNX backend-test directories (OUTDIR/valid/test_*/model.onnx + test_data_set_0, "
        "OUTDIR/invalid/ for models ONNX forbids); webnn: web-platform-tests-shaped WebNN "
        "cases, one OPERATION.json each",
    )
    gen.add_argument("--count", type=int, default=100, help="number of models (default 100)")
    gen.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    gen.add_argument(
        "--operators",
        default=None,
        help="comma-separated operators (default: all). dxdispatch: slice, slice1, slice_grad, "
        "split, join, tile, padding, padding1, depth_to_space, depth_to_space1, space_to_depth, "
        "space_to_depth1, upsample_2d, fill_value_constant, fill_value_sequence, cast, "
        "element_wise_identity, "
        "diagonal_matrix, diagonal_matrix1, resample, resample1, resample2, gather, "
        "gather_elements, "
        "gather_nd, scatter_elements, scatter_nd, one_hot, reverse_subsequences (those the "
        "feature level has); onnx: ONNX op types (Slice, Gather, ...); webnn: WebNN operations "
        "(slice, gatherND, ...)",
    )
    gen.add_argument("--feature-level", default=None, help="feature level (default: the newest)")
    gen.add_argument(
        "--invalid-fraction", type=float, default=0.2, help="share of invalid models (0.2)"
    )
    gen.add_argument(
        "--max-bytes", type=int, default=1 << 20, help="largest tensor bytes in one model"
    )
    gen.set_defaults(func=_run_gen_tests)

    conf = sub.add_parser(
        "conform",
        help="differential fuzz of an ONNX runtime against dmlops",
        description="Generate COUNT random data-movement ONNX models (valid ones and ones ONNX "
        "forbids), run each on RUNTIME and on dmlops, compare every output bit for bit, shrink "
        "each finding (a disagreement, an invalid model the runtime answers, a valid model "
        "dmlops refuses) to a smallest case that keeps it, write it as a backend-test "
        "directory under --out, and print a table per operator. Findings are reported, not "
        "failures: the exit status is 0 unless the run itself fails.",
    )
    conf.add_argument("runtime", choices=["onnxruntime"], help="the runtime to test")
    conf.add_argument(
        "--provider",
        action="append",
        default=[],
        help="an execution provider (repeat; default CPUExecutionProvider)",
    )
    conf.add_argument("--count", type=int, default=2000, help="cases (default 2000)")
    conf.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    conf.add_argument("--operators", default=None, help="comma-separated ONNX op types")
    conf.add_argument("--out", default=None, help="write shrunk findings under this directory")
    conf.add_argument("--no-shrink", action="store_true", help="report findings as generated")
    conf.add_argument(
        "--most-shrunk", type=int, default=20, help="shrink at most this many findings (20)"
    )
    conf.set_defaults(func=_run_conform)

    chk = sub.add_parser(
        "check",
        help="compare a DxDispatch-style printout with a test model's expected outputs",
        description="Compare RUN_OUTPUT (what a backend printed for a model, in the format "
        "`dmlops run` and DxDispatch print, or its error text) with EXPECTED (a sidecar from "
        "`dmlops gen-tests`), element by element; prints the first mismatches. Exit status 1 "
        "on a mismatch.",
    )
    chk.add_argument("expected", help="NAME.expected.json")
    chk.add_argument("run_output", help="a file holding the printout")
    chk.set_defaults(func=_run_check)

    run = sub.add_parser(
        "run",
        help="execute a DxDispatch-style JSON model file or an ONNX model",
        description="Execute a model file in DxDispatch's JSON format (resources, dispatchables of "
        "type DML_OPERATOR_SLICE/SLICE1/SLICE_GRAD/SPLIT/JOIN/..., commands 'dispatch' and "
        "'print') and print resources as DxDispatch does; or an ONNX model (.onnx) through an "
        "InferenceSession, inputs from --input NAME=FILE.npy, outputs printed. Exit status 1 "
        "when the model is malformed or invalid.",
    )
    run.add_argument("model", help="path of the JSON model file or the .onnx model")
    run.add_argument(
        "--input",
        action="append",
        default=[],
        metavar="NAME=FILE.npy",
        help="ONNX models: an input's values (repeat for each input)",
    )
    run.add_argument("--device", choices=["cpu", "cuda"], default="cpu", help="where to execute")
    run.add_argument(
        "--feature-level", default=None, help="device feature level (default: the newest)"
    )
    run.add_argument(
        "--max-bytes",
        type=int,
        default=256 << 20,
        help="refuse models whose resources exceed this many bytes (default 256 MiB)",
    )
    _add_max_file_bytes(run)
    run.set_defaults(func=_run_model)

    sub.add_parser(
        "bench",
        help="time dmlops against numpy, torch, CuPy, onnxruntime and JAX",
        description="Run the benchmark suite; all arguments after 'bench' go to it "
        "(see 'dmlops bench --help').",
        add_help=False,
    )
    return parser
