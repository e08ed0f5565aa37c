"""End to end through the compiled core: `schedsim run` as a user runs it.

Skipped only when the extension is not built; `make test` builds it, so in CI these run.
"""

from __future__ import annotations

import json
import re

import pytest
from typer.testing import CliRunner

import schedsim
from schedsim.cli import app
from schedsim.results import CONTRACT_KEYS, strip_wall_clock
from support import LISA_LINE, PERFETTO_LINE

runner = CliRunner()

RUN = [
    "run",
    "--machine",
    "skylake-8x",
    "--workload",
    "periodic:tasks=2,period_ms=10,duty_pct=30",
    "--duration",
    "200ms",
]

pytestmark = pytest.mark.usefixtures("real_core")


def _run_json(*extra: str) -> tuple[str, dict]:
    result = runner.invoke(app, [*RUN, "--json", *extra])
    assert result.exit_code == 0, result.stderr
    return result.stdout, json.loads(result.stdout)


def test_run_json_has_every_contract_key() -> None:
    _, data = _run_json()
    for key in CONTRACT_KEYS:
        assert key in data, f"missing key {key}"
    assert "trace" not in data
    assert set(data["workload"]) >= {"name", "params"}
    assert data["workload"]["name"] == "periodic"
    assert set(data["primary"]) >= {"name", "value", "higher_is_better"}
    assert set(data["power"]) >= {"energy_j", "avg_package_w", "perf_per_watt"}
    assert set(data["turbostat"]) >= {
        "avg_mhz",
        "busy_pct",
        "bzy_mhz",
        "tsc_mhz",
        "pkg_watt",
        "cor_watt",
        "cstates",
    }
    assert set(data["sched"]) >= {"context_switches", "migrations", "wakeups", "forks"}
    assert set(data["sim"]) >= {"simulated_s", "events", "wall_s", "events_per_s"}
    assert data["sim"]["simulated_s"] == pytest.approx(0.2)
    assert len(data["cpus"]) == 8
    for cpu in data["cpus"]:
        assert set(cpu) >= {"cpu", "busy_ns", "idle_ns", "context_switches", "avg_khz"}
        assert cpu["busy_ns"] + cpu["idle_ns"] == 200_000_000
    for task in data["tasks"]:
        assert set(task) >= {
            "pid",
            "ppid",
            "comm",
            "cpu_ns",
            "wait_ns",
            "nr_switches",
            "nr_migrations",
            "nr_wakeups",
            "start_ns",
            "exit_ns",
        }
    assert isinstance(data["metrics"], dict) and data["metrics"]


_WALL = re.compile(r'("(?:wall_s|events_per_s)":\s*)[^,\n}]+')


def test_two_runs_are_byte_identical_apart_from_wall_clock() -> None:
    text1, data1 = _run_json()
    text2, data2 = _run_json()
    assert strip_wall_clock(data1) == strip_wall_clock(data2)
    assert _WALL.sub(r"\1X", text1) == _WALL.sub(r"\1X", text2)


def test_seed_is_reported() -> None:
    _, data = _run_json("--seed", "5")
    assert data["seed"] == 5


def test_trace_lines_match_perfetto_and_lisa(tmp_path) -> None:
    path = tmp_path / "run.trace"
    result = runner.invoke(app, [*RUN, "--trace", str(path)])
    assert result.exit_code == 0, result.stderr
    text = path.read_text()
    assert text.startswith("# tracer"), "Perfetto detects ftrace text by '# tracer'"
    events = [line for line in text.splitlines() if line.strip() and not line.startswith("#")]
    assert events, "the trace has no events"
    for line in events:
        assert PERFETTO_LINE.search(line), f"Perfetto regex fails: {line!r}"
        assert LISA_LINE.match(line), f"LISA regex fails: {line!r}"
    assert any(": sched_switch: " in line for line in events)


