#!/usr/bin/env python3
"""Validate schedsim against the seeds' published results, cell by cell.

For seed 000 (x86 frequency invariance, kernel 5.2) this runs experiments/seed000-<machine>.toml,
for seed 001 (CFS bandwidth timers) experiments/cfs-bandwidth-interleave-41abdba9.toml, for seed
002 (EAS wake-up cost) experiments/eas-wakeup-eb92692b.toml, for seed 003 (HWP dynamic boost)
experiments/hwp-boost-seed003.toml, through the experiment API
(the same code as `schedsim compare`), reads the published cells transcribed in
validation/seedNNN.toml, computes the simulated value of every cell and writes
docs/validation.md (every cell: published, simulated, direction, |error|; and whether each
target, an effect the seeds report or the agreement bar, holds) and docs/validation.json (per
seed: cells, direction_agree, median_ratio_error; the targets and whether they hold).

    scripts/validate.py                 # full size (make validate)
    scripts/validate.py --quick         # one repeat, shorter tbench runs
    scripts/validate.py --machines haswell

Runs are stored per run under out/validate[-quick]/<experiment>/, so an interrupted study
resumes where it stopped and a rerun only rescores.
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import statistics
import sys
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

# A ratio within this distance of 1.00 is neutral: the seeds print it as `~`.
NEUTRAL_BAND = 0.02

# The tables of a seed that hold its performance results (the agreement target is stated on seed
# 000's): they get a headline row of their own.
PERFORMANCE_TABLES = {"000": ("5.3.2", "5.3.3")}

# --quick: what is reduced, applied to the parsed experiment file before it is checked.
QUICK_REPEATS = 1
QUICK_DURATION = {"tbench": ("1s", 0.25)}  # workload -> (duration, warmup_s)
# Studies cheap enough to keep their repeats in --quick: seed 001's cells are means over random
# timer phases, which one repeat would not represent; seed 003's whole study takes about a
# minute, so it runs at full size.
QUICK_KEEP_REPEATS = {"cfs-bandwidth-interleave-41abdba9", "hwp-boost-seed003"}


# ---- scoring ------------------------------------------------------------------------------


def direction(ratio: float, higher_is_better: bool, band: float = NEUTRAL_BAND) -> str:
    """`better`, `worse` or `~` (neutral) for a ratio new/baseline."""
    if math.isnan(ratio):
        return "?"
    if abs(ratio - 1.0) <= band + 1e-12:
        return "~"
    improved = ratio > 1.0 if higher_is_better else ratio < 1.0
    return "better" if improved else "worse"


@dataclass
class Cell:
    """One published cell. A `ratio` cell holds new / baseline (scored); an `abs` cell holds a
    baseline's absolute value (shown next to the simulated one, not scored)."""

    table: str
    machine: str
    benchmark: str
    op: str
    config: str
    published: float
    higher_is_better: bool
    # where the simulated value is read: ratio|metric|turbostat|perf-per-watt|
    # perf-per-watt-whole (simulated_value)
    section: str = "ratio"
    kind: str = "ratio"  # ratio | abs
    metric: str | None = None  # the schedsim metric, where a benchmark tabulates several
    # the config a cell's simulated value is divided by (absolute and perf-per-watt-whole tables)
    baseline: str | None = None
    simulated: float = math.nan

    @property
    def scored(self) -> bool:
        return self.kind == "ratio"

    @property
    def pub_dir(self) -> str:
        return direction(self.published, self.higher_is_better) if self.scored else ""

    @property
    def sim_dir(self) -> str:
        return direction(self.simulated, self.higher_is_better) if self.scored else ""

    @property
    def agree(self) -> bool | None:
        if not self.scored or math.isnan(self.simulated):
            return None
        return self.pub_dir == self.sim_dir

    @property
    def error(self) -> float:
        return abs(self.simulated - self.published)


def agreement(cells) -> tuple[int, float, float]:
    """(cells judged, share agreeing in direction, median |error|), unrounded, over the scored
    cells that have a simulated value. Anything with `scored`, `simulated`, `agree` and `error`
    will do (scripts/validation_diff.py passes the rows it reads back from a report)."""
    done = [c for c in cells if c.scored and not math.isnan(c.simulated)]
    if not done:
        return 0, math.nan, math.nan
    agree = sum(bool(c.agree) for c in done) / len(done)
    return len(done), agree, statistics.median(c.error for c in done)


def score(cells: list[Cell]) -> dict[str, Any]:
    """Headline numbers over the scored cells that have a simulated value."""
    n, agree, error = agreement(cells)
    if not n:
        return {"cells": 0, "direction_agree": None, "median_ratio_error": None}
    return {
        "cells": n,
        "direction_agree": round(agree, 4),
        "median_ratio_error": round(error, 4),
    }


# ---- the targets ---------------------------------------------------------------------------

