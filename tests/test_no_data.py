"""Metrics with nothing behind them are null, never a 0 that reads as a result; the periodic
workload's slack follows its own (re-based) activation clock, as rt-app's does."""

import json
import math

from typer.testing import CliRunner

import schedsim
from schedsim.cli import app


def test_periodic_slack_is_against_each_activations_own_release() -> None:
    # For an activation released at r (the task's start, its timer's expiry, or the previous
    # completion when that was late) that starts on a CPU at a and completes at d, slack is
    # r + P - d = P - (a - r) - (d - a). a - r is the wakeup latency for an activation that
    # slept, and 0 for one that followed a late completion without sleeping, so over all
    # activations the mean slack is P - run_us_mean - (sum of wakeup latencies) / activations,
    # up to the first activation's start (within a few us). A fixed grid from the start would
    # count every activation after the slow first ones as late.
    period_us = 4_000.0
    r = schedsim.run(
        "skylake-8x",
        "periodic:period_ms=4,duty_pct=50",
        kernel="6.12",
        driver="intel_cpufreq",
        governor="schedutil",
        duration="1s",
    )
    m = r.metrics
    n = m["activations"]
    assert n >= 240
    wakeups = float(r.tasks["nr_wakeups"].sum())
    latency_sum = m["wakeup_latency_us_mean"] * wakeups
    expected = period_us - m["run_us_mean"] - latency_sum / n
    assert abs(m["slack_us_mean"] - expected) < 5.0, (m, expected)
    # the task starts at the lowest frequency: its first activations may end late; the rest
    # (half the period's work at max frequency, which schedutil runs at ~60 % of it) end in
    # time
    assert 0 < m["missed_pct"] < 100.0 * 5 / n, m
    assert m["slack_us_mean"] > 0, m


def test_a_task_that_never_sleeps_has_no_wakeup_latency() -> None:
    # duty 100 %: the work is calibrated at the machine's top speed, so no activation ends
    # before its next release and the task never sleeps
    r = schedsim.run("skylake-8x", "periodic:period_ms=1,duty_pct=100", duration="0.1s")
    assert int(r.tasks["nr_wakeups"].sum()) == 0
    assert r.metrics["wakeup_latency_us_mean"] is None
    assert r.metrics["wakeup_latency_us_max"] is None
    task = r.json["tasks"][0]
    assert task["wakeup_latency_us_mean"] is None and task["wakeup_latency_us_max"] is None
    assert r.metrics["activations"] >= 90


def test_fixed_work_cut_short_has_no_time() -> None:
    r = schedsim.run("skylake-8x", "hackbench:groups=1,loops=100", duration="200us")
    assert r.metrics["completed"] == 0
    assert r.metrics["time_s"] is None and r.metrics["time_us"] is None
    assert r.primary["value"] is None
    assert r.json["power"]["perf_per_watt"] is None
    done = schedsim.run("skylake-8x", "hackbench:groups=1,loops=100")
    assert done.metrics["completed"] == 1
    assert done.metrics["time_s"] > 0
    assert done.json["power"]["perf_per_watt"] > 0

    k = schedsim.run("skylake-8x", "kernbench:jobs=2,objects=4", duration="50ms")
    assert k.metrics["elapsed_s"] is None
    assert k.metrics["link_s"] is None
    assert k.metrics["processes"] > 0  # what it did is still counted


def test_statistics_of_no_samples_are_null_and_counts_stay_numbers() -> None:
    # 200 us: no I/O, no loadfile pass and no transaction completes
    fio = schedsim.run("skylake-8x", "fio", duration="200us").metrics
    assert fio["ios"] == 0 and fio["iops"] == 0
    assert fio["latency_us_mean"] is None and fio["latency_us_p99"] is None
    tb = schedsim.run("skylake-8x", "tbench:clients=1", duration="200us").metrics
    assert tb["loadfile_passes"] == 0
    assert all(tb[f"loadfile_ms_{k}"] is None for k in ("mean", "min", "max", "p50", "p99"))
    pg = schedsim.run("skylake-8x", "pgbench-ro:clients=1", duration="200us").metrics
    assert pg["transactions"] == 0 and pg["tps"] == 0
    assert pg["latency_ms_mean"] is None
    sb = schedsim.run("skylake-8x", "schbench", duration="200us").metrics
    assert sb["request_samples"] == 0
    assert sb["request_latency_us_p99"] is None and sb["request_latency_us_min"] is None


def test_the_cli_prints_no_data_as_a_dash_and_json_as_null() -> None:
    args = ["run", "-m", "skylake-8x", "-w", "hackbench:groups=1,loops=100"]
    args += ["--duration", "200us"]
    out = CliRunner().invoke(app, args)
    assert out.exit_code == 0, out.output
    assert "time_s = -" in out.output
    js = CliRunner().invoke(app, [*args, "--json"])
    assert js.exit_code == 0, js.output
    doc = json.loads(js.output)
    assert doc["metrics"]["time_s"] is None
    assert doc["primary"]["value"] is None
    assert not any(isinstance(v, float) and math.isnan(v) for v in doc["metrics"].values())


def test_rt_app_without_timers_has_no_slack(tmp_path) -> None:
    path = tmp_path / "no-timer.json"
    path.write_text(
        json.dumps(
            {
                "tasks": {"t": {"loop": 10, "run": 1000, "sleep": 1000}},
                "global": {"duration": 1, "calibration": 100},
            }
        )
    )
    m = schedsim.run("skylake-8x", f"rt-app:{path}", duration="50ms").metrics
    assert m["rows"] == 10
    assert m["run_us_mean"] > 0
    for k in ("slack_us_mean", "missed_pct", "wu_lat_us_mean", "wu_lat_us_max"):
        assert m[k] is None, (k, m)


def test_one_loadfile_pass_has_no_spread() -> None:
    # MMTests' Stat.pm: the standard deviation of one sample is NaN, not 0
    m = schedsim.run("skylake-8x", "dbench", kernel="6.12", duration="0.1s").metrics
    assert m["loadfile_passes"] == 1
    assert m["loadfile_ms_mean"] > 0
    assert m["loadfile_ms_stddev"] is None


def test_perf_per_watt_is_null_where_it_is_undefined(tmp_path) -> None:
    # an rt-app task that misses every deadline: its slack (the primary, higher is better) is
    # negative, and primary / W would read as a (negative) efficiency
    path = tmp_path / "late.json"
    path.write_text(
        json.dumps(
            {
                "tasks": {"t": {"loop": -1, "run": 12000, "timer": {"ref": "t", "period": 10000}}},
                "global": {"calibration": 100},
            }
        )
    )
    r = schedsim.run("skylake-8x", f"rt-app:{path}", kernel="6.12", duration="0.3s")
    assert r.primary["name"] == "slack_us_mean"
    assert r.primary["value"] < 0
    assert r.json["power"]["avg_package_w"] > 0
    assert r.json["power"]["perf_per_watt"] is None
