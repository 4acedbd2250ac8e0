"""Pictures of benchmark results: bars of GB/s per case, and time per call against N."""

from __future__ import annotations

import textwrap

from .common import Result

__all__ = ["plot"]


def plot(results: list[Result], path: str) -> None:
    """Bandwidth bars for cases of one size; log-log time-per-call lines for call-cost series."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

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
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
