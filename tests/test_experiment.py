"""Experiment files: loading, the plan of runs, and errors that name the file, the key and the
allowed values (on the fake core's workload catalog)."""

from __future__ import annotations

import math
import textwrap
from pathlib import Path

import pytest

from schedsim import ConfigError, Experiment
from schedsim.experiment import MetricDef, run_seed
from schedsim.report import stats as st
from schedsim.sweep.stride import Topology, stride_range

BASE = textwrap.dedent(
    """
    [experiment]
    name = "t"
    repeats = 2
    seed = 5

    [[machine]]
    preset = "skylake-8x"

    [[config]]
    name = "base"
    kernel = "5.2"
    driver = "intel_cpufreq"
    governor = "schedutil"
    invariance = "none"

    [[config]]
    name = "new"
    kernel = "5.2"
    driver = "intel_cpufreq"
    governor = "schedutil"
    invariance = "turbo:4"

    [[benchmark]]
    workload = "periodic"
    param = "tasks"
    values = [1, 2]
    params = { duty_pct = 20 }
    duration = "200ms"
    """
)


def write(tmp_path: Path, text: str, name: str = "exp.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def load(tmp_path: Path, text: str) -> Experiment:
    return Experiment.from_toml(write(tmp_path, text))


def error(tmp_path: Path, text: str) -> str:
    with pytest.raises(ConfigError) as info:
        load(tmp_path, text)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(str(tmp_path / "exp.toml") + ": ")
    return message


def test_plan(fake_core, tmp_path) -> None:
    exp = load(tmp_path, BASE)
    assert exp.name == "t" and exp.repeats == 2 and exp.config_names == ["base", "new"]
    assert len(exp.specs) == 2 * 2 * 2  # configs x values x repeats
    spec = exp.specs[0]
    assert (spec.config, spec.op, spec.repeat) == ("base", "tasks-1", 1)
    cfg = spec.sim_config
    assert cfg["workload"] == {"name": "periodic", "params": {"duty_pct": 20, "tasks": 1}}
    assert cfg["cpufreq"] == {
        "governor": "schedutil",
        "driver": "intel_cpufreq",
        "invariance": "none",
    }
    assert cfg["kernel"]["version"] == "5.2"
    assert cfg["duration_ns"] == 200_000_000
    assert cfg["sample_interval_ns"] == 100_000_000  # the turbostat interval, default 100ms
    assert len({s.key for s in exp.specs}) == len(exp.specs)


def test_a_benchmark_can_set_its_own_repeats(fake_core, tmp_path) -> None:
    text = BASE.replace('duration = "200ms"', 'duration = "200ms"\nrepeats = 1', 1)
    text += textwrap.dedent(
        """
        [[benchmark]]
        workload = "periodic"
        name = "periodic-long"
        param = "tasks"
        values = [4]
        duration = "300ms"
        """
    )
    exp = load(tmp_path, text)
    runs = {}
    for s in exp.specs:
        runs.setdefault((s.benchmark, s.config, s.op), []).append(s.repeat)
    # the first benchmark overrides the experiment's 2 repeats; the second keeps them
    assert runs[("periodic", "base", "tasks-1")] == [1]
    assert runs[("periodic", "new", "tasks-2")] == [1]
    assert runs[("periodic-long", "base", "tasks-4")] == [1, 2]
    assert len(exp.specs) == 2 * 2 * 1 + 2 * 1 * 2
    message = error(tmp_path, BASE.replace('duration = "200ms"', 'duration = "200ms"\nrepeats = 0'))
    assert "benchmark[1] (periodic).repeats" in message


def test_seeds_are_derived_from_the_experiment_seed_and_the_point(fake_core, tmp_path) -> None:
    exp = load(tmp_path, BASE)
    seeds = {(s.config, s.op, s.repeat): s.seed for s in exp.specs}
    # configs share the seed of a point and repeat (common random numbers) ...
    assert seeds[("base", "tasks-1", 1)] == seeds[("new", "tasks-1", 1)]
    # ... repeats and points differ
    assert seeds[("base", "tasks-1", 1)] != seeds[("base", "tasks-1", 2)]
    assert seeds[("base", "tasks-1", 1)] != seeds[("base", "tasks-2", 1)]
    assert seeds[("base", "tasks-1", 1)] == run_seed(5, "skylake-8x", "periodic", 1, 1)
    assert all(s.sim_config["seed"] == s.seed for s in exp.specs)
    other = load(tmp_path, BASE.replace("seed = 5", "seed = 6"))
    assert {s.seed for s in other.specs}.isdisjoint(seeds.values())


def test_editing_a_config_changes_only_its_keys(fake_core, tmp_path) -> None:
    a = load(tmp_path, BASE)
    b = load(tmp_path, BASE.replace('invariance = "turbo:4"', 'invariance = "max"'))
    keys_a = {(s.config, s.op, s.repeat): s.key for s in a.specs}
    keys_b = {(s.config, s.op, s.repeat): s.key for s in b.specs}
    for k in keys_a:
        assert (keys_a[k] == keys_b[k]) == (k[0] == "base")


def test_config_keys_reach_the_sim_config(fake_core, tmp_path) -> None:
    text = BASE.replace(
        'invariance = "turbo:4"',
        'invariance = "turbo:4"\nhz = 1000\ntunables = { "schedutil.rate_limit_us" = 500 }\n'
        'features = { NEXT_BUDDY = true }\nmachine = { topology = { freq_domain = "core" } }',
    )
    exp = load(tmp_path, text)
    new = next(s for s in exp.specs if s.config == "new")
    base = next(s for s in exp.specs if s.config == "base")
    assert new.sim_config["tunables"] == {"schedutil.rate_limit_us": 500}
    assert new.sim_config["kernel"]["features"] == {"NEXT_BUDDY": True}
    assert new.sim_config["kernel"]["hz"] == 1000
    # one frequency domain per core instead of one per package
    assert len(new.sim_config["machine"]["freq_domains"]) == 4
    assert len(base.sim_config["machine"]["freq_domains"]) == 1


def test_stride_values(fake_core, tmp_path) -> None:
    text = BASE.replace(
        "values = [1, 2]", 'stride = { pattern = "topology", min = 1, max = "cpus*2" }'
    )
    exp = load(tmp_path, text)
    bench = exp.benchmarks[0]
    # bin/generate-stride-range on 8 CPUs (SMT 2, one LLC, one node), MIN 1, MAX 16
    assert bench.values("skylake-8x") == [1, 2, 3, 5, 6, 8, 10, 13, 15, 16]
    text = BASE.replace("values = [1, 2]", 'stride = { pattern = "powertwo", min = 1, max = 12 }')
    assert load(tmp_path, text).benchmarks[0].values("skylake-8x") == [1, 2, 4, 8, 12]


def test_stride_ranges_by_hand() -> None:
    # 80 CPUs, SMT 2, 2 LLCs, 2 nodes (broadwell-80x), MIN 1 MAX 80 (bin/generate-stride-range):
    # 1→2 in strides of .2 (1, 2); 2→40 in 9.5 (2, 11, 21, 30, 40); 40→80 in 20 (40, 60, 80)
    topo = Topology(cpus=80, smt=2, llcs=2, nodes=2)
    assert stride_range("topology", 1, 80, topo) == [1, 2, 11, 21, 30, 40, 60, 80]
    assert stride_range("powertwo", 2, 40, topo) == [2, 4, 8, 16, 32, 40]
    assert stride_range("large", 1, 20, Topology(8, 2, 1, 1)) == [1, 3, 5, 7, 12, 18, 20]


def test_2019_pgbench_and_dbench_sweeps_by_hand() -> None:
    """The client counts seed 000's MMTests (2019) ran, worked out from its shell code."""
    skylake, broadwell, haswell = Topology(8, 2, 1, 1), Topology(80, 2, 2, 2), Topology(48, 2, 2, 2)
    # threads_huge_stride_begin 1 16: MAX >= 8, so `seq 1 3 8` (1 4 7), `seq 12 6 16` (12), 16
    assert stride_range("huge", 1, 16, skylake) == [1, 4, 7, 12, 16]
    # MAX >= 32: `seq 1 4 8` (1 5), `seq 12 9 32` (12 21 30), `seq 48 31 160` (48 79 110 141),
    # 160; pgbench-bench then rounds 5, 21, 79, 141 up to even counts for -j 2 (two nodes)
    assert stride_range("huge", 1, 160, broadwell) == [1, 5, 12, 21, 30, 48, 79, 110, 141, 160]
    assert stride_range("huge", 1, 160, broadwell, align="nodes") == [
        *(1, 6, 12, 22, 30, 48, 80, 110, 142, 160)
    ]
    assert stride_range("huge", 1, 96, haswell, align="nodes") == [1, 6, 12, 22, 30, 48, 80, 96]
    assert stride_range("huge", 1, 6, skylake) == [1, 3, 5, 6]
    # dbench-bench: double while below NUMCPUS, then x8, up to 8 x NUMCPUS
    assert stride_range("dbench-classic", 1, 64, skylake) == [1, 2, 4, 8, 64]
    assert stride_range("dbench-classic", 1, 640, broadwell) == [1, 2, 4, 8, 16, 32, 64, 128]
    assert stride_range("dbench-classic", 1, 384, haswell) == [1, 2, 4, 8, 16, 32, 64]
    assert stride_range("dbench-classic", 1, 100, broadwell, cutoff=20) == [1, 2, 4, 8, 16]


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (("[[benchmark]]", "[[benchmarks]]"), "unknown key 'benchmarks'; allowed: experiment, "),
        (('name = "new"', 'name = "new"\ngovenor = "x"'), "config[2] (new): unknown key "),
        (("repeats = 2", 'repeats = 2\nsignificance = "welch"'), "experiment.significance: "),
        (("repeats = 2", "repeats = 0"), "experiment.repeats: "),
        (('preset = "skylake-8x"', 'preset = "skylake"'), "machine[1] (skylake).preset: unknown"),
        (
            (
                'governor = "schedutil"\ninvariance = "none"',
                'governor = "sched"\ninvariance = "none"',
            ),
            "config[1] (base).governor: unknown governor 'sched' for driver intel_cpufreq; "
            "allowed: performance, powersave, schedutil, ondemand, conservative",
        ),
        (
            ('driver = "intel_cpufreq"', 'driver = "amd-pstate"'),
            "config[1] (base).driver: unknown driver 'amd-pstate' for machine 'skylake-8x'; "
            "allowed: intel_pstate, intel_cpufreq, acpi-cpufreq",
        ),
        (('"turbo:4"', '"turbo:9"'), "config[2] (new).invariance: invariance 'turbo:9'"),
        (('"turbo:4"', '"sideways"'), "allowed: none, turbo:N, base, max, amd-midpoint, cpufreq"),
        (
            ('kernel = "5.2"', "kernel = 5.10"),
            "config[1] (base).kernel: 5.1 is a TOML number: write the version as a string",
        ),
        (('kernel = "5.2"', 'kernel = "five"'), "config[1] (base).kernel: kernel 'five'"),
        (
            ("values = [1, 2]", "values = [1, 2]\nmetrics = []"),
            "benchmark[1] (periodic).metrics: empty; list at least one metric",
        ),
        (('name = "new"', 'name = "base"'), "config[2] (base).name: config name 'base' used twice"),
        (('[[config]]\nname = "new"', '[[config]]\nname = "new"\nhz = 99'), ".hz: 99 is not"),
        (
            ('workload = "periodic"', 'workload = "tbench"'),
            "benchmark[1] (tbench).workload: unknown workload 'tbench'; allowed: ftrace, "
            "hackbench, periodic",
        ),
        (
            ('param = "tasks"', 'param = "clients"'),
            "benchmark[1] (periodic).param: 'clients' is not a parameter of workload 'periodic'; "
            "allowed: tasks, period_ms, duty_pct",
        ),
        (
            ("params = { duty_pct = 20 }", "params = { duty = 20 }"),
            "benchmark[1] (periodic).params: unknown parameter 'duty' of workload 'periodic'; "
            "allowed: tasks, period_ms, duty_pct",
        ),
        (("values = [1, 2]\n", ""), "benchmark[1] (periodic).values: give either values"),
        (("values = [1, 2]", 'values = [1, "two"]'), "benchmark[1] (periodic).values: "),
        (("values = [1, 2]", "values = [1, 1]"), "values repeat: tasks-1, tasks-1"),
        (('duration = "200ms"', 'duration = "2 seconds"'), "benchmark[1] (periodic).duration: "),
        (('duration = "200ms"\n', ""), "workload 'periodic' is open-ended: give a duration"),
        (
            ('duration = "200ms"', 'duration = "200ms"\nmetrics = ["latency"]'),
            "benchmark[1] (periodic).metrics: workload 'periodic' reports no metric 'latency'; "
            "allowed: slack_us_p50, activations",
        ),
        (
            ('duration = "200ms"', 'duration = "200ms"\nmetrics = ["activations"]'),
            "benchmark[1] (periodic).prefer: metric 'activations': say whether higher or lower "
            "is better",
        ),
        (
            ('duration = "200ms"', 'duration = "200ms"\nsummarise = "Mean"'),
            "benchmark[1] (periodic).summarise: 'Mean' is not allowed; allowed: Multiops, "
            "Normalisedops, NormalisedLeftSkewops, Subselection",
        ),
        (
            ("values = [1, 2]", 'stride = { pattern = "topology", max = "ncpus" }'),
            "benchmark[1] (periodic).stride.max: 'ncpus': expected an integer or cpus, cpus*N",
        ),
        (
            ("values = [1, 2]", 'stride = { pattern = "fibonacci", max = 8 }'),
            "benchmark[1] (periodic).stride.pattern: 'fibonacci' is not allowed; allowed: "
            "topology, large, powertwo, huge, dbench-classic",
        ),
        (
            ("values = [1, 2]", 'stride = { pattern = "huge", max = 8, align = "llcs" }'),
            "benchmark[1] (periodic).stride.align: 'llcs' is not allowed; allowed: nodes",
        ),
    ],
)
def test_errors_name_file_key_and_allowed_values(
    fake_core, tmp_path, change: tuple[str, str], expected: str
) -> None:
    old, new = change
    assert old in BASE
    message = error(tmp_path, BASE.replace(old, new, 1))
    assert expected in message


