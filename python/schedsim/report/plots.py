"""The report's plots (matplotlib, Agg canvas: no pyplot state, no display needed).

Per machine and benchmark: each metric against the swept parameter per config with error bars
(the MMTests mean ± its Stddev/HStddev), frequency (Avg_MHz, Bzy_MHz), idle-state residency,
package power, and perf-per-watt as a ratio to the baseline.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from ..compare import ExperimentResult
    from ..experiment import BenchmarkDef

DPI = 110


def slug(*parts: str) -> str:
    return "-".join(re.sub(r"[^A-Za-z0-9_.]+", "_", p).strip("_") for p in parts)


def _figure(width: float = 7.5, height: float = 4.2, ncols: int = 1) -> tuple[Figure, Any]:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, ncols, squeeze=False)[0]
    return fig, axes


def _save(fig: Figure, path: Path) -> Path:
    tmp = path.with_name(f".{path.name}.tmp.png")
    fig.savefig(tmp, format="png")
    tmp.replace(path)
    return path


def _x_axis(ax: Axes, bdef: BenchmarkDef, labels: list[str]) -> np.ndarray:
    x = np.arange(len(labels), dtype=float)
    ax.set_xticks(x, labels)
    ax.set_xlabel(bdef.param or "")
    ax.grid(True, axis="y", alpha=0.3)
    return x


def _offsets(n: int, width: float = 0.18) -> list[float]:
    return [(i - (n - 1) / 2) * width / max(1, n - 1) if n > 1 else 0.0 for i in range(n)]


def _per_op(
    result: ExperimentResult, machine: str, bdef: BenchmarkDef, column: str
) -> dict[str, tuple[list[float], list[float]]]:
    """{config: (means, stddevs)} of a runs-frame column per op, over repeats."""
    runs = result.runs
    sel = runs[(runs["machine"] == machine) & (runs["benchmark"] == bdef.name)]
    ops = [bdef.op(v) for v in bdef.values(machine)]
    out = {}
    for config in result.experiment.config_names:
        means, sds = [], []
        for op in ops:
            vals = sel.loc[(sel["config"] == config) & (sel["op"] == op), column]
            vals = vals.dropna().astype(float) if column in sel else []
            means.append(float(np.mean(vals)) if len(vals) else math.nan)
            sds.append(float(np.std(vals, ddof=1)) if len(vals) > 1 else 0.0)
        out[config] = (means, sds)
    return out


def plot_benchmark(
    result: ExperimentResult, machine: str, bdef: BenchmarkDef, out_dir: Path
) -> list[tuple[str, Path]]:
    """Write this benchmark's plots; returns (caption, path) pairs."""
    out_dir.mkdir(parents=True, exist_ok=True)
    configs = result.experiment.config_names
    values = bdef.values(machine)
    labels = ["" if v is None else str(v) for v in values]
    if bdef.param is None:
        labels = [bdef.op(None)]
    ops = [bdef.op(v) for v in values]
    offs = _offsets(len(configs))
    written: list[tuple[str, Path]] = []

    def errorbars(ax: Axes, data: dict[str, tuple[list[float], list[float]]]) -> None:
        x = _x_axis(ax, bdef, labels)
        for off, config in zip(offs, configs, strict=True):
            means, sds = data[config]
            ax.errorbar(x + off, means, yerr=sds, marker="o", capsize=3, label=config)

    # metrics
    for metric in bdef.metrics:
        summ = result.summaries[(machine, bdef.name, metric.name)]
        data = {
            c: (
                [summ[c][op].mean for op in ops],
                [0.0 if math.isnan(summ[c][op].sd) else summ[c][op].sd for op in ops],
            )
            for c in configs
        }
        fig, (ax,) = _figure()
        errorbars(ax, data)
        mean_name = "Hmean" if metric.mean_kind == "hmean" else "Amean"
        better = "higher" if metric.higher_is_better else "lower"
        ax.set_ylabel(f"{metric.name} ({mean_name}, {better} is better)")
        ax.set_title(f"{bdef.name} {metric.name} on {machine}: mean ± stddev")
        ax.legend(fontsize="small")
        path = _save(fig, out_dir / f"{slug(machine, bdef.name, metric.name)}.png")
        written.append((f"{metric.name} against {bdef.param or 'the benchmark'}", path))

    # frequency
    fig, axes = _figure(width=11, ncols=2)
    for ax, column, name in zip(
        axes, ("turbostat.avg_mhz", "turbostat.bzy_mhz"), ("Avg_MHz", "Bzy_MHz"), strict=True
    ):
        errorbars(ax, _per_op(result, machine, bdef, column))
        ax.set_ylabel(f"{name} (MHz)")
        ax.set_title(f"{name} on {machine}")
    axes[0].legend(fontsize="small")
    path = _save(fig, out_dir / f"{slug(machine, bdef.name, 'frequency')}.png")
    written.append(("frequency: Avg_MHz (including idle) and Bzy_MHz (while busy)", path))

    # idle residency
    runs = result.runs
    sel = runs[(runs["machine"] == machine) & (runs["benchmark"] == bdef.name)]
    states = [c for c in sel.columns if c.startswith("turbostat.cstates.")]
    states = [c for c in states if sel[c].fillna(0).astype(float).max() > 0.05]
    fig, axes = _figure(width=max(7.5, 3.6 * len(configs)), ncols=len(configs))
    for ax, config in zip(axes, configs, strict=True):
        x = _x_axis(ax, bdef, labels)
        bottom = np.zeros(len(ops))
        layers = [("Busy% (C0)", "turbostat.busy_pct"), *((c.rsplit(".", 1)[1], c) for c in states)]
        for name, column in layers:
            heights = np.array(
                [
                    float(sel.loc[(sel["config"] == config) & (sel["op"] == op), column].mean())
                    if column in sel
                    else 0.0
                    for op in ops
                ]
            )
            heights = np.nan_to_num(heights)
            ax.bar(x, heights, bottom=bottom, label=name, width=0.6)
            bottom += heights
        ax.set_ylim(0, max(100.0, float(bottom.max()) if len(bottom) else 100.0))
        ax.set_title(config, fontsize="medium")
        ax.set_ylabel("residency (% of CPU time)")
    axes[-1].legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.0, 1.0))
    path = _save(fig, out_dir / f"{slug(machine, bdef.name, 'idle')}.png")
    written.append(("CPU time by state: busy (C0) and each idle state's residency", path))

    # package power
    power = result.summaries[(machine, bdef.name, "power")]
    fig, (ax,) = _figure()
    errorbars(
        ax,
        {
            c: (
                [power[c][op].mean for op in ops],
                [0.0 if math.isnan(power[c][op].sd) else power[c][op].sd for op in ops],
            )
            for c in configs
        },
    )
    ax.set_ylabel("package power (W, per-run average)")
    ax.set_title(f"{bdef.name} package power on {machine}: mean ± stddev")
    ax.legend(fontsize="small")
    path = _save(fig, out_dir / f"{slug(machine, bdef.name, 'power')}.png")
    written.append(("package power", path))

    # perf-per-watt
    ppw = result.perf_per_watt(machine, bdef)
    base = configs[0]
    fig, (ax,) = _figure()
    x = _x_axis(ax, bdef, labels)
    ax.axhline(1.0, color="grey", linewidth=1, linestyle="--")
    for config in configs:
        ratios = [ppw[config][op] / ppw[base][op] if ppw[base][op] else math.nan for op in ops]
        finite = [r for r in ratios if r > 0 and not math.isnan(r)]
        gmean = math.exp(sum(math.log(r) for r in finite) / len(finite)) if finite else math.nan
        ax.plot(x, ratios, marker="o", label=f"{config} (Gmean {gmean:.3f})")
    ax.set_ylabel(f"perf-per-watt ratio to {base} (higher is better)")
    ax.set_title(f"{bdef.name} perf-per-watt ({bdef.metrics[0].name}) on {machine}")
    ax.legend(fontsize="small")
    path = _save(fig, out_dir / f"{slug(machine, bdef.name, 'perf-per-watt')}.png")
    written.append(("perf-per-watt, ratio to the baseline", path))
    return written