# The bar for seed 000's performance tables.
TARGET_DIRECTION_AGREE = 0.90
TARGET_MEDIAN_ERROR = 0.05
# "gitsource 30-50 % faster with invariance" (the seed's "gains of 30-50 % depending on the
# machine"): the time saved, 1 - ratio, as MMTests prints gains. The seed's own invariant cells
# save 0.31-0.52 (broadwell-80x 8C: 0.48 of the baseline's time), so the range is 0.30-0.52,
# with the neutral band's tolerance at both ends.
GITSOURCE_SAVING = (0.30, 0.52)
# "kernbench ... persisting at saturation on Broadwell (about 14 %)": the time saved at the
# two highest job counts, within 0.04 of 0.14.
KERNBENCH_SATURATED_SAVING = (0.10, 0.18)

INVARIANT_PREFIX = "sugov-turbo"


@dataclass
class Target:
    """One effect the seeds report that the study must reproduce, judged on the simulated
    cells. `held` is None when the cells it needs have no simulated value."""

    name: str
    held: bool | None
    evidence: str


def _simulated(cells: list[Cell], **match: str) -> list[Cell]:
    """The scored cells with a simulated value whose fields equal `match`; `table` matches a
    prefix of the table's name and `config` a prefix of the config's."""
    return [c for c in _matching(cells, **match) if c.scored and not math.isnan(c.simulated)]


def _matching(cells: list[Cell], **match: str) -> list[Cell]:
    """The cells whose fields equal `match` (prefixes for `table` and `config`)."""
    out = []
    for c in cells:
        if any(
            not getattr(c, k).startswith(v) if k in ("table", "config") else getattr(c, k) != v
            for k, v in match.items()
        ):
            continue
        out.append(c)
    return out


def _count(op: str) -> int | None:
    """The swept value of a detailed table's op (`clients-8` -> 8), None if it has none."""
    tail = op.rsplit("-", 1)[-1]
    return int(tail) if tail.isdigit() else None


def _counted(cells: list[Cell]) -> list[tuple[int, Cell]]:
    """(swept value, cell) of the cells whose op carries one, in increasing order."""
    pairs = [(n, c) for c in cells if (n := _count(c.op)) is not None]
    return sorted(pairs, key=lambda p: p[0])


def _within(x: float, lo: float, hi: float) -> bool:
    """lo <= x <= hi, the edges included despite rounding (1 - 0.90 is 0.0999...)."""
    return lo - 1e-9 <= x <= hi + 1e-9


def _configs(cells: list[Cell]) -> list[str]:
    """The cells' configs in their table's order (sugov-turbo1 before sugov-turbo12)."""
    return list(dict.fromkeys(c.config for c in cells))


def _span(values: list[float]) -> str:
    lo, hi = f"{min(values):.2f}", f"{max(values):.2f}"
    return lo if lo == hi else f"{lo}-{hi}"


def _gmean(values: list[float]) -> float:
    """Geometric mean; NaN when a value is not positive (a run that did no work)."""
    if not values or any(not x > 0 for x in values):
        return math.nan
    return math.exp(sum(math.log(x) for x in values) / len(values))


def _at(c: Cell) -> str:
    """`op simulated (published)`."""
    return f"{c.op} {c.simulated:.2f} ({c.published:.2f})"


def _judge(
    name: str, per_part: list[tuple[str, bool, str]], missing: list[str] | None = None
) -> Target:
    """A target that holds when every part holds (a part per machine or config); undecided
    while a part it needs (`missing`) has no simulated cells."""
    if missing:
        return Target(name, None, f"not simulated: {', '.join(missing)}")
    if not per_part:
        return Target(name, None, "no simulated cells")
    return Target(
        name,
        all(ok for _, ok, _ in per_part),
        "; ".join(f"{label}: {text}" for label, _, text in per_part),
    )


def _performance_targets(perf: list[Cell]) -> list[Target]:
    direction_name = (
        f"seed 000 performance tables: at least {TARGET_DIRECTION_AGREE:.0%} of the cells agree "
        "in direction"
    )
    error_name = f"seed 000 performance tables: median ratio error at most {TARGET_MEDIAN_ERROR}"
    n, agree, error = agreement(perf)
    if not n:
        return [Target(direction_name, None, "no simulated cells"), Target(error_name, None, "")]
    return [
        Target(direction_name, agree >= TARGET_DIRECTION_AGREE, f"{agree:.1%} of {n}"),
        Target(error_name, error <= TARGET_MEDIAN_ERROR, f"{error:.4f}"),
    ]