def test_unknown_key_lists_the_allowed_keys(fake_core, tmp_path) -> None:
    message = error(tmp_path, BASE.replace('name = "new"', 'name = "new"\ngovenor = "x"'))
    assert message.endswith(
        "config[2] (new): unknown key 'govenor'; allowed: name, description, kernel, driver, "
        "governor, invariance, hz, tunables, features, machine, cgroups"
    )


def test_a_core_rejection_names_the_run(fake_core, tmp_path) -> None:
    fake_core.extra_workloads.append(
        {
            "name": "reject-me",
            "description": "",
            "params": [],
            "metrics": ["x"],
            "primary": "x",
            "higher_is_better": True,
            "open_ended": False,
        }
    )
    text = BASE.replace('workload = "periodic"', 'workload = "reject-me"')
    text = text.replace('param = "tasks"\nvalues = [1, 2]\nparams = { duty_pct = 20 }\n', "")
    exp = load(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        exp.run(jobs=1)
    assert str(info.value) == (
        f"{tmp_path / 'exp.toml'}: machine skylake-8x, config base, benchmark reject-me x, "
        "repeat 1: workload 'reject-me': rejected by the core"
    )


def test_per_task_metrics_instantiate_the_workloads_templates(fake_core, tmp_path) -> None:
    """`task.<TASK>.<METRIC>` stands for one task's share of a plain metric, whose direction it
    takes; an unknown metric inside the template is still an error."""
    fake_core.extra_workloads.append(
        {
            "name": "per-task",
            "description": "",
            "params": [],
            "metrics": [
                {"name": "lat_us", "higher_is_better": False},
                "rows",
                "task.<TASK>.<METRIC>",
            ],
            "primary": "lat_us",
            "higher_is_better": False,
            "open_ended": False,
        }
    )
    text = BASE.replace('workload = "periodic"', 'workload = "per-task"')
    text = text.replace('param = "tasks"\nvalues = [1, 2]\nparams = { duty_pct = 20 }\n', "")
    ok = text.replace('duration = "200ms"', 'duration = "200ms"\nmetrics = ["task.down.lat_us"]')
    (metric,) = load(tmp_path, ok).benchmarks[0].metrics
    assert (metric.name, metric.higher_is_better) == ("task.down.lat_us", False)
    bad = text.replace('duration = "200ms"', 'duration = "200ms"\nmetrics = ["task.down.lat"]')
    assert "reports no metric 'task.down.lat'; allowed: lat_us, rows, task.<TASK>.<METRIC>" in (
        error(tmp_path, bad)
    )
    no_dir = text.replace('duration = "200ms"', 'duration = "200ms"\nmetrics = ["task.a.rows"]')
    assert "metric 'task.a.rows': say whether higher or lower is better" in error(tmp_path, no_dir)


def test_file_errors(fake_core, tmp_path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        Experiment.from_toml(tmp_path / "missing.toml")
    message = error(tmp_path, "[experiment\nname = 1")
    assert "invalid TOML" in message
    message = error(tmp_path, "[experiment]\nname = 'x'\n")
    assert "machine: missing (required)" in message and "config: missing" in message


def test_shipped_quick_experiment_is_valid(real_core) -> None:
    path = Path(__file__).parent.parent / "experiments" / "quick.toml"
    exp = Experiment.from_toml(path)
    assert exp.config_names == ["sugov-noninv", "sugov-turbo4", "pstate-hwp"]
    assert exp.benchmarks[0].values("skylake-8x") == [1, 2, 4, 8]
    assert len(exp.specs) == 3 * 4 * 3
    resolved = {s.config: s.sim_config["cpufreq"] for s in exp.specs}
    assert resolved["sugov-noninv"]["invariance"] == "none"
    assert resolved["sugov-turbo4"]["invariance"] == "turbo:4"
    assert resolved["pstate-hwp"]["driver"] == "intel_pstate"
    assert resolved["pstate-hwp"]["governor"] == "powersave"
    assert all(s.sim_config["duration_ns"] == 2_000_000_000 for s in exp.specs)


def test_run_keys_change_with_the_core_model_fingerprint(monkeypatch: pytest.MonkeyPatch) -> None:
    """A stored run is not reused after the core's sources or data change."""
    from schedsim import experiment as ex

    fields = {"machine": "m", "config": "c", "benchmark": "b", "value": 1, "repeat": 1}
    sim = {"seed": 1}
    monkeypatch.setattr(ex, "model_fingerprint", lambda: "aaaa")
    a = ex.run_key(fields, sim)
    assert ex.run_key(fields, sim) == a
    monkeypatch.setattr(ex, "model_fingerprint", lambda: "bbbb")
    assert ex.run_key(fields, sim) != a


def test_the_core_checks_the_plan_before_any_run(fake_core, tmp_path) -> None:
    text = BASE.replace(
        'invariance = "turbo:4"', 'invariance = "turbo:4"\ntunables = { bogus = 1 }'
    )
    message = error(tmp_path, text)
    assert "exp.toml" in message and "config[2] (new)" in message, message
    assert "tasks = 1" in message and "unknown tunable 'bogus'" in message, message
    # the core saw the bad config when the file was loaded
    assert any("bogus" in c.get("tunables", {}) for c in fake_core.checked)


def test_each_config_is_checked_once_per_benchmark_and_each_point_once(fake_core, tmp_path):
    load(tmp_path, BASE)
    checked = [
        (c["cpufreq"]["invariance"], c["workload"]["params"]["tasks"]) for c in fake_core.checked
    ]
    # every config at the benchmark's first point, every point with the first config
    assert sorted(checked) == [("none", 1), ("none", 2), ("turbo:4", 1)]


def test_the_real_core_rejects_an_unknown_feature_at_load(real_core, tmp_path) -> None:
    text = BASE.replace(
        'invariance = "turbo:4"', 'invariance = "turbo:4"\nfeatures = { NO_SUCH_FEATURE = true }'
    )
    message = error(tmp_path, text)
    assert "config[2] (new)" in message and "NO_SUCH_FEATURE" in message, message


def test_specpower_sweep_prints_the_ssj_score(real_core, tmp_path) -> None:
    """A load_pct sweep of `specpower` gets SPECpower's score: the sum of the levels' ssj_ops
    over the sum of their package power, from the per-run results."""
    text = BASE.split("[[benchmark]]")[0] + textwrap.dedent(
        """
        [[benchmark]]
        workload = "specpower"
        param = "load_pct"
        values = [60, 20, 0]
        params = { warmup_s = 0.1 }
        duration = "400ms"
        """
    )
    exp = load(tmp_path, text)
    res = exp.run(jobs=1)
    table = next(t for t in res.table_list if t.section == "specpower-score")
    assert table.configs == ["base", "new"]
    (row,) = table.rows
    assert (row.stat, row.op) == ("Score", "ssj_ops/W")
    for config, score in zip(table.configs, row.values, strict=True):
        ssj = power = 0.0
        for load_pct in (60, 20, 0):
            runs = [
                res.results[s.key]
                for s in exp.specs
                if s.config == config and s.op == f"load_pct-{load_pct}"
            ]
            assert len(runs) == 2
            ssj += sum(r["metrics"]["ssj_ops"] for r in runs) / 2
            power += sum(r["power"]["avg_package_w"] for r in runs) / 2
        assert score == pytest.approx(ssj / power)
    # the active-idle level does no work but its power counts
    assert "over the 3 load levels" in table.title


def test_a_benchmark_without_metrics_takes_the_primary_its_run_reports(real_core, tmp_path):
    """The catalogue's primary is the generator's usual one; schbench's old version reports
    its wakeup latency p99 and an rt-app file without timers its run time (lower is better),
    and the comparison is of what the runs report."""
    rtapp = tmp_path / "no-timer.json"
    rtapp.write_text('{"tasks": {"t": {"loop": 5, "run": 2000, "sleep": 3000}}}')
    text = BASE.split("[[benchmark]]")[0] + textwrap.dedent(
        f"""
        [[benchmark]]
        workload = "schbench"
        params = {{ version = "old", workers = 2 }}
        duration = "300ms"

        [[benchmark]]
        workload = "rt-app"
        params = {{ path = "{rtapp}" }}
        duration = "100ms"

        [[benchmark]]
        name = "schbench-current"
        workload = "schbench"
        params = {{ workers = 2 }}
        duration = "300ms"
        """
    )
    exp = load(tmp_path, text)
    old, plain_rtapp, current = (b.metrics for b in exp.benchmarks)
    assert old == (MetricDef("wakeup_latency_us_p99", False),)
    assert plain_rtapp == (MetricDef("run_us_mean", False),)
    assert current == (MetricDef("request_latency_us_p99", False),)


def test_a_slack_is_averaged_arithmetically() -> None:
    # higher is better, but negative when late: a harmonic mean would be undefined
    slack = MetricDef("task.t.slack_us_mean", True)
    assert slack.mean_kind == "amean"
    assert MetricDef("tps", True).mean_kind == "hmean"
    assert MetricDef("elapsed_s", False).mean_kind == "amean"
    s = st.summarise([[-200.0], [100.0], [40.0]], True, kind=slack.mean_kind)
    assert s.mean == pytest.approx(-20.0)
    assert st.stat_name("_mean", True, kind=s.kind) == "Amean"
    assert math.isnan(st.summarise([[-200.0], [100.0]], True).mean)  # Hmean: undefined
    # a late slack that got less late is better: positive %, ratio above 1
    assert st.signed_pdiff(-2008.4, -2072.8) == pytest.approx(64.4 * 100 / 2072.8)
    assert st.signed_rdiff(-2008.4, -2072.8) == pytest.approx(1 + 64.4 / 2072.8)
    assert st.signed_rdiff(-2100.0, -2000.0) == pytest.approx(0.95)
    # with a positive baseline they are MMTests' pdiff and ratio
    assert st.signed_pdiff(110.0, 100.0) == pytest.approx(st.pdiff(110.0, 100.0))
    assert st.signed_rdiff(110.0, 100.0) == pytest.approx(st.rdiff(110.0, 100.0))
    assert s.signed and not st.summarise([[1.0], [2.0]], True).signed
