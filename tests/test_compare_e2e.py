"""End to end through the compiled core: `schedsim compare` on a reduced copy of the shipped
experiments/quick.toml (fewer values, fewer repeats, a shorter simulated time)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from schedsim.cli import app

runner = CliRunner()
QUICK = Path(__file__).parent.parent / "experiments" / "quick.toml"

pytestmark = pytest.mark.usefixtures("real_core")


def reduced(tmp_path: Path) -> Path:
    text = QUICK.read_text()
    for old, new in (
        ("values = [1, 2, 4, 8]", "values = [1, 4]"),
        ('duration = "2s"', 'duration = "400ms"'),
        ("repeats = 3", "repeats = 2"),
    ):
        assert old in text
        text = text.replace(old, new)
    path = tmp_path / "quick-small.toml"
    path.write_text(text)
    return path


def test_compare_quick_reduced(tmp_path) -> None:
    path = reduced(tmp_path)
    out = tmp_path / "out"
    args = [
        "compare",
        str(path),
        "--out",
        str(out),
        "--jobs",
        "2",
        "--json",
        str(tmp_path / "t.json"),
    ]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.stderr
    text = result.stdout
    total = 3 * 2 * 2
    assert f"{total} runs executed, 0 loaded" in result.stderr
    for title in (
        "periodic run_us_mean (skylake-8x)",
        "periodic run_us_mean ratio to sugov-noninv (skylake-8x)",
        "periodic wakeup_latency_us_mean (skylake-8x)",
        "periodic package power, W (skylake-8x)",
        "periodic perf-per-watt = 1 / (Amean run_us_mean x Amean PkgWatt), ratio to "
        "sugov-noninv (skylake-8x)",
        "periodic turbostat (skylake-8x)",
    ):
        assert title + "\n" in text, title
    # the header rows: the config names split at their first '-'
    assert re.search(r"^ +sugov +sugov +pstate$", text, re.M)
    assert re.search(r"^ +noninv +turbo4 +hwp$", text, re.M)
    amean = re.search(r"^Amean     tasks-1 +([\d.]+) \(   0\.00%\)", text, re.M)
    assert amean and float(amean.group(1)) > 0
    assert re.search(r"^Gmean Higher +1\.00 +\d+\.\d\d +\d+\.\d\d$", text, re.M)
    for column in ("Avg_MHz", "Busy%", "CorWatt", "PkgWatt"):
        assert re.search(rf"^Amean {re.escape(column)} +\d", text, re.M), column

    runs = pd.read_parquet(out / "runs.parquet")
    assert len(runs) == total
    assert (runs["power.avg_package_w"] > 0).all()
    samples = pd.read_parquet(out / "samples.parquet")
    assert set(samples.groupby("run_key").size()) == {4}  # 400ms of 100ms intervals
    data = json.loads((tmp_path / "t.json").read_text())
    assert data["configs"][2]["resolved"]["skylake-8x"]["governor"] == "powersave"
    assert (out / "report.html").is_file()
    assert len(list((out / "plots").glob("*.png"))) == 6

    # rerun: everything is loaded, the output is identical (deterministic, any job count)
    again = runner.invoke(app, ["compare", str(path), "--out", str(out), "--jobs", "1"])
    assert again.exit_code == 0, again.stderr
    assert f"0 runs executed, {total} loaded" in again.stderr
    assert again.stdout == text
    inline = runner.invoke(app, ["compare", str(path), "--jobs", "1"])
    assert inline.stdout == text


def test_a_benchmark_without_a_swept_parameter_names_each_metric_table_row_by_its_metric(
    tmp_path: Path,
) -> None:
    text = QUICK.read_text()
    for old, new in (
        ('param = "tasks"\n', ""),
        ("values = [1, 2, 4, 8]\n", ""),
        ("params = { duty_pct = 20, period_ms = 16 }", "params = { tasks = 2, duty_pct = 20 }"),
        ('duration = "2s"', 'duration = "200ms"'),
        ("repeats = 3", "repeats = 1"),
    ):
        assert old in text
        text = text.replace(old, new)
    path = tmp_path / "single.toml"
    path.write_text(text)
    result = runner.invoke(app, ["compare", str(path), "--jobs", "1"])
    assert result.exit_code == 0, result.stderr
    latency = result.stdout.split("periodic wakeup_latency_us_mean (skylake-8x)")[1]
    assert re.search(r"^Amean\s+wakeup_latency_us_mean\s", latency, re.M)
    run_us = result.stdout.split("periodic run_us_mean (skylake-8x)")[1]
    assert re.search(r"^Amean\s+run_us_mean\s", run_us, re.M)