def _gitsource_targets(cells: list[Cell]) -> list[Target]:
    lo, hi = GITSOURCE_SAVING
    published = _matching(cells, table="5.3.2", benchmark="gitsource")
    machines = list(dict.fromkeys(c.machine for c in published))
    saving, between, missing = [], [], []
    for m in machines:
        git = _simulated(published, machine=m)
        inv = [c for c in git if c.config.startswith(INVARIANT_PREFIX)]
        pstate = [c for c in git if c.config == "pstate"]
        if not inv:
            missing.append(m)
            continue
        sim = [c.simulated for c in inv]
        pub = [c.published for c in inv]
        ok = all(_within(1 - x, lo - NEUTRAL_BAND, hi + NEUTRAL_BAND) for x in sim)
        saving.append((m, ok, f"{_span(sim)} of the baseline's time ({_span(pub)})"))
        if pstate:
            p = pstate[0]
            ok = max(sim) < p.simulated < 1.0
            text = f"intel_pstate {p.simulated:.2f} ({p.published:.2f}), invariant {_span(sim)}"
            between.append((m, ok, text))
    return [
        _judge(
            "gitsource 30-50 % faster with invariance on every Intel machine (time saved "
            f"{lo:.2f}-{hi:.2f}, the seed's own span, within the 0.02 band)",
            saving,
            missing,
        ),
        _judge(
            "gitsource: intel_pstate between the baseline and invariant schedutil",
            between,
            missing,
        ),
    ]


def _kernbench_targets(cells: list[Cell]) -> list[Target]:
    table = _matching(cells, table="5.3.3 kernbench")
    machine = table[0].machine if table else "the detailed table"
    detail = _simulated(table, config=INVARIANT_PREFIX)
    lo, hi = KERNBENCH_SATURATED_SAVING
    low, saturated = [], []
    for config in _configs(detail):
        rows = [c for _, c in _counted([c for c in detail if c.config == config])]
        if len(rows) < 3:
            continue
        best = min(rows, key=lambda c: c.simulated)
        low.append((config, best in rows[:2], f"largest gain at {_at(best)}, {_at(rows[-1])}"))
        top = rows[-2:]
        ok = all(_within(1 - c.simulated, lo, hi) for c in top)
        saturated.append((config, ok, ", ".join(_at(c) for c in top)))
    every = _simulated(
        performance_cells("000", cells), benchmark="kernbench", config=INVARIANT_PREFIX
    )
    worse = [c for c in every if c.sim_dir == "worse"]
    listed = ", ".join(f"{c.machine} {c.config} {_at(c)}" for c in worse) or "none worse"
    regressions = [("every invariant kernbench cell", not worse, listed)] if every else []
    return [
        _judge(f"kernbench on {machine}: gains largest at low job counts", low),
        _judge(
            f"kernbench on {machine}: about 14 % gain persisting at saturation (time saved "
            f"{lo:.2f}-{hi:.2f} at the two highest job counts)",
            saturated,
        ),
        _judge("kernbench: no regressions with invariance", regressions),
    ]


def _tbench_targets(cells: list[Cell], ncpus: dict[str, int]) -> list[Target]:
    table = _matching(cells, table="5.3.3 tbench")
    machine = table[0].machine if table else "the detailed table"
    detail = _simulated(table, config=INVARIANT_PREFIX)
    low, saturated = [], []
    cpus = ncpus.get(machine)
    for config in _configs(detail) if cpus else []:
        rows = _counted([c for c in detail if c.config == config])
        # low: every client/server pair can have two CPUs; saturation: a client per CPU
        light = [c for n, c in rows if 2 * n <= cpus]
        full = [c for n, c in rows if n >= cpus]
        if light:
            g = _gmean([c.simulated for c in light])
            gp = _gmean([c.published for c in light])
            ok = direction(g, True) == "better"
            low.append((config, ok, f"Gmean {g:.2f} ({gp:.2f})"))
        if full:
            ok = all(c.sim_dir == "~" for c in full)
            saturated.append((config, ok, _span([c.simulated for c in full])))
    return [
        _judge(f"tbench on {machine}: gains at low client counts (2 x clients <= CPUs)", low),
        _judge(
            f"tbench on {machine}: neither gain nor loss at saturation (clients >= CPUs)",
            saturated,
        ),
    ]


def _cgroup_targets(cells: list[Cell]) -> list[Target]:
    name = "2-cgroup stress-ng faster with interleaved timers at higher power"
    time_ = _simulated(cells, benchmark="stress-ng-2cg", section="metric")
    power = _simulated(cells, benchmark="stress-ng-2cg", section="power")
    if len(time_) != 1 or len(power) != 1:
        return [Target(name, None, "no simulated cells")]
    t, w = time_[0], power[0]
    ok = t.sim_dir == "better" and direction(w.simulated, True) == "better"
    text = (
        f"time {t.simulated:.2f} ({t.published:.2f}), power {w.simulated:.2f} ({w.published:.2f})"
    )
    return [Target(name, ok, text)]


