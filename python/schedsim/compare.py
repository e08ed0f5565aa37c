"""`schedsim compare`: run an experiment and compare its configs MMTests-style.

`run_experiment` runs (or loads) every run of the plan; `ExperimentResult` holds the results
with pandas views (`runs`, `samples`, `tables`), the MMTests tables as text and JSON, and writes
the HTML report.
"""

from __future__ import annotations

import hashlib
import json
import math
import statistics
from collections.abc import Callable, Iterator
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from . import __version__
from .errors import ConfigError
from .experiment import BenchmarkDef, Experiment, RunSpec
from .frames import frame_of, to_polars
from .report import mmtests
from .report import stats as st
from .results import RunResult, cgroup_metric
from .sweep import RunConfigError, RunFailedError, RunText, check_backend, iter_results
from .sweep.store import RunStore, flat_row, sample_columns

# turbostat columns MMTests keeps (MonitorTurbostat.pm), sorted as it sorts them, and the keys
# of the core's per-interval samples.
TURBOSTAT_COLUMNS = (
    ("Avg_MHz", "avg_mhz"),
    ("Busy%", "busy_pct"),
    ("CorWatt", "cor_watt"),
    ("PkgWatt", "pkg_watt"),
)

SIGNIFICANCE_TEXT = {
    "ci": "* marks a mean row where |difference| > 1.96 x (Stddev_base + Stddev_new) "
    "(MMTests' CI rule, since Nov 2024)",
    "ttest": "* marks a mean row where a two-sided t-test on the means gives p < 0.10 "
    "(MMTests' rule before Nov 2024)",
}


# ---- running -------------------------------------------------------------------------------


class _Progress:
    """A rich progress bar on stderr, or a callback, or nothing."""

    def __init__(
        self, enabled: bool | Callable[[int, int, int], None], name: str, total: int, loaded: int
    ) -> None:
        self.callback = enabled if callable(enabled) else None
        self.total, self.loaded, self.done = total, loaded, loaded
        self.bar = None
        if enabled is True:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            console = Console(stderr=True)
            self.bar = Progress(
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[note]}"),
                TimeElapsedColumn(),
                TimeRemainingColumn(),
                console=console,
                transient=False,
                disable=not console.is_terminal,
            )
            note = f"({loaded} loaded)" if loaded else ""
            self.task = self.bar.add_task(name, total=total, completed=loaded, note=note)
        self.started = False
        self._report()

    def start(self) -> None:
        """Show the bar (its refresh thread starts here: after the local backend has forked
        its workers)."""
        if self.bar is not None and not self.started:
            self.bar.start()
        self.started = True

    def _report(self) -> None:
        if self.callback is not None:
            self.callback(self.done, self.total, self.loaded)

    def advance(self) -> None:
        self.start()
        self.done += 1
        if self.bar is not None:
            self.bar.advance(self.task)
        self._report()

    def stop(self) -> None:
        if self.bar is not None and self.started:
            self.bar.stop()


