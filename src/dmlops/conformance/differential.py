"""Differential fuzzing of another ONNX runtime against dmlops: generated models run on
both, every output compared bit for bit; each disagreement is shrunk to a smallest case
that still disagrees and written as a backend-test directory.

Verdicts: `agree` (same bits, or both refuse a model ONNX forbids), `disagree` (both
answer, differently), `runtime accepts invalid` (the runtime answers a model ONNX forbids),
`refused by runtime` / `refused by dmlops` (a valid model one side does not run)."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .backend_tests import write_case
from .onnx_cases import OnnxCase, Recipe, drawn, make_case, recipes

__all__ = [
    "VERDICTS",
    "FINDINGS",
    "Outcome",
    "Report",
    "OnnxRuntimeRunner",
    "compare",
    "shrink",
    "conform",
]

VERDICTS = (
    "agree",
    "disagree",
    "runtime accepts invalid",
    "refused by runtime",
    "refused by dmlops",
)
FINDINGS = ("disagree", "runtime accepts invalid", "refused by dmlops")  # what gets shrunk
Runner = Callable[[Any, dict[str, np.ndarray[Any, Any]]], list[np.ndarray[Any, Any]]]


class OnnxRuntimeRunner:
    """Runs a model on onnxruntime with the given execution providers (default: CPU)."""

    def __init__(self, providers: Sequence[str] | None = None) -> None:
        import onnxruntime

        self.ort = onnxruntime
        self.providers = list(providers or ["CPUExecutionProvider"])
        missing = set(self.providers) - set(onnxruntime.get_available_providers())
        if missing:
            raise ValueError(
                f"onnxruntime here has no {', '.join(sorted(missing))} (it has "
                f"{', '.join(onnxruntime.get_available_providers())})"
            )
        self.name = f"onnxruntime {onnxruntime.__version__} ({', '.join(self.providers)})"

    def __call__(self, model: Any, inputs: dict[str, np.ndarray[Any, Any]]) -> list[Any]:
        options = self.ort.SessionOptions()
        options.log_severity_level = 4
        session = self.ort.InferenceSession(
            model.SerializeToString(), options, providers=self.providers
        )
        return [np.asarray(o) for o in session.run(None, inputs)]


@dataclass
class Outcome:
    """One case's verdict, with the runtime's error or the first differing output."""

    case: OnnxCase
    verdict: str
    detail: str = ""


def _bits(a: np.ndarray[Any, Any]) -> tuple[str, tuple[int, ...], bytes]:
    a = np.ascontiguousarray(a)
    return (a.dtype.str, a.shape, a.tobytes())


def _first_difference(got: list[Any], want: list[Any]) -> str:
    if len(got) != len(want):
        return f"{len(got)} outputs, dmlops {len(want)}"
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        if g.dtype != w.dtype or g.shape != w.shape:
            return f"output {k}: {g.dtype}{list(g.shape)}, dmlops {w.dtype}{list(w.shape)}"
        if _bits(g) != _bits(w):
            gb = np.ascontiguousarray(g).reshape(-1).view(f"u{g.itemsize}")
            wb = np.ascontiguousarray(w).reshape(-1).view(f"u{w.itemsize}")
            at = int(np.flatnonzero(gb != wb)[0])
            return (
                f"output {k} element {at}: {g.reshape(-1)[at]!r} (bits {int(gb[at]):#x}), "
                f"dmlops {w.reshape(-1)[at]!r} (bits {int(wb[at]):#x})"
            )
    return ""


def compare(case: OnnxCase, runtime: Runner) -> Outcome:
    """Run the case on the runtime and judge it against dmlops' answer."""
    try:
        got = runtime(case.model, dict(case.inputs))
        error = ""
    except Exception as e:  # noqa: BLE001 - any refusal of any runtime is a verdict
        got, error = None, f"{type(e).__name__}: {e}".splitlines()[0][:300]
    if not case.valid:
        if got is None:
            return Outcome(case, "agree", error)
        return Outcome(case, "runtime accepts invalid", f"breaks {case.recipe.invalid}")
    if case.outputs is None:
        return Outcome(case, "refused by dmlops", case.error or "")
    if got is None:
        return Outcome(case, "refused by runtime", error)
    difference = _first_difference(got, case.outputs)
    return Outcome(case, "disagree" if difference else "agree", difference)


