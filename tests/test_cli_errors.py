"""CLI errors: exit status 2 and one line on stderr naming the value and what is allowed."""

import pytest
from typer.testing import CliRunner

from schedsim.cli import app

runner = CliRunner()


def _one_line_error(result) -> str:
    assert result.exit_code == 2, (result.exit_code, result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert lines[0].startswith("schedsim: error: ")
    return lines[0]


def test_bad_machine() -> None:
    result = runner.invoke(app, ["run", "--machine", "nosuch", "--workload", "periodic"])
    line = _one_line_error(result)
    assert "unknown machine 'nosuch'" in line
    assert "skylake-8x" in line and "sdm845" in line


def test_bad_duration() -> None:
    result = runner.invoke(
        app, ["run", "-m", "skylake-8x", "-w", "periodic", "--duration", "5 fortnights"]
    )
    line = _one_line_error(result)
    assert "'5 fortnights'" in line
    assert "ms" in line and "2s" in line


def test_bad_trace_format(tmp_path) -> None:
    result = runner.invoke(
        app,
        [
            "run",
            "-m",
            "skylake-8x",
            "-w",
            "periodic",
            "--trace",
            str(tmp_path / "t"),
            "--trace-format",
            "pcap",
        ],
    )
    line = _one_line_error(result)
    assert "'pcap'" in line and "ftrace" in line


def test_bad_governor() -> None:
    result = runner.invoke(app, ["run", "-m", "skylake-8x", "-w", "periodic", "--governor", "x"])
    line = _one_line_error(result)
    assert "'x'" in line and "powersave" in line


def test_machines_describe_unknown() -> None:
    result = runner.invoke(app, ["machines", "--describe", "nosuch"])
    assert "unknown machine 'nosuch'" in _one_line_error(result)


def test_bench_unknown_scenario() -> None:
    result = runner.invoke(app, ["bench", "--scenario", "nosuch", "--duration", "1ms"])
    line = _one_line_error(result)
    assert "unknown scenario 'nosuch'" in line and "pingpong-8cpu-64" in line


# ---- with the workload catalog of a fake core (always runs) ---------------------------------


def test_unknown_workload_fake(fake_core) -> None:
    result = runner.invoke(app, ["run", "-m", "skylake-8x", "-w", "nosuch", "--duration", "1s"])
    line = _one_line_error(result)
    assert "unknown workload 'nosuch'; allowed: ftrace, hackbench, periodic" in line


def test_unknown_parameter_fake(fake_core) -> None:
    result = runner.invoke(
        app, ["run", "-m", "skylake-8x", "-w", "periodic:tasks=2,colour=blue", "--duration", "1s"]
    )
    line = _one_line_error(result)
    assert "unknown parameter 'colour'" in line
    assert "tasks, period_ms, duty_pct" in line


def test_core_value_error_is_a_config_error(fake_core) -> None:
    fake_core.extra_workloads.append({"name": "reject-me", "params": []})
    result = runner.invoke(app, ["run", "-m", "skylake-8x", "-w", "reject-me"])
    assert "rejected by the core" in _one_line_error(result)


# ---- with the real core's catalog ------------------------------------------------------------


@pytest.fixture
def catalog(real_core):
    import json

    return {w["name"]: w for w in json.loads(real_core.workloads())}


def test_unknown_workload_real(catalog) -> None:
    result = runner.invoke(app, ["run", "-m", "skylake-8x", "-w", "nosuch", "--duration", "1s"])
    line = _one_line_error(result)
    assert "unknown workload 'nosuch'" in line
    assert "periodic" in line
    for name in catalog:
        if name != "custom":  # built with the Python API only
            assert name in line


def test_unknown_parameter_real(catalog) -> None:
    result = runner.invoke(
        app, ["run", "-m", "skylake-8x", "-w", "periodic:colour=blue", "--duration", "1s"]
    )
    line = _one_line_error(result)
    assert "unknown parameter 'colour'" in line
    for param in catalog["periodic"]["params"]:
        assert param["name"] in line