def test_python_api() -> None:
    r = schedsim.run(
        "skylake-8x",
        "periodic:tasks=2,period_ms=10,duty_pct=30",
        kernel="5.2",
        duration="200ms",
        trace=True,
    )
    assert r.primary["name"] in r.metrics
    assert len(r.cpus) == 8
    assert {"pid", "comm", "cpu_ns"} <= set(r.tasks.columns)
    events = r.events
    assert events.index.name == "Time"
    assert {"__cpu", "__pid", "__comm", "event"} <= set(events.columns)
    switches = r.df_event("sched_switch")
    assert len(switches) > 0
    assert {"prev_comm", "prev_pid", "prev_state", "next_comm", "next_pid"} <= set(switches.columns)
    assert events.index.is_monotonic_increasing


def test_sdm845_runs() -> None:
    result = runner.invoke(
        app,
        ["run", "-m", "sdm845", "-w", "periodic:tasks=2", "--duration", "100ms", "--json"],
    )
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert len(data["cpus"]) == 8


def test_human_summary() -> None:
    result = runner.invoke(app, [*RUN, "--kernel", "5.2"])
    assert result.exit_code == 0, result.stderr
    assert "Per CPU" in result.stdout
    assert "Turbostat summary" in result.stdout


def test_bench_scenario() -> None:
    result = runner.invoke(
        app, ["bench", "--json", "--scenario", "pingpong-8cpu-64", "--duration", "20ms"]
    )
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    figures = data["scenarios"]["pingpong-8cpu-64"]
    assert set(figures) == {"events_per_s", "sim_speed", "events", "wall_s"}
    assert figures["events"] > 0


def test_clock_and_set_affinity_ops_from_python() -> None:
    """A task pins itself to CPU 3, then runs 100,000 cycles (at most 0.125 ms at skylake-8x's
    lowest 800 MHz) per tick of a 10 ms clock: in 200 ms it wakes about 20 times, all on CPU 3."""
    from schedsim import programs as p

    body = p.loop(p.run(100_000), p.clock("tick", 10_000_000))
    r = schedsim.run(
        "skylake-8x",
        p.custom_workload(tasks=[p.task("pinned", p.set_affinity(3), body)]),
        duration="200ms",
    )
    t = r.tasks.set_index("comm").loc["pinned"]
    assert t["cpu"] == 3 and t["nr_migrations"] <= 1
    assert 19 <= t["nr_wakeups"] <= 21, t["nr_wakeups"]


def test_journal_ops_from_python_share_one_commit() -> None:
    """Two fsyncs asked before the journal thread first looks (it starts 2 ms late) are in
    the same transaction: one commit serves both, and both continue after it."""
    from schedsim import programs as p

    client = p.task("client", p.journal_commit("j"), p.mark("durable"), p.exit_(), instances=2)
    commit = p.loop(p.journal_wait("j"), p.mark("commit"), p.io(1_000_000), p.journal_done("j"))
    thread = p.task("jbd2", commit, delay_ns=2_000_000)
    r = schedsim.run("skylake-8x", p.custom_workload(tasks=[client, thread]), duration="20ms")
    assert r.metrics["marks_commit"] == 1
    assert r.metrics["marks_durable"] == 2


def test_rt_app_calibration_parameter_picks_the_fastest_cpu() -> None:
    """sdm845's fastest CPU is a big core (CPU 4): `calibration=max` calibrates `run` there, so
    pLoad is shorter than on the file's CPU0 and the task needs the big cluster at 70 %."""
    ramp = "crates/schedsim-core/data/rt-app/eb92692b-ramp-70-10-16ms.reconstructed.json"

    def run(extra: str) -> schedsim.RunResult:
        return schedsim.run("sdm845", f"rt-app:{ramp}{extra}", kernel="5.4", duration="400ms")

    little, big, cpu4 = run(""), run(",calibration=max"), run(",calibration=CPU4")
    assert big.metrics["pload_ns"] == cpu4.metrics["pload_ns"]
    assert big.metrics["pload_ns"] < little.metrics["pload_ns"]
    assert big.cpus.loc[big.cpus["busy_pct"].idxmax(), "cpu"] >= 4
    assert little.cpus.loc[little.cpus["busy_pct"].idxmax(), "cpu"] < 4