def run_experiment(
    experiment: Experiment,
    backend: str = "local",
    jobs: int | None = None,
    out: str | Path | None = None,
    address: str | None = None,
    progress: bool | Callable[[int, int, int], None] = False,
) -> ExperimentResult:
    """Run the experiment's plan; with `out`, every result is stored as it completes and stored
    results are loaded instead of rerun."""
    check_backend(backend)
    results: dict[str, dict[str, Any]] = {}
    store = RunStore(out) if out is not None else None
    # with a store, only the tables' inputs stay in memory: per-task lists of a big sweep
    # (kernbench forks tens of thousands of processes per run) would not fit; `result()`
    # reads a run's whole result back from its file
    keep = _without_tasks if store is not None else (lambda r: r)
    if store is not None:
        store.clean()
        for spec in experiment.specs:
            stored = store.load(spec, tasks=False)
            if stored is not None:
                results[spec.key] = keep(stored)
    loaded = len(results)
    todo = [s for s in experiment.specs if s.key not in results]
    by_key = {s.key: s for s in todo}
    bar = _Progress(progress, experiment.name, len(experiment.specs), loaded)
    executed = 0
    stream: Iterator[tuple[dict[str, Any], RunText]] | None = None
    try:
        stream = iter_results([s.task() for s in todo], backend, jobs, address)
        for task, (text, tasks_text) in stream:
            spec = by_key[task["key"]]
            result = json.loads(text)
            if store is not None:
                store.save(spec, result, tasks_text)
            elif tasks_text is not None:
                result["tasks"] = json.loads(tasks_text)
            results[spec.key] = keep(result)
            executed += 1
            bar.advance()
    except RunConfigError as err:
        spec = by_key.get(err.key)
        where = spec.describe() if spec else f"run {err.key}"
        raise ConfigError(f"{experiment.origin}: {where}: {err.message}") from None
    except RunFailedError as err:
        spec = by_key.get(err.key)
        where = spec.describe() if spec else f"run {err.key}"
        raise RuntimeError(f"{experiment.origin}: {where}: {err.message}") from None
    finally:
        close = getattr(stream, "close", None)
        if close is not None:
            close()
        bar.stop()
    return ExperimentResult(experiment, results, executed=executed, loaded=loaded, out=out)


def _without_tasks(result: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in result.items() if k != "tasks"}


# ---- statistics over runs ------------------------------------------------------------------


def metric_samples(result: dict[str, Any], metric: str) -> list[float]:
    """One run's samples of a metric: its per-interval values when the core reports them in
    `samples`, else the run's single value."""
    samples = result.get("samples") or []
    if samples and all(metric in s for s in samples):
        return [math.nan if s[metric] is None else float(s[metric]) for s in samples]
    metrics = result.get("metrics") or {}
    stat = cgroup_metric(metric)
    if stat is not None and metric not in metrics:
        path, key = stat
        groups = result.get("cgroups") or {}
        if path not in groups or key not in (groups[path] or {}):
            raise ConfigError(
                f"the result has no cpu.stat {key} for cgroup '{path}' (metric '{metric}'); "
                f"its cgroups: {', '.join(groups) or 'none'}"
            )
        value = groups[path][key]
        return [math.nan if value is None else float(value)]
    if metric not in metrics:
        raise ConfigError(
            f"the result has no metric '{metric}'; it reports: {', '.join(metrics) or 'none'}"
        )
    value = metrics[metric]
    return [math.nan if value is None else float(value)]


def turbostat_samples(result: dict[str, Any], key: str) -> list[float]:
    """One run's per-interval turbostat readings of `key` over its measured interval (the
    intervals ending after the workload's warm-up, which the metrics skip too), or its value
    over the measured interval when the run took no sample."""
    start = float((result.get("sim") or {}).get("measured_from_s") or 0.0)
    samples = [
        s[key]
        for s in result.get("samples") or []
        if s.get(key) is not None and float(s.get("t_s", 0.0)) > start
    ]
    if samples:
        return [float(v) for v in samples]
    value = (result.get("turbostat") or {}).get(key)
    return [] if value is None else [float(value)]


def perf_per_watt(mean: float, watts: float, higher_is_better: bool) -> float:
    """DESIGN: throughput / package W for rates; 1 / (time × package W) for times. NaN where
    undefined: no power, a negative higher-is-better value (a late rt-app slack), a time of 0."""
    if not watts > 0 or math.isnan(mean):
        return math.nan
    if higher_is_better:
        return mean / watts if mean >= 0 else math.nan
    return 1.0 / (mean * watts) if mean > 0 else math.nan


