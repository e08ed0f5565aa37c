"""`schedsim run`, `machines`, `workloads`, `bench` plumbing, on a fake core."""

import json
import re

import pytest
from typer.testing import CliRunner

from schedsim.cli import app
from schedsim.results import CONTRACT_KEYS

runner = CliRunner()

RUN = [
    "run",
    "-m",
    "skylake-8x",
    "-w",
    "periodic:tasks=2,period_ms=10,duty_pct=30",
    "--duration",
    "200ms",
]


def test_summary(fake_core) -> None:
    result = runner.invoke(app, [*RUN, "--kernel", "5.2"])
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    assert "skylake-8x" in out
    assert "kernel 5.2" in out
    assert "intel_pstate/powersave" in out
    assert "slack_us_p50" in out
    assert "Turbostat summary" in out and "Bzy_MHz" in out
    assert "Per CPU" in out
    assert re.search(r"\b7\s*\S\s*20\.00\b", out)  # cpu 7 busy 20%
    (config,) = fake_core.configs
    assert config["kernel"]["version"] == "5.2"
    assert config["duration_ns"] == 200_000_000
    assert config["trace"] is False


def test_json_is_the_result_without_trace(fake_core, tmp_path) -> None:
    trace = tmp_path / "run.trace"
    result = runner.invoke(app, [*RUN, "--json", "--trace", str(trace)])
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    for key in CONTRACT_KEYS:
        assert key in data
    assert "trace" not in data
    assert fake_core.configs[0]["trace"] is True
    assert trace.read_text().startswith("# tracer: nop")


def test_sets_reach_the_config(fake_core) -> None:
    result = runner.invoke(
        app,
        [
            *RUN,
            "--json",
            "--set",
            "sched_migration_cost_ns=250000",
            "--set",
            "features.feec=per-pd",
            "--set",
            "CONFIG_HZ=1000",
            "--seed",
            "42",
            "--governor",
            "performance",
            "--invariance",
            "none",
        ],
    )
    assert result.exit_code == 0, result.stderr
    (config,) = fake_core.configs
    assert config["tunables"] == {"sched_migration_cost_ns": 250000}
    assert config["kernel"]["features"] == {"feec": "per-pd"}
    assert config["kernel"]["hz"] == 1000
    assert config["seed"] == 42
    assert config["cpufreq"] == {
        "governor": "performance",
        "driver": "intel_pstate",
        "invariance": "none",
    }


def test_unwritable_trace_is_a_config_error_before_the_run(fake_core, tmp_path) -> None:
    missing = tmp_path / "no" / "such" / "dir"
    result = runner.invoke(app, [*RUN, "--trace", str(missing / "t")])
    assert result.exit_code == 2
    assert f"the directory {missing} does not exist" in result.stderr
    result = runner.invoke(app, [*RUN, "--trace", str(tmp_path)])
    assert result.exit_code == 2
    assert f"--trace {tmp_path}: is a directory" in result.stderr
    assert fake_core.configs == []  # nothing was run


def test_internal_error_is_one_line(monkeypatch) -> None:
    from schedsim import native

    def broken(name):
        def fn(*args):
            raise RuntimeError("boom")

        return fn

    monkeypatch.setattr(native, "core_function", broken)
    from schedsim import config as config_mod

    config_mod.core_workloads.cache_clear()
    result = runner.invoke(app, RUN)
    config_mod.core_workloads.cache_clear()
    assert result.exit_code == 1
    assert result.stderr.strip() == (
        "schedsim: error: internal error: RuntimeError: boom (SCHEDSIM_DEBUG=1 shows the traceback)"
    )


def test_missing_extension_is_one_line(monkeypatch) -> None:
    from schedsim import native
    from schedsim.errors import CoreUnavailableError

    def missing(name):
        raise CoreUnavailableError("the compiled extension schedsim._core is not available")

    monkeypatch.setattr(native, "core_function", missing)
    from schedsim import config as config_mod

    config_mod.core_workloads.cache_clear()
    result = runner.invoke(app, RUN)
    config_mod.core_workloads.cache_clear()
    assert result.exit_code == 1
    assert len(result.stderr.strip().splitlines()) == 1
    assert "not available" in result.stderr


def test_machines_list_and_describe() -> None:
    result = runner.invoke(app, ["machines"])
    assert result.exit_code == 0
    assert "skylake-8x" in result.stdout and "sdm845" in result.stdout
    assert "800-3900" in result.stdout
    # wide enough for the longest key (core_types.*.kernel_cycles.context_switch_out) and
    # the source column beside it
    result = runner.invoke(app, ["machines", "--describe", "skylake-8x"], env={"COLUMNS": "120"})
    assert result.exit_code == 0
    assert "C1E" in result.stdout
    assert "[seed000]" in result.stdout  # the sources are shown
    assert "turbo (1C, 2C, ...) 3900, 3900, 3800, 3700 MHz" in result.stdout
    for text in ("HWP enabled", "PL1 80 W", "PC6", "calibrated", "power.c_eff"):
        assert text in result.stdout, text


@pytest.mark.parametrize("name", ["epyc7742-2s", "power10-smt8", "juno-r0", "broadwell-80x"])
def test_machines_describe_every_kind(name: str) -> None:
    result = runner.invoke(app, ["machines", "--describe", name], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    assert "Topology" in out and "Every value and its source" in out
    assert "(none)" not in out  # every value has a source comment
    if name == "epyc7742-2s":
        assert "128 domains" in out and "PL1 225 W" in out and "no per-active-core" in out
    if name == "broadwell-80x":
        assert "40 domains" in out and "2900, 2700" in out
    if name == "juno-r0":
        assert "0,3-5" in out  # the LITTLE cluster in Linux numbering


def test_workloads_list_and_describe(fake_core) -> None:
    result = runner.invoke(app, ["workloads"])
    assert result.exit_code == 0
    assert "periodic" in result.stdout and "hackbench" in result.stdout
    result = runner.invoke(app, ["workloads", "--describe", "periodic"])
    assert result.exit_code == 0
    assert "duty_pct" in result.stdout
    result = runner.invoke(app, ["workloads", "--describe", "nosuch"])
    assert result.exit_code == 2
    assert "allowed: custom, ftrace, hackbench, periodic" in result.stderr


def test_bench_json(fake_core) -> None:
    result = runner.invoke(app, ["bench", "--json", "--duration", "100ms"])
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert set(data["scenarios"]) == {"pingpong-8cpu-64", "simso-8cpu-40", "periodic-256cpu-1280"}
    for figures in data["scenarios"].values():
        assert set(figures) == {"events_per_s", "sim_speed", "events", "wall_s"}
    assert data["skipped"] == {}
    assert all(c["cpufreq"]["governor"] == "performance" for c in fake_core.configs)
    assert all(c["duration_ns"] == 100_000_000 for c in fake_core.configs)
    assert all(c["workload"]["name"] == "custom" for c in fake_core.configs)


def test_version() -> None:
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.stdout.startswith("schedsim ")