def _eas_targets(cells: list[Cell]) -> list[Target]:
    """Per-domain wake-ups cheaper than the O(n^2) ones: over the CPUs simulated in both
    tests, the Gmean of each test's cost ratio is better, the per-CPU policies' the lower.
    The seed itself has single CPUs worse (Test 2, CPUs 4-7: 1.14-1.31)."""
    percpu = {c.op: c for c in _simulated(cells, config="percpu")}
    cluster = {c.op: c for c in _simulated(cells, config="cluster")}
    ops = [op for op in percpu if op in cluster]
    name = "per-domain EAS wake-ups cheaper than the O(n^2) ones, most with per-CPU policies"
    if not ops:
        return [Target(name, None, "no simulated cells")]

    def gmeans(side: dict[str, Cell]) -> tuple[float, float]:
        return (
            _gmean([side[op].simulated for op in ops]),
            _gmean([side[op].published for op in ops]),
        )

    (a, ap), (b, bp) = gmeans(percpu), gmeans(cluster)
    ok = direction(a, False) == "better" and direction(b, False) == "better" and a < b
    text = (
        f"{', '.join(ops)}: Gmean per-CPU policies {a:.2f} ({ap:.2f}), two policies "
        f"{b:.2f} ({bp:.2f})"
    )
    return [Target(name, ok, text)]


def targets(
    seeds: dict[str, tuple[dict[str, Any], list[Cell]]], ncpus: dict[str, int]
) -> list[Target]:
    """The effects the seeds report that the study must reproduce, and seed 000's agreement
    bar, judged on the simulated cells of the seeds at hand (a seed left out contributes no
    target)."""
    out: list[Target] = []
    if "000" in seeds:
        cells = seeds["000"][1]
        out += _performance_targets(performance_cells("000", cells))
        out += _gitsource_targets(cells)
        out += _kernbench_targets(cells)
        out += _tbench_targets(cells, ncpus)
    if "001" in seeds:
        out += _cgroup_targets(seeds["001"][1])
    if "002" in seeds:
        out += _eas_targets(seeds["002"][1])
    return out


# ---- the published values -----------------------------------------------------------------


def load_published(path: Path) -> tuple[dict[str, Any], list[Cell]]:
    """Read a validation/seedNNN.toml: its [seed] header and every cell. A table lists its
    configs once and gives one row per (benchmark, op) with a value per config; `~` stands for
    a neutral 1.00 as printed in the seed. In `absolute` tables the first config is the
    baseline: the other cells become ratios to it and the baseline cell an unscored `abs`."""
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    cells: list[Cell] = []
    for t in data["table"]:
        configs = t["configs"]
        absolute = t["kind"] == "absolute"
        if t["kind"] not in ("ratio", "absolute"):
            raise ValueError(f"{path}: table {t['name']!r}: kind must be ratio or absolute")
        for row in t["rows"]:
            bench, op, values = row[0], str(row[1]), row[2:]
            if len(values) != len(configs):
                raise ValueError(
                    f"{path}: table {t['name']!r} row {bench} {op}: {len(values)} values for "
                    f"{len(configs)} configs"
                )
            values = [1.0 if v == "~" else float(v) for v in values]
            common = {
                "table": t["name"],
                "machine": t["machine"],
                "benchmark": bench,
                "op": op,
                "higher_is_better": t["higher_is_better"],
                "section": t["section"],
                "metric": t.get("metric"),
            }
            if t["section"] == "perf-per-watt-whole":
                # a ratio of two configs' perf/W: divided by the baseline's own
                if "baseline" not in t:
                    raise ValueError(
                        f"{path}: table {t['name']!r}: section perf-per-watt-whole needs "
                        "`baseline`, the config its ratios are to"
                    )
                common["baseline"] = t["baseline"]
            elif "baseline" in t and not absolute:
                # a ratio the simulation gives as two absolute values: new over baseline
                common["baseline"] = t["baseline"]
            if not absolute:
                cells += [
                    Cell(config=c, published=v, **common)
                    for c, v in zip(configs, values, strict=True)
                ]
                continue
            base = values[0]
            cells.append(Cell(config=configs[0], published=base, kind="abs", **common))
            cells += [
                Cell(config=c, published=v / base, baseline=configs[0], **common)
                for c, v in zip(configs[1:], values[1:], strict=True)
            ]
    return data["seed"], cells


