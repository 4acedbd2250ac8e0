"""Pictures of benchmark results: bars of GB/s per case, time per call against N, and each
case's contenders as ratios to one of them."""

from __future__ import annotations

import re
import textwrap
from typing import Any

from .common import Result

__all__ = ["contention_cases", "plot", "plot_contention", "plot_dask", "plot_ratios"]

_MANAGED = re.compile(r"peak managed ([\d/]+) MiB, RSS growth ([\d/]+) MiB")


def _pyplot() -> Any:
    """matplotlib's pyplot, drawing to files only (the Agg backend)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig: Any, path: str, unused: Any = ()) -> None:
    """`fig` laid out and written to `path` (its `unused` axes hidden), then closed."""
    for ax in unused:
        ax.axis("off")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    _pyplot().close(fig)


def plot_dask(results: list[Result], path: str) -> None:
    """The dask section: each contender's time over the reference's per case (log axis), and
    its largest per-worker peak of Dask's managed memory and of resident growth."""
    plt = _pyplot()

    contenders = list(dict.fromkeys(n for r in results for n in r.times))
    color = {n: f"C{k}" for k, n in enumerate(contenders)}  # (the same in both panels)
    names = [n for n in contenders if all(n != r.reference for r in results)]
    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 0.42 * len(results) + 1.6), sharey=True)
    height = 0.8 / max(1, len(names))
    for k, n in enumerate(names):
        ys = [i + k * height for i, r in enumerate(results) if n in r.times]
        ratios = [r.times[n] / r.times[r.reference] for r in results if n in r.times]
        left.barh(ys, ratios, height, label=n, color=color[n])
    left.axvline(1.0, color="black", linewidth=0.8)
    left.set_xscale("log")
    left.set_xlabel("time / dask.array's (median; below 1: faster)")
    left.set_yticks([i + 0.4 - height / 2 for i in range(len(results))])
    left.set_yticklabels([r.case for r in results], fontsize=7)
    left.invert_yaxis()
    left.legend(fontsize=7)
    height = 0.8 / max(1, len(contenders))
    for k, n in enumerate(contenders):
        ys, peaks = [], []
        for i, r in enumerate(results):
            found = _MANAGED.search(r.details.get(n, ""))
            if found:
                ys.append(i + k * height)
                peaks.append(max(int(v) for g in found.groups() for v in g.split("/")))
        right.barh(ys, peaks, height, label=n, color=color[n])
    right.set_xlabel("MiB a worker (largest of peak managed and RSS growth)")
    right.legend(fontsize=7)
    _save(fig, path)


def contention_cases(results: list[Result]) -> dict[str, dict[str, Result]]:
    """The contention section's results by case (its name before any parenthesis), then by
    condition ("idle", "1 busy", ...: the bracket that ends a result's name; a case's own
    name may hold brackets too)."""
    cases: dict[str, dict[str, Result]] = {}
    for r in results:
        case, _, condition = r.case.rpartition(" [")
        cases.setdefault(case.split(" (")[0], {})[condition.split(",")[0]] = r
    return cases


def plot_contention(results: list[Result], path: str) -> None:
    """One panel per case of the contention section: each contender's median per condition
    as a bar, its 99th percentile as a tick above it (log time axis)."""
    plt = _pyplot()

    cases = contention_cases(results)
    fig, axes = plt.subplots(
        (len(cases) + 1) // 2, 2, figsize=(12, 3.2 * ((len(cases) + 1) // 2)), squeeze=False
    )
    for ax, (case, by_condition) in zip(axes.flat, cases.items(), strict=False):
        conditions = list(by_condition)
        names = list(
            dict.fromkeys(
                n for r in by_condition.values() for n in r.times if not n.endswith(" p99")
            )
        )
        width = 0.8 / len(names)
        for k, n in enumerate(names):
            xs = [i + k * width for i in range(len(conditions))]
            medians = [by_condition[c].times.get(n, float("nan")) * 1e3 for c in conditions]
            tails = [by_condition[c].times.get(f"{n} p99", float("nan")) * 1e3 for c in conditions]
            ax.bar(xs, medians, width, label=n)
            ax.scatter(xs, tails, marker="_", s=80, color="black")
        ax.set_xticks([i + 0.4 - width / 2 for i in range(len(conditions))])
        ax.set_xticklabels(conditions, fontsize=7)
        ax.set_yscale("log")
        ax.set_ylabel("ms a call (bar: median, tick: p99)", fontsize=7)
        ax.set_title(case, fontsize=8)
        ax.legend(fontsize=6)
    _save(fig, path, list(axes.flat)[len(cases) :])


Lines = dict[str, list[tuple[float, float]]]  # a panel's lines: label -> (x, ratio) points


def _ratio_panels(panels: dict[str, Lines], path: str, xlabel: str, ylabel: str, base: int) -> None:
    """A panel per case, two a row: each line's ratio to numpy against x (log-log, x's log
    to `base`), a black line at 1."""
    plt = _pyplot()

    columns = 2
    rows = -(-len(panels) // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(11, 2.8 * rows), squeeze=False)
    for ax, (case, lines) in zip(axes.flat, panels.items(), strict=False):
        for label, pts in lines.items():
            pts = sorted(pts)
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=label)
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_xscale("log", base=base)
        ax.set_yscale("log")
        ax.set_title(case, fontsize=9)
        ax.set_xlabel(xlabel, fontsize=8)
        ax.set_ylabel(ylabel, fontsize=8)
        ax.legend(fontsize=6)
    _save(fig, path, list(axes.flat)[len(panels) :])


