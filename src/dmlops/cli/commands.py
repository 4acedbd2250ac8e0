"""The other commands: the bundled examples, DxDispatch JSON and ONNX models, test-vector
generation, the conformance kits, and a backend's run output checked against test vectors."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np

from ..device import Device
from ..errors import DmlError
from ..tensor import FeatureLevel
from .text import format_desc, format_tensor


def _run_examples(args: argparse.Namespace) -> int:
    from ..worked_examples import WORKED_EXAMPLES

    device = Device(FeatureLevel.parse(args.feature_level), backend=args.backend)
    failures = 0
    for ex in WORKED_EXAMPLES:
        x = ex.make_input()
        op = device.create_operator(ex.desc)
        outs = [np.full(t.sizes, np.nan, dtype=np.float32) for _, t in ex.desc.output_fields()]
        if args.backend == "cuda":
            import cupy

            gx, gouts = cupy.asarray(x), [cupy.asarray(o) for o in outs]
            op.execute([gx], gouts)
            outs = [cupy.asnumpy(o) for o in gouts]
        else:
            op.execute([x], outs)
        ok = all(np.array_equal(o, e) for o, e in zip(outs, ex.expected_arrays(), strict=True))
        failures += not ok
        print(f"=== {ex.title} ({'matches the reference page' if ok else 'MISMATCH'})")
        print(format_tensor("InputTensor", ex.desc.input_fields()[0][1], x))
        print(format_desc(ex.desc))
        for (name, t), o in zip(ex.desc.output_fields(), outs, strict=True):
            print(format_tensor(name, t, o))
        print()
    print(f"{len(WORKED_EXAMPLES) - failures} of {len(WORKED_EXAMPLES)} worked examples match")
    return 1 if failures else 0


def _run_model(args: argparse.Namespace) -> int:
    device = Device(args.feature_level, backend="numpy" if args.device == "cpu" else "cuda")
    if args.model.endswith(".onnx"):
        return _run_onnx(args, device)
    from ..dxdispatch import load_model, run_model

    model = load_model(Path(args.model), args.max_bytes, args.max_file_bytes)
    run_model(model, device)
    return 0


def _run_onnx(args: argparse.Namespace, device: Device) -> int:
    """An ONNX model through an InferenceSession: inputs from .npy files, outputs printed."""
    from ..onnx import InferenceSession

    session = InferenceSession(args.model, device, args.max_file_bytes)
    feed: dict[str, Any] = {}
    for item in args.input:
        name, _, path = item.partition("=")
        try:
            feed[name] = np.load(path, allow_pickle=False)
        except (OSError, ValueError) as e:
            raise DmlError(f"--input {item}: not a readable .npy file ({e})") from None
    missing = [i for i in session.get_inputs() if i.name not in feed]
    if missing:
        wanted = ", ".join(f"{i.name} {i.shape} {i.type}" for i in missing)
        raise DmlError(f"{args.model}: give --input NAME=FILE.npy for {wanted}")
    for out, value in zip(session.get_outputs(), session.run(None, feed), strict=True):
        host = np.asarray(value.get() if hasattr(value, "get") else value)
        print(f"Output '{out.name}' {list(host.shape)} {host.dtype}: {_values_text(host)}")
    return 0


def _values_text(a: np.ndarray[Any, Any], limit: int = 64) -> str:
    flat = a.reshape(-1)
    shown = ", ".join(str(v) for v in flat[:limit].tolist())
    return shown + (f", ... ({flat.size} values)" if flat.size > limit else "")


def _run_gen_tests(args: argparse.Namespace) -> int:
    ops = [o.strip() for o in args.operators.split(",") if o.strip()] if args.operators else None
    if args.format == "onnx":
        from ..conformance.backend_tests import write_cases
        from ..conformance.onnx_cases import generate as onnx_cases

        written = write_cases(
            onnx_cases(args.seed, args.count, ops, args.invalid_fraction), args.outdir
        )
        valid = sum(1 for e in written if e["valid"] and "path" in e)
        invalid = sum(1 for e in written if not e["valid"])
        refused = len(written) - valid - invalid
        print(
            f"wrote {valid} valid ONNX backend tests to {Path(args.outdir) / 'valid'}, "
            f"{invalid} invalid models to {Path(args.outdir) / 'invalid'}"
            + (f" ({refused} valid models dmlops refused: see index.json)" if refused else "")
        )
        return 0
    if args.format == "webnn":
        from ..conformance.webnn_cases import generate as webnn_cases
        from ..conformance.webnn_cases import write

        found = webnn_cases(args.seed, args.count, ops)
        files = write(found, args.outdir)
        total = sum(len(t) for t in found.values())
        print(f"wrote {total} WebNN cases in {len(files)} files to {args.outdir}")
        return 0
    from ..testvectors import generate

    index = generate(
        args.outdir,
        args.count,
        args.seed,
        ops,
        args.feature_level,
        args.invalid_fraction,
        args.max_bytes,
    )
    valid = sum(1 for e in index if e["valid"])
    print(
        f"wrote {len(index)} models ({valid} valid, {len(index) - valid} invalid) to {args.outdir}"
    )
    return 0


def _run_conform(args: argparse.Namespace) -> int:
    from ..conformance.differential import OnnxRuntimeRunner, conform

    runner = OnnxRuntimeRunner(args.provider or None)
    ops = [o.strip() for o in args.operators.split(",") if o.strip()] if args.operators else None
    report = conform(
        runner,
        args.count,
        args.seed,
        ops,
        args.out,
        shrink_findings=not args.no_shrink,
        most_shrunk=args.most_shrunk,
    )
    print(
        f"{report.runtime} against dmlops: {len(report.outcomes)} cases, seed {args.seed}, "
        f"{report.seconds:.1f} s\n"
    )
    print(report.table())
    refusals = report.refusals()
    if refusals:
        print("\nvalid models the runtime refused, single operators (operator-opset: data types):")
        by_op: dict[str, list[str]] = {}
        chains = 0
        for (ops_opset, dtype), n in refusals.items():
            if "+" in ops_opset:
                chains += n
                continue
            by_op.setdefault(ops_opset, []).append(dtype if n == 1 else f"{dtype} x{n}")
        for ops_opset, kinds in by_op.items():
            print(f"  {ops_opset}: {', '.join(kinds)}")
        if chains:
            print(f"  and {chains} chains of operators")
    if report.shrunk:
        print("\nfindings (shrunk):")
        for found, small, where in report.shrunk:
            print(
                f"  {small.verdict}: {small.case.name} (size {found.case.size} -> "
                f"{small.case.size}) {small.detail}" + (f"\n    {where}" if where else "")
            )
    return 0


def _run_check(args: argparse.Namespace) -> int:
    import json

    from ..testvectors import check

    expected = json.loads(Path(args.expected).read_text())
    problems = check(expected, Path(args.run_output).read_text())
    if problems:
        print("\n".join(problems))
        return 1
    print("match")
    return 0