def _smaller(r: Recipe) -> list[Recipe]:
    """Recipes one step smaller than r: fewer operators, smaller caps (several seeds each)."""
    found = []
    ops = r.operators
    for k in range(len(ops)):
        if len(ops) > 1:
            found.append(dataclasses.replace(r, operators=ops[:k] + ops[k + 1 :]))
    for field_name, low in (("max_dim", 1), ("max_rank", 1)):
        value = getattr(r, field_name)
        for smaller in sorted({low, value // 2, value - 1}):
            if low <= smaller < value:
                found.append(dataclasses.replace(r, **{field_name: smaller}))
    return [dataclasses.replace(c, seed=c.seed + bump) for c in found for bump in range(6)]


def shrink(outcome: Outcome, runtime: Runner, attempts: int = 400) -> Outcome:
    """A smallest case found with the outcome's verdict: smaller recipes (an operator of
    the chain dropped, smaller caps) are tried while one keeps the verdict and makes a
    smaller case."""
    best = outcome
    tried = 0
    improved = True
    while improved and tried < attempts:
        improved = False
        for candidate in _smaller(best.case.recipe):
            if tried >= attempts:
                break
            tried += 1
            case = make_case(candidate)
            if case is None or case.size >= best.case.size:
                continue
            judged = compare(case, runtime)
            if judged.verdict == outcome.verdict:
                best, improved = judged, True
                break
    return best


@dataclass
class Report:
    """What a conformance run found."""

    runtime: str
    outcomes: list[Outcome] = field(default_factory=list)
    shrunk: list[tuple[Outcome, Outcome, Path | None]] = field(default_factory=list)
    seconds: float = 0.0

    def counts(self) -> dict[str, dict[str, int]]:
        """Per operator (a chain under its first), how many cases got each verdict."""
        table: dict[str, dict[str, int]] = {}
        for o in self.outcomes:
            op = o.case.recipe.operators[0] + (
                " (chain)" if len(o.case.recipe.operators) > 1 else ""
            )
            row = table.setdefault(op, dict.fromkeys(VERDICTS, 0))
            row[o.verdict] += 1
        return dict(sorted(table.items()))

    def table(self) -> str:
        """The summary as a Markdown table."""
        head = ["operator", "cases", *VERDICTS]
        lines = ["| " + " | ".join(head) + " |", "|---" + "|---:" * (len(head) - 1) + "|"]
        total = dict.fromkeys(VERDICTS, 0)
        for op, row in self.counts().items():
            lines.append(
                f"| {op} | {sum(row.values())} | "
                + " | ".join(str(row[v]) for v in VERDICTS)
                + " |"
            )
            for v in VERDICTS:
                total[v] += row[v]
        lines.append(
            f"| all | {sum(total.values())} | " + " | ".join(str(total[v]) for v in VERDICTS) + " |"
        )
        return "\n".join(lines)

    def refusals(self) -> dict[tuple[str, str], int]:
        """Valid models the runtime refused, counted by (operator and opset, data type)."""
        found: dict[tuple[str, str], int] = {}
        for o in self.outcomes:
            if o.verdict == "refused by runtime":
                r = o.case.recipe
                key = ("+".join(r.operators) + f"-{r.opset}", r.dtype)
                found[key] = found.get(key, 0) + 1
        return dict(sorted(found.items()))


def conform(
    runtime: Runner,
    count: int,
    seed: int = 0,
    operators: Sequence[str] | None = None,
    out: str | Path | None = None,
    shrink_findings: bool = True,
    most_shrunk: int = 20,
    name: str | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> Report:
    """Generate `count` cases, run each on the runtime and on dmlops, and shrink up to
    `most_shrunk` findings (one per operator and verdict first); with `out`, write each
    shrunk finding as a backend-test directory under OUT/VERDICT-WORDS/."""
    started = time.perf_counter()
    report = Report(name or str(getattr(runtime, "name", "runtime")))
    for k, r in enumerate(recipes(seed, count, operators)):
        case = drawn(r)
        if case is not None:
            report.outcomes.append(compare(case, runtime))
        if progress is not None:
            progress(k + 1, count)
    findings = [o for o in report.outcomes if o.verdict in FINDINGS]
    firsts: dict[tuple[str, str], Outcome] = {}
    for o in findings:
        firsts.setdefault((o.case.recipe.operators[0], o.verdict), o)
    ordered = list(firsts.values()) + [o for o in findings if o not in firsts.values()]
    for o in ordered[:most_shrunk]:
        small = shrink(o, runtime) if shrink_findings else o
        where = None
        if out is not None:
            where = write_case(small.case, out, small.verdict.replace(" ", "_"))
            (where / "finding.txt").write_text(
                f"verdict: {small.verdict}\n{small.detail}\n"
                f"recipe: {dataclasses.asdict(small.case.recipe)}\n"
                f"shrunk from: {o.case.name} (size {o.case.size} -> {small.case.size})\n"
            )
        report.shrunk.append((o, small, where))
    report.seconds = time.perf_counter() - started
    return report