def simulated_value(tables: Any, cell: Cell) -> float:
    """The simulated counterpart of a cell from ExperimentResult.tables (one row per cell of
    every schedsim table).

    `perf-per-watt-whole` is seed 000's own perf-per-watt (its 5.3.4 had turbostat averages
    per whole benchmark only, not per client or job count): the benchmark's performance ratio
    to the baseline (its ratio table's Gmean, inverted when lower is better) divided by the
    config's whole-benchmark package power ratio (turbostat PkgWatt Amean). schedsim's own
    perf-per-watt table is per op, the Gmean of per-op ratios, a different quantity."""

    def rows(section: str, config: str) -> Any:
        return tables[
            (tables.machine == cell.machine)
            & (tables.benchmark == cell.benchmark)
            & (tables.section == section)
            & (tables.config == config)
        ]

    def whole_perf_per_watt(config: str) -> float:
        gmean = rows("ratio", config)
        gmean = gmean[gmean.stat == "Gmean"]
        if cell.metric is not None:
            gmean = gmean[gmean.metric == cell.metric]
        power = rows("turbostat", config)
        power = power[(power.stat == "Amean") & (power.op == "PkgWatt")]
        if len(gmean) != 1 or len(power) != 1:
            return math.nan
        ratio = float(gmean.value.iloc[0])
        perf = ratio if gmean.op.iloc[0] == "Higher" else 1.0 / ratio
        return perf / float(power.value.iloc[0])

    def lookup(config: str) -> float:
        if cell.section == "perf-per-watt-whole":
            return whole_perf_per_watt(config)
        t = rows(cell.section, config)
        if cell.metric is not None:
            t = t[t.metric == cell.metric]
        if cell.section in ("ratio", "perf-per-watt"):
            t = t[t.stat == "Gmean"]
        elif cell.section == "turbostat":
            t = t[(t.stat == "Amean") & (t.op == cell.op)]
        elif cell.section == "select-profile":
            t = t[(t.stat == "Avg") & (t.op == cell.op)]
        elif cell.section == "specpower-score":
            t = t[(t.stat == "Score") & (t.op == cell.op)]
        else:
            t = t[t.stat.isin(["Hmean", "Amean"]) & (t.op == cell.op)]
        if len(t) != 1:
            return math.nan
        return float(t.value.iloc[0])

    if cell.baseline is None:
        return lookup(cell.config)
    return lookup(cell.config) / lookup(cell.baseline)


# ---- running ------------------------------------------------------------------------------


def load_experiment(path: Path, quick: bool):
    from schedsim.experiment import Experiment

    text = path.read_text(encoding="utf-8")
    data = tomllib.loads(text)
    if quick:
        data = copy.deepcopy(data)
        keep = data["experiment"]["name"] in QUICK_KEEP_REPEATS
        if not keep:
            data["experiment"]["repeats"] = QUICK_REPEATS
        for bench in data.get("benchmark", []):
            if not keep and "repeats" in bench:
                bench["repeats"] = min(bench["repeats"], QUICK_REPEATS)
            if bench["workload"] in QUICK_DURATION:
                duration, warmup = QUICK_DURATION[bench["workload"]]
                bench["duration"] = duration
                bench.setdefault("params", {})["warmup_s"] = warmup
    return Experiment.from_dict(data, origin=str(path), base_dir=path.parent, text=text)


def run_experiment(path: Path, quick: bool, jobs: int | None, out_root: Path):
    exp = load_experiment(path, quick)
    out = out_root / exp.name
    t0 = time.monotonic()
    result = exp.run(jobs=jobs, out=out, progress=sys.stderr.isatty())
    wall = time.monotonic() - t0
    result.write(out)
    # The wall time of the invocation that executed the runs, kept next to them so that a
    # rescoring run (everything loaded) still reports what the study cost.
    timing = out / "validate-wall.json"
    if result.executed:
        timing.write_text(json.dumps({"wall_s": wall, "executed": result.executed}) + "\n")
    elif timing.is_file():
        wall = json.loads(timing.read_text())["wall_s"]
    print(
        f"{exp.name}: {result.executed} runs executed, {result.loaded} loaded, {wall:.0f} s",
        file=sys.stderr,
    )
    return exp, result, wall


# ---- report -------------------------------------------------------------------------------


def _fmt(x: float, digits: int = 2) -> str:
    return "-" if math.isnan(x) else f"{x:.{digits}f}"