def pooled_select_profile(results: list[dict[str, Any]]) -> dict[int, tuple[float, float, float]]:
    """The per-CPU `select_task_rq_fair` profile (`eas.select_task_rq_fair`) of several runs,
    pooled as one function-profiler session: {cpu: (hits per run, mean us, sample variance
    us^2)} over every call of every run. Empty when no run reports a call."""
    sums: dict[int, list[float]] = {}
    for r in results:
        for row in (r.get("eas") or {}).get("select_task_rq_fair") or []:
            h = float(row["hits"])
            acc = sums.setdefault(int(row["cpu"]), [0.0, 0.0, 0.0])
            acc[0] += h
            acc[1] += h * row["avg_us"]
            acc[2] += max(h - 1.0, 0.0) * row["var_us2"] + h * row["avg_us"] ** 2
    if not results or not any(acc[0] for acc in sums.values()):
        return {}
    out: dict[int, tuple[float, float, float]] = {}
    for cpu, (h, s1, s2) in sorted(sums.items()):
        mean = s1 / h if h else math.nan
        var = max((s2 - h * mean * mean) / (h - 1.0), 0.0) if h > 1 else (0.0 if h else math.nan)
        out[cpu] = (h / len(results), mean, var)
    return out


def bootstrap_rng(seed: int, *parts: Any) -> np.random.Generator:
    """The SubAmean bootstrap's generator, seeded from the experiment seed and the op."""
    text = json.dumps(["schedsim-bootstrap", seed, *parts], sort_keys=True, default=str)
    return np.random.default_rng(int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big"))


class ExperimentResult:
    """The results of an experiment: `runs` (one row per run), `samples` (one row per
    turbostat interval), `tables` (every table cell, long form), `text()` (the MMTests
    tables), `to_dict()` (JSON) and `report(dir)` (HTML with plots)."""

    def __init__(
        self,
        experiment: Experiment,
        results: dict[str, dict[str, Any]],
        executed: int = 0,
        loaded: int = 0,
        out: str | Path | None = None,
    ) -> None:
        self.experiment = experiment
        self.results = results
        self.executed = executed
        self.loaded = loaded
        self.out = None if out is None else Path(out)
        missing = [s for s in experiment.specs if s.key not in results]
        if missing:
            raise ValueError(f"{len(missing)} runs have no result, e.g. {missing[0].describe()}")

    # ---- access ----------------------------------------------------------------------------

    def result(self, spec: RunSpec) -> RunResult:
        data = self.results[spec.key]
        if "tasks" not in data and self.out is not None:
            data = RunStore(self.out).load(spec) or data
        return RunResult(data, spec.sim_config)

    def _runs_of(self, machine: str, config: str, benchmark: str, op: str) -> list[dict[str, Any]]:
        return [self.results[s.key] for s in self._index[(machine, config, benchmark, op)]]

    @cached_property
    def _index(self) -> dict[tuple[str, str, str, str], list[RunSpec]]:
        index: dict[tuple[str, str, str, str], list[RunSpec]] = {}
        for spec in self.experiment.specs:
            index.setdefault((spec.machine, spec.config, spec.benchmark, spec.op), []).append(spec)
        for specs in index.values():
            specs.sort(key=lambda s: s.repeat)
        return index

    @cached_property
    def runs(self) -> pd.DataFrame:
        """One row per run, in plan order: identity, metrics.*, power.*, turbostat.*, sched.*,
        sim.*."""
        rows = [flat_row(s, self.results[s.key]) for s in self.experiment.specs]
        return pd.DataFrame.from_records(rows)

    @cached_property
    def samples(self) -> pd.DataFrame:
        """One row per turbostat interval of every run (t_s, avg_mhz, busy_pct, bzy_mhz,
        pkg_watt, cor_watt, ...), with the run's identity."""
        frames = []
        for s in self.experiment.specs:
            columns = sample_columns(self.results[s.key])
            if not columns:
                continue
            frame = pd.DataFrame(columns)
            for i, (k, v) in enumerate(
                (
                    ("run_key", s.key),
                    ("machine", s.machine),
                    ("config", s.config),
                    ("benchmark", s.benchmark),
                    ("op", s.op),
                    ("value", s.value),
                    ("repeat", s.repeat),
                )
            ):
                frame.insert(i, k, [v] * len(frame))
            frames.append(frame)
        if not frames:
            return pd.DataFrame()
        return pd.concat(frames, ignore_index=True)

    # ---- tables ----------------------------------------------------------------------------

    @cached_property
    def summaries(self) -> dict[tuple[str, str, str], dict[str, dict[str, st.Summary]]]:
        """{(machine, benchmark, metric): {config: {op: Summary}}} for every metric, plus
        "power" (per-run average package W) per (machine, benchmark)."""
        exp = self.experiment
        out: dict[tuple[str, str, str], dict[str, dict[str, st.Summary]]] = {}
        for mdef in exp.machines:
            m = mdef.name
            for bdef in exp.benchmarks:
                ops = [bdef.op(v) for v in bdef.values(m)]
                for metric in bdef.metrics:
                    out[(m, bdef.name, metric.name)] = {
                        c: {
                            op: st.summarise(
                                [
                                    metric_samples(r, metric.name)
                                    for r in self._runs_of(m, c, bdef.name, op)
                                ],
                                metric.higher_is_better,
                                bdef.summarise,
                                rng=bootstrap_rng(exp.seed, m, bdef.name, metric.name, c, op),
                                kind=metric.mean_kind,
                            )
                            for op in ops
                        }
                        for c in exp.config_names
                    }
                out[(m, bdef.name, "power")] = {
                    c: {
                        op: st.summarise(
                            [
                                [float((r.get("power") or {}).get("avg_package_w", math.nan))]
                                for r in self._runs_of(m, c, bdef.name, op)
                            ],
                            False,
                            "Monitor",
                        )
                        for op in ops
                    }
                    for c in exp.config_names
                }
        return out

    def perf_per_watt(self, machine: str, bdef: BenchmarkDef) -> dict[str, dict[str, float]]:
        """{config: {op: perf/W}} of the benchmark's first metric."""
        metric = bdef.metrics[0]
        msumm = self.summaries[(machine, bdef.name, metric.name)]
        power = self.summaries[(machine, bdef.name, "power")]
        return {
            c: {
                op: perf_per_watt(msumm[c][op].mean, power[c][op].mean, metric.higher_is_better)
                for op in msumm[c]
            }
            for c in msumm
        }

    @cached_property
    def table_list(self) -> list[mmtests.Table]:
        """Every table, in print order: per machine and benchmark, each metric's summary and
        ratio tables, then package power, perf-per-watt and turbostat."""
        exp = self.experiment
        configs = exp.config_names
        tables: list[mmtests.Table] = []
        for mdef in exp.machines:
            m = mdef.name
            for bdef in exp.benchmarks:
                ops = [bdef.op(v) for v in bdef.values(m)]
                meta = {"machine": m, "benchmark": bdef.name, "workload": bdef.workload}
                for metric in bdef.metrics:
                    summ = self.summaries[(m, bdef.name, metric.name)]
                    mmeta = meta | {
                        "metric": metric.name,
                        "higher_is_better": metric.higher_is_better,
                        "summarise": bdef.summarise,
                    }
                    first = len(tables)
                    tables.append(
                        mmtests.stats_table(
                            summ,
                            configs,
                            ops,
                            rule=exp.significance,
                            labels=exp.labels,
                            section="metric",
                            title=f"{bdef.name} {metric.name} ({m})",
                            precision=bdef.decimals,
                            meta=mmeta,
                        )
                    )
                    tables.append(
                        mmtests.ratio_table(
                            summ,
                            configs,
                            ops,
                            section="ratio",
                            title=f"{bdef.name} {metric.name} ratio to {configs[0]} ({m})",
                            precision=bdef.decimals,
                            meta=mmeta,
                        )
                    )
                    if bdef.param is None and bdef.label is None:
                        # one op, named after the first metric: each metric's table names its own
                        for table in tables[first:]:
                            for row in table.rows:
                                if row.op == ops[0]:
                                    row.op = metric.name
                first_hw = len(tables)
                tables.append(
                    mmtests.stats_table(
                        self.summaries[(m, bdef.name, "power")],
                        configs,
                        ops,
                        rule=exp.significance,
                        labels=exp.labels,
                        section="power",
                        title=f"{bdef.name} package power, W ({m})",
                        meta=meta | {"metric": "avg_package_w", "higher_is_better": False},
                    )
                )
                metric = bdef.metrics[0]
                mean_name = "Hmean" if metric.mean_kind == "hmean" else "Amean"
                formula = (
                    f"{mean_name} {metric.name} / Amean PkgWatt"
                    if metric.higher_is_better
                    else f"1 / (Amean {metric.name} x Amean PkgWatt)"
                )
                tables.append(
                    mmtests.value_ratio_table(
                        self.perf_per_watt(m, bdef),
                        configs,
                        ops,
                        section="perf-per-watt",
                        title=f"{bdef.name} perf-per-watt = {formula}, ratio to {configs[0]} ({m})",
                        meta=meta | {"metric": metric.name, "higher_is_better": True},
                    )
                )
                tables.append(self._turbostat_table(m, bdef, ops, meta))
                tables.extend(self._select_profile_tables(m, bdef, ops, meta))
                if bdef.workload == "specpower" and bdef.param == "load_pct":
                    tables.append(self._specpower_score_table(m, bdef, ops, meta))
                if bdef.param is None and bdef.label is None:
                    # one op, named after the first metric: the power, perf-per-watt and
                    # hardware tables name it after the benchmark instead
                    for table in tables[first_hw:]:
                        for row in table.rows:
                            if row.op == ops[0]:
                                row.op = bdef.name
        return tables

    def _profile_groups(self) -> list[list[str]]:
        """Configs that differ only in kernel and features, in file order: each group's first
        config is the "before" of the others."""
        groups: dict[str, list[str]] = {}
        for c in self.experiment.configs:
            e = c.entry
            key = json.dumps(
                [e.driver, e.governor, e.invariance, e.hz, e.tunables, e.machine],
                sort_keys=True,
                default=str,
            )
            groups.setdefault(key, []).append(c.name)
        return list(groups.values())

    def _select_profile_tables(
        self, machine: str, bdef: BenchmarkDef, ops: list[str], meta: dict[str, Any]
    ) -> list[mmtests.Table]:
        """The function profiler's view of `select_task_rq_fair` (seed 002's table) over the
        benchmark's runs where EAS was enabled: per CPU that ran it, the hits per run, the mean
        and the variance of one call's time. One table per group of configs that differ only in
        kernel and features, each value with its change from the group's first config."""
        profiles = {
            c: pooled_select_profile(
                [
                    r
                    for op in ops
                    for r in self._runs_of(machine, c, bdef.name, op)
                    if (r.get("eas") or {}).get("enabled")
                ]
            )
            for c in self.experiment.config_names
        }
        tables = []
        for group in self._profile_groups():
            if not any(profiles[c] for c in group):
                continue
            cpus = sorted({cpu for c in group for cpu, v in profiles[c].items() if v[0] > 0})
            nan = (math.nan, math.nan, math.nan)
            base = group[0]
            table = mmtests.Table(
                "stats",
                "select-profile",
                f"{bdef.name} select_task_rq_fair per waking CPU: Hit per run, Avg (us), "
                f"s^2 (us^2); % change from {base} ({machine})",
                list(group),
                precision=3,
                meta=meta | {"metric": "select_task_rq_fair", "higher_is_better": False},
            )
            for i, stat in enumerate(("Hit", "Avg", "s^2")):
                for cpu in cpus:
                    values = [profiles[c].get(cpu, nan)[i] for c in group]
                    b = values[0]
                    compare = [(v / b - 1.0) * 100.0 if b > 0 else math.nan for v in values]
                    table.rows.append(mmtests.Row(stat, f"cpu{cpu}", values, compare))
            tables.append(table)
        return tables

    def specpower_score(self, machine: str, bdef: BenchmarkDef, ops: list[str]) -> dict[str, float]:
        """{config: SPECpower_ssj2008's overall score}: the sum over the benchmark's load levels
        of each level's ssj_ops over the sum of each level's average package power (means over
        the repeats), active idle included when the sweep has it. `ops` are the sweep's ops."""
        out = {}
        for c in self.experiment.config_names:
            ssj = power = 0.0
            for op in ops:
                runs = self._runs_of(machine, c, bdef.name, op)
                if not runs:
                    return {}
                ssj += statistics.fmean(
                    float((r.get("metrics") or {}).get("ssj_ops", 0.0)) for r in runs
                )
                power += statistics.fmean(
                    float((r.get("power") or {}).get("avg_package_w", math.nan)) for r in runs
                )
            out[c] = ssj / power if power > 0 else math.nan
        return out

    def _specpower_score_table(
        self, machine: str, bdef: BenchmarkDef, ops: list[str], meta: dict[str, Any]
    ) -> mmtests.Table:
        """SPECpower's score per config, with its % change from the first config."""
        configs = self.experiment.config_names
        score = self.specpower_score(machine, bdef, ops)
        values = [score.get(c, math.nan) for c in configs]
        base = values[0]
        table = mmtests.Table(
            "stats",
            "specpower-score",
            f"{bdef.name} SPECpower score = sum of ssj_ops / sum of PkgWatt over the "
            f"{len(ops)} load levels ({machine})",
            list(configs),
            precision=1,
            meta=meta | {"metric": "ssj_ops_per_w", "higher_is_better": True},
        )
        compare = [st.pdiff(v, base) for v in values]
        table.rows.append(mmtests.Row("Score", "ssj_ops/W", values, compare))
        return table

    def _turbostat_table(
        self, machine: str, bdef: BenchmarkDef, ops: list[str], meta: dict[str, Any]
    ) -> mmtests.Table:
        """MMTests' turbostat monitor: Amean and Max of every interval's reading over the
        whole benchmark (all parameter values and repeats) per config."""
        exp = self.experiment
        summ: dict[str, dict[str, st.Summary]] = {}
        for c in exp.config_names:
            runs = [r for op in ops for r in self._runs_of(machine, c, bdef.name, op)]
            summ[c] = {
                name: st.summarise([turbostat_samples(r, key) for r in runs], False, "Monitor")
                for name, key in TURBOSTAT_COLUMNS
            }
        return mmtests.stats_table(
            summ,
            exp.config_names,
            [name for name, _ in TURBOSTAT_COLUMNS],
            rule=exp.significance,
            labels=exp.labels,
            section="turbostat",
            title=f"{bdef.name} turbostat ({machine})",
            meta=meta | {"metric": None},
        )

    FRAMES = ("runs", "samples", "tables")

    def to_polars(self, name: str) -> Any:
        """`runs`, `samples` or `tables` as a polars DataFrame. Needs polars (`pip install
        'schedsim[polars]'`)."""
        return to_polars(frame_of(self, name, self.FRAMES))

    @cached_property
    def tables(self) -> pd.DataFrame:
        """Every cell of every table: machine, benchmark, metric, section, stat, op, config,
        value, compare_pct, significant, cidiff."""
        rows = []
        for table in self.table_list:
            for row in table.rows:
                for i, config in enumerate(table.configs):
                    rows.append(
                        {
                            "machine": table.meta.get("machine"),
                            "benchmark": table.meta.get("benchmark"),
                            "metric": table.meta.get("metric"),
                            "section": table.section,
                            "stat": row.stat.strip(),
                            "op": row.op,
                            "config": config,
                            "value": row.values[i],
                            "compare_pct": None if row.compare is None else row.compare[i],
                            "significant": None
                            if row.significant is None
                            else bool(row.significant[i]),
                            "cidiff": None if row.cidiff is None else row.cidiff[i],
                        }
                    )
        return pd.DataFrame.from_records(rows)

    def header(self) -> str:
        exp = self.experiment
        nvalues = sorted({len(b.values(m.name)) for b in exp.benchmarks for m in exp.machines})
        lines = [
            f"{exp.name}: {len(exp.configs)} configs (baseline {exp.config_names[0]}) x "
            f"{len(exp.benchmarks)} benchmark(s) x {'/'.join(map(str, nvalues))} values x "
            f"{exp.repeats} repeats on {', '.join(m.name for m in exp.machines)}",
        ]
        if exp.description:
            lines.append(exp.description.strip())
        lines.append(SIGNIFICANCE_TEXT[exp.significance])
        return "\n".join(lines) + "\n"

    def text(self) -> str:
        """The terminal tables."""
        return self.header() + "".join("\n" + t.render() for t in self.table_list)

    def to_dict(self) -> dict[str, Any]:
        """The JSON of the comparison: the experiment, the resolved configs and every table."""
        exp = self.experiment
        resolved: dict[str, dict[str, Any]] = {}
        for spec in exp.specs:
            entry = resolved.setdefault(spec.config, {})
            if spec.machine not in entry:
                sim = spec.sim_config
                entry[spec.machine] = {
                    "kernel": sim["kernel"]["version"],
                    "hz": sim["kernel"]["hz"],
                    **sim["cpufreq"],
                }
        return {
            "schedsim_version": __version__,
            "experiment": {
                "name": exp.name,
                "description": exp.description,
                "file": exp.origin,
                "repeats": exp.repeats,
                "seed": exp.seed,
                "significance": exp.significance,
                "labels": exp.labels,
            },
            "machines": [{"name": m.name, "preset": m.preset} for m in exp.machines],
            "configs": [
                {
                    "name": c.name,
                    **c.entry.model_dump(exclude={"name"}, exclude_defaults=True),
                    "resolved": resolved.get(c.name, {}),
                }
                for c in exp.configs
            ],
            "benchmarks": [
                {
                    "name": b.name,
                    "workload": b.workload,
                    "param": b.param,
                    "values": {m.name: b.values(m.name) for m in exp.machines},
                    "params": b.params,
                    "duration_ns": b.duration_ns,
                    "metrics": [
                        {"name": x.name, "higher_is_better": x.higher_is_better} for x in b.metrics
                    ],
                    "summarise": b.summarise,
                }
                for b in exp.benchmarks
            ],
            "runs": {"total": len(exp.specs), "executed": self.executed, "loaded": self.loaded},
            "tables": [t.to_dict() for t in self.table_list],
        }

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, allow_nan=False) + "\n"

    # ---- outputs ---------------------------------------------------------------------------

    def write(self, out: str | Path) -> dict[str, Path]:
        """Write the combined frames (runs.parquet, samples.parquet), the tables (tables.txt,
        tables.json), a copy of the experiment file and the HTML report into `out`."""
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        paths = {
            "runs": out / "runs.parquet",
            "samples": out / "samples.parquet",
            "tables_txt": out / "tables.txt",
            "tables_json": out / "tables.json",
        }
        _write_parquet(self.runs, paths["runs"])
        if not self.samples.empty:
            _write_parquet(self.samples, paths["samples"])
        else:
            del paths["samples"]
        _write_text(paths["tables_txt"], self.text())
        _write_text(paths["tables_json"], self.to_json())
        if self.experiment.text:
            paths["experiment"] = out / "experiment.toml"
            _write_text(paths["experiment"], self.experiment.text)
        paths["report"] = self.report(out)
        return paths

    def report(self, out: str | Path) -> Path:
        """Write `out/report.html` with its plots in `out/plots/`; returns the HTML's path."""
        from .report.html import write_report

        return write_report(self, Path(out))


def _write_text(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def _write_parquet(frame: pd.DataFrame, path: Path) -> None:
    frame = frame.copy()
    for column in frame.columns:
        if frame[column].dtype == object:
            kinds = {type(v) for v in frame[column] if v is not None}
            if len(kinds) > 1:  # e.g. a swept value that is an int here and a string there
                frame[column] = frame[column].map(lambda v: None if v is None else str(v))
    tmp = path.with_name(f".{path.name}.tmp")
    frame.to_parquet(tmp, index=False)
    tmp.replace(path)
