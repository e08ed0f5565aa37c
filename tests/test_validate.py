"""scripts/validate.py: direction classification, the neutral band, the headline numbers and
the parsing of the published-values files (no simulation)."""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _load():
    spec = importlib.util.spec_from_file_location("validate", ROOT / "scripts/validate.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["validate"] = mod
    spec.loader.exec_module(mod)
    return mod


v = _load()


@pytest.mark.parametrize(
    ("ratio", "higher", "expected"),
    [
        (1.30, True, "better"),
        (1.30, False, "worse"),
        (0.49, False, "better"),
        (0.49, True, "worse"),
        (1.00, True, "~"),
        (1.02, True, "~"),  # the band's edge is neutral
        (0.98, False, "~"),
        (1.021, True, "better"),
        (0.979, True, "worse"),
        (math.nan, True, "?"),
    ],
)
def test_direction(ratio, higher, expected):
    assert v.direction(ratio, higher) == expected


def _cell(published, simulated, higher=True, kind="ratio"):
    return v.Cell(
        table="t",
        machine="m",
        benchmark="b",
        op="Gmean",
        config="c",
        published=published,
        higher_is_better=higher,
        kind=kind,
        simulated=simulated,
    )


def test_score_hand_computed():
    cells = [
        _cell(1.30, 1.25),  # better/better, error 0.05
        _cell(1.00, 1.015),  # ~/~, error 0.015
        _cell(0.83, 0.95, higher=False),  # lower is better: both better, error 0.12
        _cell(1.14, 0.97),  # better/worse: disagree, error 0.17
        _cell(1.00, math.nan),  # not simulated: left out
        _cell(142.32, 150.0, kind="abs"),  # absolute baseline: shown, not scored
    ]
    h = v.score(cells)
    assert h["cells"] == 4
    assert h["direction_agree"] == pytest.approx(0.75)
    # errors 0.015, 0.05, 0.12, 0.17 -> median (0.05 + 0.12) / 2
    assert h["median_ratio_error"] == pytest.approx(0.085)
    assert [c.agree for c in cells] == [True, True, True, False, None, None]


def test_seed000_headline_has_a_row_for_its_performance_tables():
    # the target counts the 5.3.2 and 5.3.3 tables; power and perf-per-watt apart
    cells = [_cell(1.30, 1.25), _cell(1.14, 0.97), _cell(1.10, 1.20), _cell(1.00, 1.30)]
    tables = ["5.3.2 ratio", "5.3.3 tbench4", "5.3.4 power", "5.3.4 ppw"]
    for c, table in zip(cells, tables, strict=True):
        c.table = table
    h = v.headline_json({"000": ({}, cells)})
    assert h["seed000"]["cells"] == 4 and h["seed000"]["direction_agree"] == pytest.approx(0.5)
    perf = h["seed000_performance"]
    assert perf["cells"] == 2 and perf["direction_agree"] == pytest.approx(0.5)
    assert perf["median_ratio_error"] == pytest.approx((0.05 + 0.17) / 2)


def test_score_empty():
    assert v.score([_cell(1.0, math.nan)]) == {
        "cells": 0,
        "direction_agree": None,
        "median_ratio_error": None,
    }


def test_parse_tables(tmp_path):
    p = tmp_path / "seed.toml"
    p.write_text(
        """
[seed]
id = "999"
file = "x.txt"

[[table]]
name = "ratios"
machine = "m1"
section = "ratio"
kind = "ratio"
higher_is_better = false
configs = ["a", "b"]
rows = [["kernbench", "Gmean", "~", 0.83]]

[[table]]
name = "abs"
machine = "m1"
section = "metric"
kind = "absolute"
higher_is_better = true
configs = ["base", "new"]
rows = [["tbench4", "clients-1", 126.73, 315.91]]
""",
        encoding="utf-8",
    )
    seed, cells = v.load_published(p)
    assert seed["id"] == "999"
    assert [(c.config, c.published, c.kind) for c in cells[:2]] == [
        ("a", 1.0, "ratio"),
        ("b", 0.83, "ratio"),
    ]
    base, new = cells[2:]
    assert (base.kind, base.published, base.scored) == ("abs", 126.73, False)
    assert new.baseline == "base"
    assert new.published == pytest.approx(315.91 / 126.73)
    assert new.scored and new.higher_is_better


def test_parse_rejects_ragged_rows(tmp_path):
    p = tmp_path / "seed.toml"
    p.write_text(
        '[seed]\nid = "1"\n[[table]]\nname = "t"\nmachine = "m"\nsection = "ratio"\n'
        'kind = "ratio"\nhigher_is_better = true\nconfigs = ["a", "b"]\n'
        'rows = [["x", "Gmean", 1.0]]\n',
        encoding="utf-8",
    )
    with pytest.raises(ValueError, match="1 values for 2 configs"):
        v.load_published(p)


def test_seed000_file():
    seed, cells = v.load_published(ROOT / "validation/seed000.toml")
    assert seed["id"] == "000"
    by = {(c.table, c.machine, c.benchmark, c.op, c.config): c for c in cells}
    # spot checks against the seed text
    assert (
        by[
            ("5.3.2 ratio, lower is better", "broadwell-80x", "gitsource", "Gmean", "sugov-turbo4")
        ].published
        == 0.49
    )
    k = by[("5.3.3 kernbench Amean s", "broadwell-80x", "kernbench", "jobs-2", "sugov-turbo4")]
    assert k.published == pytest.approx(283.96 / 379.68)
    assert not k.higher_is_better
    assert all(c.machine in ("skylake-8x", "broadwell-80x", "haswell-48x") for c in cells)
    # the rows of every benchmark in the summary tables, e.g. dbench4 and netperf-udp
    d = by[("5.3.2 ratio, lower is better", "broadwell-80x", "dbench4", "Gmean", "pstate")]
    assert d.published == 1.23 and not d.higher_is_better
    u = by[("5.3.2 ratio, higher is better", "haswell-48x", "netperf-udp", "Gmean", "sugov-turbo1")]
    assert u.published == 0.97 and u.higher_is_better
    w = by[("5.3.4 package power W", "broadwell-80x", "pgbench-rw", "PkgWatt", "pstate")]
    assert w.published == pytest.approx(60.83 / 68.30)
    # absolute baselines, shown and not scored: tbench 9 + kernbench 8 + gitsource 1 detail
    # rows, and 8 benchmarks' package watts on each of the 3 machines
    assert sum(c.kind == "abs" for c in cells) == 9 + 8 + 1 + 3 * 8


def _tables(rows):
    """An ExperimentResult.tables-like frame of (machine, benchmark, section, stat, op, config,
    value) rows; `metric` is unset, as for a benchmark with one metric."""
    pd = pytest.importorskip("pandas")
    cols = ["machine", "benchmark", "section", "stat", "op", "config", "value"]
    return pd.DataFrame(rows, columns=cols).assign(metric=None)


def test_simulated_value_lookup():
    tables = _tables(
        [
            ("m", "b", "ratio", "Gmean", "Higher", "new", 1.2),
            ("m", "b", "metric", "Hmean", "clients-1", "base", 100.0),
            ("m", "b", "metric", "Hmean", "clients-1", "new", 150.0),
            ("m", "b", "turbostat", "Amean", "PkgWatt", "base", 40.0),
            ("m", "b", "turbostat", "Amean", "PkgWatt", "new", 50.0),
        ]
    )
    c = _cell(1.3, math.nan)
    c.benchmark, c.config = "b", "new"
    assert v.simulated_value(tables, c) == pytest.approx(1.2)
    c.section, c.op, c.baseline = "metric", "clients-1", "base"
    assert v.simulated_value(tables, c) == pytest.approx(1.5)
    c.section, c.op = "turbostat", "PkgWatt"
    assert v.simulated_value(tables, c) == pytest.approx(1.25)
    c.op = "missing"
    assert math.isnan(v.simulated_value(tables, c))
    # SPECpower's score: the Score row of the specpower-score table, new over baseline
    tables = _tables(
        [
            ("m", "sp", "specpower-score", "Score", "ssj_ops/W", "base", 7378.0),
            ("m", "sp", "specpower-score", "Score", "ssj_ops/W", "new", 7382.0),
        ]
    )
    c = _cell(1.0, math.nan)
    c.benchmark, c.config, c.section, c.op, c.baseline = (
        "sp",
        "new",
        "specpower-score",
        "ssj_ops/W",
        "base",
    )
    assert v.simulated_value(tables, c) == pytest.approx(7382 / 7378)


def test_whole_benchmark_perf_per_watt_is_the_seeds_quotient():
    # seed 000 5.3.4, broadwell-80x: kernbench 1C took 0.83 of the baseline's time at
    # 114.91 W against 92.94 W, printed 0.97 = (1 / 0.83) / (114.91 / 92.94); tbench4
    # intel_pstate did 1.57x the throughput at 176.73 W, printed 1.26.
    tables = _tables(
        [
            ("m", "kernbench", "ratio", "Gmean", "Lower", "base", 1.0),
            ("m", "kernbench", "ratio", "Gmean", "Lower", "1C", 0.83),
            ("m", "kernbench", "turbostat", "Amean", "PkgWatt", "base", 92.94),
            ("m", "kernbench", "turbostat", "Amean", "PkgWatt", "1C", 114.91),
            ("m", "tbench4", "ratio", "Gmean", "Higher", "base", 1.0),
            ("m", "tbench4", "ratio", "Gmean", "Higher", "pstate", 1.57),
            ("m", "tbench4", "turbostat", "Amean", "PkgWatt", "base", 142.32),
            ("m", "tbench4", "turbostat", "Amean", "PkgWatt", "pstate", 176.73),
        ]
    )
    c = _cell(0.97, math.nan)
    c.benchmark, c.config, c.section, c.baseline = "kernbench", "1C", "perf-per-watt-whole", "base"
    assert v.simulated_value(tables, c) == pytest.approx(0.974, abs=5e-4)
    c.benchmark, c.config = "tbench4", "pstate"
    assert v.simulated_value(tables, c) == pytest.approx(1.264, abs=5e-4)
    c.config = "missing"
    assert math.isnan(v.simulated_value(tables, c))


def test_seed000_perf_per_watt_tables_name_their_baseline(tmp_path):
    _, cells = v.load_published(ROOT / "validation/seed000.toml")
    ppw = [c for c in cells if c.section == "perf-per-watt-whole"]
    assert len(ppw) == 8 * 5 + 8 * 4 + 8 * 5
    assert {c.baseline for c in ppw} == {"sugov-noninv"}
    bad = tmp_path / "bad.toml"
    bad.write_text(
        '[seed]\nid = "x"\n[[table]]\nname = "t"\nmachine = "m"\n'
        'section = "perf-per-watt-whole"\nkind = "ratio"\nhigher_is_better = true\n'
        'configs = ["a"]\nrows = [["b", "Gmean", 1.0]]\n'
    )
    with pytest.raises(ValueError, match="baseline"):
        v.load_published(bad)


# seed 003: every published figure is an improvement in % of a rate metric, so the transcribed
# ratio is 1 + p / 100 (validation/seed003.toml's header); hand-computed from the cover letter.
SEED003_RATIOS = {
    # benchmark: (metric, published %, ratio)
    "dbench4": ("throughput_mb_s", 50.36, 1.5036),
    "tiobench": ("throughput_mib_s", 10.35, 1.1035),
    "fio": ("iops", 9.81, 1.0981),
    "sqlite": ("txn_per_s", 15.76, 1.1576),
    "x264": ("fps", 9.75, 1.0975),
}


def test_seed003_file():
    seed, cells = v.load_published(ROOT / "validation/seed003.toml")
    assert seed["id"] == "003"
    assert all(c.machine == "skylake-sp-104" and c.config == "hwp-boost" for c in cells)
    assert all(c.scored for c in cells)  # no absolute baselines: the letter gives only %
    by = {c.benchmark: c for c in cells}
    assert set(by) == set(SEED003_RATIOS) | {"specpower", "idle"}
    for bench, (metric, pct, ratio) in SEED003_RATIOS.items():
        c = by[bench]
        assert c.published == pytest.approx(ratio, abs=1e-12)
        assert c.published == pytest.approx(1 + pct / 100, abs=1e-12)
        assert (c.section, c.metric, c.op, c.higher_is_better) == ("ratio", metric, "Gmean", True)
        assert c.pub_dir == "better"
    # read as a time, the same x264 speed-up would be the lower-is-better ratio 1 / 1.0975
    assert 1 / by["x264"].published == pytest.approx(0.911162, abs=1e-6)
    # "negligible" SpecPower (7382 vs 7378, order not stated) and unchanged idle power: "~"
    assert v.direction(7378 / 7382, True) == v.direction(7382 / 7378, True) == "~"
    spec, idle = by["specpower"], by["idle"]
    assert (spec.published, spec.higher_is_better, spec.pub_dir) == (1.0, True, "~")
    assert (idle.published, idle.higher_is_better, idle.pub_dir) == (1.0, False, "~")
    assert (idle.section, idle.metric) == ("power", "avg_package_w")
    # both are ratios the simulation gives as two absolute values, divided by the baseline's
    assert (spec.section, spec.op) == ("specpower-score", "ssj_ops/W")
    assert spec.baseline == idle.baseline == "hwp"


def test_seed003_experiment_parses():
    from schedsim.experiment import Experiment

    exp = Experiment.from_toml(ROOT / "experiments/hwp-boost-seed003.toml")
    assert exp.name in v.QUICK_KEEP_REPEATS
    assert [m.name for m in exp.machines] == ["skylake-sp-104"]
    assert [c.name for c in exp.configs] == ["hwp", "hwp-boost"]  # the first is the baseline
    for c, boost in zip(exp.configs, (0, 1), strict=True):
        e = c.entry
        assert (e.kernel, e.driver, e.governor) == ("4.19", "intel_pstate", "powersave")
        assert e.tunables == {"intel_pstate.hwp_dynamic_boost": boost}
    benches = {b.name: b for b in exp.benchmarks}
    assert benches["dbench4"].values("skylake-sp-104") == [1]
    assert benches["tiobench"].params == {"threads": 16}
    assert len(benches["tiobench"].values("skylake-sp-104")) == 4  # the four tiobench phases
    assert benches["fio"].params == {"jobs": 4, "rw": "randread", "bs_kb": 4}
    assert benches["x264"].params["threads"] == 104
    # every simulated cell of validation/seed003.toml names a benchmark and a metric it tabulates
    _, cells = v.load_published(ROOT / "validation/seed003.toml")
    for c in cells:
        if c.section == "ratio":
            assert c.metric in [m.name for m in benches[c.benchmark].metrics]
        elif c.section == "power":
            assert c.metric == "avg_package_w" and c.benchmark in benches
        else:
            assert (c.section, c.benchmark) == ("specpower-score", "specpower")
    # SpecPower: the score of a load_pct sweep with active idle; idle power: ssj's active idle
    spec, idle = benches["specpower"], benches["idle"]
    assert (spec.workload, spec.param) == ("specpower", "load_pct")
    assert spec.values("skylake-sp-104") == [100, 90, 80, 70, 60, 50, 40, 30, 20, 10, 0]
    assert (idle.workload, idle.params["load_pct"]) == ("specpower", 0)
    # both configs of a point share its seed (common random numbers)
    seeds = {(s.benchmark, s.op, s.repeat): set() for s in exp.specs}
    for s in exp.specs:
        seeds[(s.benchmark, s.op, s.repeat)].add(s.seed)
    assert all(len(x) == 1 for x in seeds.values())


def _convergence_study(runs: dict[tuple[str, int], dict]):
    """A stub experiment (one benchmark, metric `tps`, higher is better) and its results: one
    spec per (op, repeat) of `runs`."""
    from types import SimpleNamespace as NS

    bench = NS(name="b", metrics=(NS(name="tps", higher_is_better=True),))
    specs = [
        NS(key=f"{op}/{rep}", benchmark="b", machine="m", config="c", op=op) for (op, rep) in runs
    ]
    results = {f"{op}/{rep}": r for (op, rep), r in runs.items()}
    return NS(benchmarks=[bench], specs=specs), NS(results=results)


def test_convergence_uses_the_repeats_or_the_single_runs_windows():
    # repeats: HCoeffVar of 1, 2, 4 = sqrt(Σ(1/x − 1/H)²·H⁴/n)·100/H with H = 12/7
    h = 12 / 7
    hcv = math.sqrt(sum((1 / x - 1 / h) ** 2 for x in (1, 2, 4)) * h**4 / 3) * 100 / h
    exp, res = _convergence_study(
        {("a", r): {"metrics": {"tps": x}} for r, x in enumerate((1.0, 2.0, 4.0))}
        | {("b", r): {"metrics": {"tps": 5.0}} for r in range(3)}
    )
    cv = v._coeffvar(exp, res)["b"]
    assert (cv.points, cv.samples, cv.basis) == (2, 3, "repeats")
    assert cv.max == pytest.approx(hcv)
    assert cv.median == pytest.approx(hcv / 2)
    # one run per point: its five windows (the windows' mean need not be the metric)
    exp, res = _convergence_study(
        {("a", 0): {"metrics": {"tps": 2.0}, "primary_windows": [1.0, 2.0, 4.0, 2.0, 2.0]}}
    )
    cv = v._coeffvar(exp, res)["b"]
    h5 = 5 / (1 + 0.5 + 0.25 + 0.5 + 0.5)
    hcv5 = math.sqrt(sum((1 / x - 1 / h5) ** 2 for x in (1, 2, 4, 2, 2)) * h5**4 / 5) * 100 / h5
    assert (cv.points, cv.samples, cv.basis) == (1, 5, "windows")
    assert cv.max == pytest.approx(hcv5)
    # a point whose run has no windows (nothing ended in one of them) is counted apart
    exp, res = _convergence_study(
        {("a", 0): {"metrics": {"tps": 2.0}, "primary_windows": [2.0, 2.0, 2.0, 2.0, 2.0]}}
        | {("b", 0): {"metrics": {"tps": 2.0}}}
    )
    cv = v._coeffvar(exp, res)["b"]
    assert (cv.points, cv.basis, cv.without, cv.max) == (2, "windows", 1, 0.0)
    # a fixed-work benchmark run once has neither
    exp, res = _convergence_study({("a", 0): {"metrics": {"tps": 2.0}}})
    cv = v._coeffvar(exp, res)["b"]
    assert cv.basis == "one run" and math.isnan(cv.median)


# ---- issue 9's targets ----------------------------------------------------------------------


def _c(table, machine, bench, op, config, published, simulated, higher=True, **kw):
    return v.Cell(
        table=table,
        machine=machine,
        benchmark=bench,
        op=op,
        config=config,
        published=published,
        higher_is_better=higher,
        simulated=simulated,
        **kw,
    )


def _by_name(goals):
    return {t.name: t for t in goals}


def test_gitsource_targets_saving_range_and_intel_pstate_between():
    lower = "5.3.2 ratio, lower is better"
    cells = [
        # machine a: invariant saves 0.40-0.45 (inside 0.30-0.52), intel_pstate 0.90 between
        _c(lower, "a", "gitsource", "Gmean", "pstate", 0.98, 0.90, higher=False),
        _c(lower, "a", "gitsource", "Gmean", "sugov-turbo1", 0.49, 0.60, higher=False),
        _c(lower, "a", "gitsource", "Gmean", "sugov-turbo4", 0.49, 0.55, higher=False),
        # machine b: invariant saves 0.65 (outside 0.30-0.52 even with the 0.02 band),
        # intel_pstate faster than it
        _c(lower, "b", "gitsource", "Gmean", "pstate", 0.92, 0.30, higher=False),
        _c(lower, "b", "gitsource", "Gmean", "sugov-turbo4", 0.55, 0.35, higher=False),
    ]
    saving, between = v._gitsource_targets(cells)
    assert saving.held is False and between.held is False
    assert "a: 0.55-0.60 of the baseline's time (0.49)" in saving.evidence
    assert "b: intel_pstate 0.30 (0.92), invariant 0.35" in between.evidence

    def held(b_invariant, b_pstate):
        cells[4].simulated, cells[3].simulated = b_invariant, b_pstate
        return [t.held for t in v._gitsource_targets(cells)]

    # the band's edges count: 0.46 saves 0.54, 0.72 saves 0.28; one step beyond fails
    assert held(0.46, 0.90) == [True, True]
    assert held(0.72, 0.90) == [True, True]
    assert held(0.45, 0.90) == [False, True]
    assert held(0.73, 0.90) == [False, True]
    # intel_pstate slower than the baseline is not "between"
    assert held(0.50, 1.05) == [True, False]
    # a machine with published cells and no simulated ones leaves both undecided
    cells[4].simulated = cells[3].simulated = math.nan
    saving, between = v._gitsource_targets(cells)
    assert saving.held is None and between.held is None and "b" in saving.evidence


def test_kernbench_targets_low_jobs_saturation_and_regressions():
    detail = "5.3.3 kernbench Amean s"
    ratios = {2: 0.72, 4: 0.70, 8: 0.80, 128: 0.86, 160: 0.90}
    cells = [
        _c(detail, "bw", "kernbench", f"jobs-{j}", "sugov-turbo4", 0.8, r, higher=False)
        for j, r in ratios.items()
    ]
    cells.append(_c("5.3.2 ratio, lower", "sk", "kernbench", "Gmean", "sugov-turbo1", 1.0, 1.03))
    cells[-1].higher_is_better = False
    low, saturated, regress = v._kernbench_targets(cells)
    # the largest gain (0.70) is at the second-lowest count: low holds
    assert low.held is True and "jobs-4 0.70 (0.80)" in low.evidence
    # 0.86 saves 0.14, 0.90 saves 0.10: both in 0.10-0.18
    assert saturated.held is True
    # skylake's Gmean 1.03 (lower is better) is a regression
    assert regress.held is False and "sk sugov-turbo1 Gmean 1.03 (1.00)" in regress.evidence
    # each of the two highest counts counts: 128 jobs saving 0.09 fails alone
    cells[3].simulated = 0.91
    assert v._kernbench_targets(cells)[1].held is False
    cells[3].simulated = 0.86
    cells[2].simulated = 0.60  # the largest gain moves to 8 jobs: not a low count
    assert v._kernbench_targets(cells)[0].held is False


def test_tbench_targets_split_clients_by_the_cpu_count():
    detail = "5.3.3 tbench4 Hmean MB/s"
    # 16 CPUs: 1-8 clients are low (2 x clients <= 16), 16 and 32 saturate
    sims = {1: 1.00, 2: 1.10, 4: 1.10, 8: 1.00, 16: 1.01, 32: 0.99}
    cells = [
        _c(detail, "h", "tbench4", f"clients-{n}", "sugov-turbo4", 1.2, r) for n, r in sims.items()
    ]
    low, saturated = v._tbench_targets(cells, {"h": 16})
    g = (1.0 * 1.1 * 1.1 * 1.0) ** 0.25  # 1.049: better
    assert low.held is True and f"Gmean {g:.2f} (1.20)" in low.evidence
    assert saturated.held is True and "0.99-1.01" in saturated.evidence
    cells[-1].simulated = 1.05  # a gain at 32 clients
    cells[1].simulated = cells[2].simulated = 1.01  # Gmean 1.005: neutral
    low, saturated = v._tbench_targets(cells, {"h": 16})
    assert low.held is False and saturated.held is False
    # a run that did no work gives no Gmean and fails the target instead of raising
    cells[0].simulated = 0.0
    assert v._tbench_targets(cells, {"h": 16})[0].held is False
    # without the machine's CPU count nothing is judged
    assert [t.held for t in v._tbench_targets(cells, {})] == [None, None]


def test_cgroup_and_eas_targets():
    metric = "stress-ng time (s)"
    time_ = _c(metric, "p10", "stress-ng-2cg", "elapsed_s", "inter", 0.82, 0.86, higher=False)
    power = _c("power", "p10", "stress-ng-2cg", "x", "inter", 1.13, 1.13, higher=False)
    time_.section, power.section = "metric", "power"
    (goal,) = v._cgroup_targets([time_, power])
    assert goal.held is True and goal.evidence == "time 0.86 (0.82), power 1.13 (1.13)"
    power.simulated = 1.01  # no higher power
    assert v._cgroup_targets([time_, power])[0].held is False
    power.simulated, time_.simulated = 1.13, 0.99  # not faster
    assert v._cgroup_targets([time_, power])[0].held is False
    eas = [
        _c("Test 1", "sdm845", "ramp", "cpu1", "percpu-v5.4", 0.33, 0.33, higher=False),
        _c("Test 2", "sdm845", "ramp", "cpu1", "cluster-v5.4", 0.70, 0.81, higher=False),
        _c("Test 1", "sdm845", "ramp", "cpu4", "percpu-v5.4", 0.69, 0.49, higher=False),
        _c("Test 2", "sdm845", "ramp", "cpu4", "cluster-v5.4", 1.21, 1.21, higher=False),
        _c("Test 1", "sdm845", "ramp", "cpu0", "percpu-v5.4", 0.37, math.nan, higher=False),
    ]
    (goal,) = v._eas_targets(eas)
    # Gmeans over cpu1 and cpu4: per-CPU sqrt(0.33 x 0.49) = 0.40, two policies
    # sqrt(0.81 x 1.21) = 0.99: two policies no cheaper (within the band)
    assert goal.held is False
    assert goal.evidence == (
        "cpu1, cpu4: Gmean per-CPU policies 0.40 (0.48), two policies 0.99 (0.92)"
    )
    eas[3].simulated = 1.10  # sqrt(0.81 x 1.10) = 0.94: cheaper, though cpu4 alone is worse
    assert v._eas_targets(eas)[0].held is True
    eas[0].simulated = eas[2].simulated = 0.97  # per-CPU no longer the cheaper
    assert v._eas_targets(eas)[0].held is False


def test_the_published_cells_meet_every_target():
    # A model that reproduced every published cell would meet every target: the rules read
    # the seeds as the seeds read themselves.
    seeds = {}
    for sid in ("000", "001", "002"):
        seed, cells = v.load_published(ROOT / f"validation/seed{sid}.toml")
        for c in cells:
            c.simulated = c.published
        seeds[sid] = (seed, cells)
    goals = v.targets(seeds, {"haswell-48x": 48, "broadwell-80x": 80, "skylake-8x": 8})
    assert len(goals) == 11
    assert [t.name for t in goals if not t.held] == []


def test_targets_without_simulated_cells_are_undecided_and_reach_the_json():
    cells = [_c("5.3.2 ratio", "a", "tbench4", "Gmean", "sugov-turbo4", 1.3, math.nan)]
    goals = v.targets({"000": ({}, cells)}, {"a": 8})
    assert goals and all(t.held is None for t in goals)
    h = v.headline_json({"000": ({}, cells)}, goals)
    assert [t["holds"] for t in h["targets"]] == [None] * len(goals)
    md = v.render_markdown({"000": ({}, cells)}, [], quick=False, goals=goals)
    assert "## Targets" in md and f"0 of {len(goals)} hold" in md


def test_miss_summary_counts_each_kind_per_benchmark_and_machine():
    cells = [
        _c("5.3.2", "a", "tbench4", "Gmean", "t1", 1.18, 1.01),  # gain lacking
        _c("5.3.2", "a", "tbench4", "Gmean", "t4", 1.30, 1.25),  # agrees
        _c("5.3.2", "b", "tbench4", "Gmean", "t4", 1.14, 1.00),  # gain lacking
        _c("5.3.2", "a", "pgbench-rw", "Gmean", "t4", 1.00, 1.05),  # gain added
        _c("5.3.2", "a", "netperf-udp", "Gmean", "t4", 1.06, 0.97),  # opposite
        _c("5.3.2", "a", "netperf-udp", "Gmean", "t1", 1.06, math.nan),  # not simulated
    ]
    assert v.miss_summary(cells) == [
        ("tbench4", "a", 2, 1, 1, 0, 0),
        ("tbench4", "b", 1, 1, 1, 0, 0),
        ("pgbench-rw", "a", 1, 1, 0, 1, 0),
        ("netperf-udp", "a", 1, 1, 0, 0, 1),
    ]
    md = "\n".join(v.render_misses(cells))
    assert "| pgbench-rw | a | 1 | 1 | 0 | 1 | 0 |" in md