def render_markdown(
    seeds: dict[str, tuple[dict[str, Any], list[Cell]]],
    studies: list[dict[str, Any]],
    quick: bool,
    notes: str = "",
    goals: list[Target] | None = None,
) -> str:
    """docs/validation.md: headlines per seed and overall, the study's cost and sizes, then
    every cell."""
    all_cells = [c for _, cells in seeds.values() for c in cells]
    lines = [
        "# Validation against the seeds' published results",
        "",
        "Generated by `scripts/validate.py"
        + (" --quick" if quick else "")
        + "` (`make validate` runs the full size). Every published cell transcribed in "
        "`validation/seedNNN.toml` is compared with the same cell of the simulated study. "
        f"Direction: `better`, `worse` or `~` (within {NEUTRAL_BAND:.0%} of 1.00, the seeds' "
        "tilde) for ratios new/baseline; error = |simulated - published| of the ratio. "
        "Absolute baseline values (the baseline's MB/s, seconds and package watts, to which the "
        "presets' power and speed models were calibrated) are shown but not scored.",
        "",
        "## Headline",
        "",
        "| seed | cells scored | direction agrees | median ratio error |",
        "|---|---:|---:|---:|",
    ]
    for sid, (_, cells) in seeds.items():
        h = score(cells)
        lines.append(_headline_row(f"seed{sid}", h))
        if sid in PERFORMANCE_TABLES:
            label = f"seed{sid}, performance tables ({', '.join(PERFORMANCE_TABLES[sid])})"
            lines.append(_headline_row(label, score(performance_cells(sid, cells))))
    lines.append(_headline_row("overall", score(all_cells)))
    missing = [c for c in all_cells if c.scored and math.isnan(c.simulated)]
    if missing:
        lines += ["", f"{len(missing)} published cells have no simulated value yet (see below)."]
    if goals:
        lines += render_targets(goals)
    if "000" in seeds:
        lines += render_misses(performance_cells("000", seeds["000"][1]))
    lines += ["", "## The study", ""]
    run_s = sum(s["run_s"] for s in studies)
    lines.append(
        f"The simulations took {run_s / 60:.1f} min of simulator time in all (the sum of every "
        f"run's own wall time), i.e. about {run_s / 120:.1f} min on this machine's 2 cores "
        "when nothing else runs. `wall` below is the wall-clock time of the invocation that "
        "executed the runs (recorded next to the stored runs under out/), on this machine "
        "while other work shared it."
    )
    lines += [
        "",
        "| experiment | runs | executed | wall (s) | simulator (s) | repeats | sizes |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    for s in studies:
        lines.append(
            f"| {s['name']} | {s['runs']} | {s['executed']} | {s['wall_s']:.0f} "
            f"| {s['run_s']:.0f} | {s['repeats']} | {s['sizes']} |"
        )
    cv_rows = [(s["name"], bench, cv) for s in studies for bench, cv in s["coeffvar"].items()]
    if cv_rows:
        lines += [
            "",
            "Convergence: the CoeffVar (%) of each point's samples of the benchmark's first "
            "metric (every config and swept value; MMTests' HCoeffVar for rates). A point's "
            "samples are its repeats, which differ in their seed (placement, job lengths, "
            "statement times, timer phases), or, for a benchmark run once per point, its "
            "primary metric over the five equal windows of the run's measured interval "
            "(`primary_windows` in the run's result), whose spread shows whether the run is "
            "long enough for its mean. Small values mean a converged mean: the standard error "
            "of the mean is about CoeffVar / sqrt(samples). A fixed-work benchmark run once "
            "has neither (gitsource: the experiment files give its CoeffVar over three seeds).",
            "",
            "| experiment | benchmark | points | samples per point | median CoeffVar % "
            "| max CoeffVar % |",
            "|---|---|---:|---|---:|---:|",
        ]
        for name, bench, cv in cv_rows:
            if cv.basis == "one run":
                lines.append(f"| {name} | {bench} | {cv.points} | one run | - | - |")
                continue
            per_point = f"{cv.samples} {cv.basis}"
            if cv.without:
                per_point += f" ({cv.without} without: a window in which no operation ended)"
            lines.append(
                f"| {name} | {bench} | {cv.points} | {per_point} | {cv.median:.2f} | {cv.max:.2f} |"
            )
    if notes:
        lines += ["", notes.strip()]
    for sid, (seed, cells) in seeds.items():
        lines += ["", f"## seed {sid}: {seed.get('title', '')}", ""]
        lines.append(
            f"Published values: `{seed.get('file', '')}`, transcribed in "
            f"`validation/seed{sid}.toml`."
        )
        tables: dict[tuple[str, str], list[Cell]] = {}
        for c in cells:
            tables.setdefault((c.table, c.machine), []).append(c)
        for (name, machine), tcells in tables.items():
            h = score(tcells)
            head = (
                f"{h['cells']} scored, direction agrees {h['direction_agree']:.0%}, "
                f"median error {h['median_ratio_error']:.3f}"
                if h["cells"]
                else "not simulated"
            )
            lines += [
                "",
                f"### {name}: {machine}",
                "",
                head,
                "",
                "| benchmark | op | config | published | simulated | direction (pub/sim) "
                "| agree | error |",
                "|---|---|---|---:|---:|---|---|---:|",
            ]
            for c in tcells:
                if c.scored:
                    agree = {True: "yes", False: "**no**", None: "-"}[c.agree]
                    lines.append(
                        f"| {c.benchmark} | {c.op} | {c.config} | {_fmt(c.published)} "
                        f"| {_fmt(c.simulated)} | {c.pub_dir} / {c.sim_dir} | {agree} "
                        f"| {_fmt(c.error, 3)} |"
                    )
                else:
                    lines.append(
                        f"| {c.benchmark} | {c.op} | {c.config} (absolute) "
                        f"| {_fmt(c.published)} | {_fmt(c.simulated)} | not scored | | |"
                    )
    return "\n".join(lines) + "\n"


def miss_summary(cells: list[Cell]) -> list[tuple[str, str, int, int, int, int, int]]:
    """Per benchmark and machine of `cells`: (benchmark, machine, cells scored, misses, changes
    the model lacks (published better or worse, simulated ~), changes it adds (published ~),
    opposite directions), benchmarks in the order they first appear."""
    rows: dict[tuple[str, str], list[int]] = {}
    for c in cells:
        if not c.scored or math.isnan(c.simulated):
            continue
        r = rows.setdefault((c.benchmark, c.machine), [0, 0, 0, 0, 0])
        r[0] += 1
        if c.agree:
            continue
        r[1] += 1
        if c.sim_dir == "~":
            r[2] += 1
        elif c.pub_dir == "~":
            r[3] += 1
        else:
            r[4] += 1
    order = list(dict.fromkeys(b for b, _ in rows))
    return [(b, m, *r) for (b, m), r in sorted(rows.items(), key=lambda kv: order.index(kv[0][0]))]


def render_misses(cells: list[Cell]) -> list[str]:
    """The misses of seed 000's performance tables, counted per benchmark and kind."""
    rows = miss_summary(cells)
    if not rows:
        return []
    lines = [
        "",
        "### Misses of seed 000's performance tables, by benchmark",
        "",
        "A miss is a cell whose simulated direction differs from the published one: a change "
        "(gain or loss) the model lacks (simulated `~`, published not), one it adds (published "
        "`~`, simulated not), or the opposite direction.",
        "",
        "| benchmark | machine | cells | misses | change lacking | change added | opposite |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    lines += [
        f"| {b} | {mach} | {n} | {m} | {lack} | {add} | {opp} |"
        for b, mach, n, m, lack, add, opp in rows
    ]
    return lines


def render_targets(goals: list[Target]) -> list[str]:
    """The section that lists the targets and whether the study shows them."""
    held = sum(t.held is True for t in goals)
    lines = [
        "",
        "## Targets",
        "",
        "The effects the seeds report that the study must reproduce, and the agreement asked "
        f"of seed 000's performance tables, judged on the simulated cells below: {held} of "
        f"{len(goals)} hold. Evidence: simulated (published) ratios new/baseline; for the "
        "fixed-work benchmarks (gitsource, kernbench) the ratio of times, lower is faster. "
        "Where a target fails, the analysis below names the cells and the suspected mechanism.",
        "",
        "| target | holds | evidence |",
        "|---|---|---|",
    ]
    for t in goals:
        mark = {True: "yes", False: "**no**", None: "-"}[t.held]
        lines.append(f"| {t.name} | {mark} | {t.evidence} |")
    return lines


@dataclass
class Convergence:
    """How well the points of one benchmark converged: the CoeffVar (%) of each point's samples
    (its repeats, or with one repeat the run's `primary_windows`), summarised."""

    points: int
    samples: int  # per point
    basis: str  # "repeats", "windows" or "one run"
    median: float = math.nan
    max: float = math.nan
    without: int = 0  # points run once with no windows (a window in which nothing completed)


def _coeffvar(exp: Any, result: Any) -> dict[str, Convergence]:
    """Per benchmark, the CoeffVar of its first metric at every (config, swept value): MMTests'
    CoeffVar of the repeats when there are several (HCoeffVar for rates), else that of the
    single run's primary metric over the equal windows of its measured interval
    (`primary_windows`), else nothing (a fixed-work benchmark run once)."""
    from schedsim.compare import metric_samples
    from schedsim.report import stats as st

    out: dict[str, Convergence] = {}
    for b in exp.benchmarks:
        metric = b.metrics[0]
        kind = "hmean" if metric.higher_is_better else "amean"
        points: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
        for spec in exp.specs:
            if spec.benchmark == b.name:
                key = (spec.machine, spec.config, spec.op)
                points.setdefault(key, []).append(result.results[spec.key])
        if not points:
            continue
        runs = max(len(r) for r in points.values())
        if runs > 1:
            samples = [
                [x for r in rs for x in metric_samples(r, metric.name)] for rs in points.values()
            ]
            basis = "repeats"
        else:
            windows = [list(rs[0].get("primary_windows") or []) for rs in points.values()]
            samples = [xs for xs in windows if len(xs) >= 2]
            basis = "windows"
            if not samples:
                out[b.name] = Convergence(len(points), 1, "one run")
                continue
        cvs = [st.coeffvar(xs, kind) for xs in samples]
        out[b.name] = Convergence(
            len(points),
            max(len(xs) for xs in samples),
            basis,
            statistics.median(cvs),
            max(cvs),
            without=len(points) - len(samples),
        )
    return out


def _headline_row(label: str, h: dict[str, Any]) -> str:
    if not h["cells"]:
        return f"| {label} | 0 | - | - |"
    return (
        f"| {label} | {h['cells']} | {h['direction_agree']:.1%} | {h['median_ratio_error']:.4f} |"
    )


def is_performance_table(sid: str, table: str) -> bool:
    """Whether `table` is one of seed `sid`'s performance tables (PERFORMANCE_TABLES)."""
    return table.startswith(PERFORMANCE_TABLES.get(sid, ()))


def performance_cells(sid: str, cells: list[Cell]) -> list[Cell]:
    """The cells of a seed's performance tables (PERFORMANCE_TABLES), power and perf-per-watt
    left out."""
    return [c for c in cells if is_performance_table(sid, c.table)]


def headline_json(
    seeds: dict[str, tuple[dict[str, Any], list[Cell]]], goals: list[Target] | None = None
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for sid, (_, cells) in seeds.items():
        out[f"seed{sid}"] = score(cells)
        if sid in PERFORMANCE_TABLES:
            out[f"seed{sid}_performance"] = score(performance_cells(sid, cells))
    out["overall"] = score([c for _, cells in seeds.values() for c in cells])
    if goals:
        out["targets"] = [{"target": t.name, "holds": t.held} for t in goals]
    return out


def machine_cpus(seeds: dict[str, tuple[dict[str, Any], list[Cell]]]) -> dict[str, int]:
    """CPU count of every machine preset the cells name (the tbench targets split clients by
    it); a name that is not a preset is left out, and its targets stay undecided."""
    from schedsim.errors import ConfigError
    from schedsim.machines import load_machine

    out = {}
    for m in sorted({c.machine for _, cells in seeds.values() for c in cells}):
        try:
            out[m] = load_machine(m).ncpus
        except ConfigError:
            continue
    return out


def _sizes(exp: Any) -> str:
    parts = []
    for b in exp.benchmarks:
        vals = b.values(exp.machines[0].name)
        sweep = f"{b.param} {vals[0]}..{vals[-1]} ({len(vals)})" if b.param else "once"
        dur = f", {b.duration_ns / 1e9:g} s" if b.duration_ns else ""
        reps = b.repeats(exp.repeats)
        rep = f", {reps} repeat{'s' if reps > 1 else ''}" if reps != exp.repeats else ""
        parts.append(f"{b.name}: {sweep}{dur}{rep}")
    return "; ".join(parts)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="one repeat, shorter tbench runs")
    ap.add_argument(
        "--seeds", default="000,001,002,003", help="seeds to validate (comma-separated)"
    )
    ap.add_argument("--machines", default="skylake,broadwell,haswell", help="seed 000's machines")
    ap.add_argument("--jobs", "-j", type=int, default=None)
    ap.add_argument("--run-only", action="store_true", help="run the experiments, do not score")
    ap.add_argument(
        "--notes",
        type=Path,
        default=ROOT / "validation/notes.md",
        help="markdown appended to the study section (the analysis of the misses)",
    )
    ap.add_argument("--md", type=Path, default=ROOT / "docs/validation.md")
    ap.add_argument("--json", type=Path, default=ROOT / "docs/validation.json")
    args = ap.parse_args(argv)
    out_root = ROOT / ("out/validate-quick" if args.quick else "out/validate")
    plan = {
        "000": [ROOT / f"experiments/seed000-{m}.toml" for m in args.machines.split(",")],
        "001": [ROOT / "experiments/cfs-bandwidth-interleave-41abdba9.toml"],
        "002": [ROOT / "experiments/eas-wakeup-eb92692b.toml"],
        "003": [ROOT / "experiments/hwp-boost-seed003.toml"],
    }
    seeds: dict[str, tuple[dict[str, Any], list[Cell]]] = {}
    studies = []
    for sid in args.seeds.split(","):
        files = [f for f in plan[sid] if f.is_file()]
        if not files:
            print(f"seed {sid}: no experiment file, skipped", file=sys.stderr)
            continue
        seed, cells = load_published(ROOT / f"validation/seed{sid}.toml")
        seeds[sid] = (seed, cells)
        for path in files:
            exp, result, wall = run_experiment(path, args.quick, args.jobs, out_root)
            studies.append(
                {
                    "name": exp.name,
                    "runs": len(exp.specs),
                    "executed": result.executed,
                    "wall_s": wall,
                    "run_s": float(result.runs["sim.wall_s"].sum()),
                    "repeats": exp.repeats,
                    "sizes": _sizes(exp),
                    "coeffvar": _coeffvar(exp, result),
                }
            )
            if args.run_only:
                continue
            tables = result.tables
            machines = {m.name for m in exp.machines}
            benches = {b.name for b in exp.benchmarks}
            for c in cells:
                if c.machine in machines and c.benchmark in benches:
                    c.simulated = simulated_value(tables, c)
    if args.run_only:
        return 0
    notes = args.notes.read_text(encoding="utf-8") if args.notes.is_file() else ""
    goals = targets(seeds, machine_cpus(seeds))
    args.md.write_text(render_markdown(seeds, studies, args.quick, notes, goals), encoding="utf-8")
    headline = headline_json(seeds, goals)
    args.json.write_text(json.dumps(headline, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(headline), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