def plot_sizes(results: list[Result], path: str) -> None:
    """One panel per case of the sizes section: each contender's median over numpy's against
    the output's size (log-log; below 1 is faster than numpy)."""
    panels: dict[str, Lines] = {}
    for r in results:
        lines = panels.setdefault(r.case.rpartition(", ")[0], {})
        for name, t in r.times.items():
            if not name.endswith(" p99") and name != "numpy":
                lines.setdefault(name, []).append((r.output_bytes, t / r.times["numpy"]))
    _ratio_panels(panels, path, "output bytes", "median / numpy's", 10)


def plot_callers(results: list[Result], path: str) -> None:
    """One panel per operator of the callers section: dmlops' round over numpy's against the
    threads calling at once, a line per size (below 1 is faster than numpy)."""
    panels: dict[str, Lines] = {}
    for r in results:
        case, size, threads = r.case.rsplit(", ", 2)
        ratio = r.times["dmlops"] / r.times["numpy"]
        panels.setdefault(case, {}).setdefault(size, []).append((int(threads.split()[0]), ratio))
    _ratio_panels(panels, path, "Python threads calling at once", "round / numpy's", 2)


def plot(results: list[Result], path: str) -> None:
    """Bandwidth bars for cases of one size; log-log time-per-call lines for call-cost series;
    the contention, sizes, callers and dask sections' cases in pictures of their own (beside
    `path`)."""
    plt = _pyplot()

    contention = [r for r in results if r.section == "contention"]
    if contention:
        stem, dot, suffix = path.rpartition(".")
        plot_contention(contention, f"{stem}_contention.{suffix}" if dot else f"{path}_contention")
        results = [r for r in results if r.section != "contention"]
    sized = [r for r in results if r.section == "sizes"]
    if sized:
        stem, dot, suffix = path.rpartition(".")
        plot_sizes(sized, f"{stem}_sizes.{suffix}" if dot else f"{path}_sizes")
        results = [r for r in results if r.section != "sizes"]
    called = [r for r in results if r.section == "callers"]
    if called:
        stem, dot, suffix = path.rpartition(".")
        plot_callers(called, f"{stem}_callers.{suffix}" if dot else f"{path}_callers")
        results = [r for r in results if r.section != "callers"]
    dask = [r for r in results if r.section == "dask"]
    if dask:
        stem, dot, suffix = path.rpartition(".")
        plot_dask(dask, f"{stem}_dask.{suffix}" if dot else f"{path}_dask")
        results = [r for r in results if r.section != "dask"]

    bars = [r for r in results if r.count is None and r.output_bytes > 1 << 20]
    series: dict[tuple[str, str], list[Result]] = {}
    for r in results:
        if r.count is not None:
            series.setdefault((r.device, r.case.split(" ")[0]), []).append(r)
    panels = (1 if bars else 0) + len(series)
    if panels == 0:
        return
    fig, axes = plt.subplots(
        panels, 1, figsize=(max(8.0, 0.9 * len(bars)), 4.5 * panels + (2.5 if bars else 0))
    )
    axes_list = list(axes) if panels > 1 else [axes]
    if bars:
        ax = axes_list.pop(0)
        names = sorted({n for r in bars for n in r.times})
        width = 0.8 / len(names)
        for k, n in enumerate(names):
            xs = [i + k * width for i, r in enumerate(bars) if n in r.times]
            ax.bar(xs, [r.gbps(n) for r in bars if n in r.times], width, label=n)
        ax.set_xticks([i + 0.4 for i in range(len(bars))])
        labels = [textwrap.fill(f"{r.device}: {r.case}", 22) for r in bars]
        ax.set_xticklabels(labels, fontsize=6, rotation=60, ha="right")
        ax.set_ylabel("GB/s (2 x output bytes / median time)")
        ax.legend(fontsize=7)
    for (device, op), rs in series.items():
        ax = axes_list.pop(0)
        rs = sorted(rs, key=lambda r: r.count or 0)
        for n in sorted({n for r in rs for n in r.times}):
            pts = [(r.count, r.times[n] * 1e6) for r in rs if n in r.times]
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=n)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("arrays per call (N)")
        ax.set_ylabel("µs per call (median)")
        ax.set_title(f"{device}: {op}, time per call")
        ax.legend(fontsize=7)
    _save(fig, path)


def plot_ratios(rows: dict[str, dict[str, float]], baseline: str, label: str, path: str) -> None:
    """Each case's contenders (seconds, by name) as ratios to `baseline`'s time, a bar each
    on a log scale; `label` names the x axis's condition (threads, host)."""
    plt = _pyplot()

    names = list(rows)
    others = [c for c in dict.fromkeys(k for r in rows.values() for k in r) if c != baseline]
    height = 0.8 / max(1, len(others))
    fig, ax = plt.subplots(figsize=(10, 0.45 * len(names) * max(1, len(others)) / 2 + 1.2))
    for k, contender in enumerate(others):
        ys = [i + height * k for i, n in enumerate(names) if contender in rows[n]]
        ratios = [rows[n][contender] / rows[n][baseline] for n in names if contender in rows[n]]
        ax.barh(ys, ratios, height, label=contender)
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.set_xscale("log")
    ax.set_yticks([i + height * (len(others) - 1) / 2 for i in range(len(names))])
    ax.set_yticklabels(names, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel(f"time / {baseline}'s time ({label}; below 1 is faster)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.subplots_adjust(left=0.36)  # (the cases' long names)
    fig.savefig(path, dpi=110)
    plt.close(fig)
