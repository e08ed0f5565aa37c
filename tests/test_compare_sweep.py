"""Running experiments: per-run result files, resuming an interrupted sweep, backends (local,
Dask on a LocalCluster; Ray when installed), the result frames and the HTML report."""

from __future__ import annotations

import json
import os
import re
import textwrap
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from schedsim import Experiment
from schedsim.cli import app
from schedsim.sweep import execute
from schedsim.sweep.store import RunStore

runner = CliRunner()

EXPERIMENT = textwrap.dedent(
    """
    [experiment]
    name = "sweep"
    repeats = 3
    seed = 11
    sample_interval = "50ms"

    [[machine]]
    preset = "skylake-8x"

    [[config]]
    name = "sugov-base"
    kernel = "5.2"
    driver = "intel_cpufreq"
    governor = "schedutil"
    invariance = "none"

    [[config]]
    name = "pstate-perf"
    kernel = "5.2"
    driver = "intel_pstate"
    governor = "performance"

    [[benchmark]]
    workload = "periodic"
    param = "tasks"
    values = [1, 2, 4, 8]
    params = { duty_pct = 20, period_ms = 16 }
    duration = "200ms"
    """
)
TOTAL = 2 * 4 * 3
WALL_CLOCK = ["sim.wall_s", "sim.events_per_s"]


@pytest.fixture
def exp_path(tmp_path: Path) -> Path:
    path = tmp_path / "sweep.toml"
    path.write_text(EXPERIMENT)
    return path


def stable(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.drop(columns=[c for c in WALL_CLOCK if c in frame]).reset_index(drop=True)


def test_runs_frame_and_tables(varying_core, exp_path) -> None:
    result = Experiment.from_toml(exp_path).run(jobs=1)
    assert varying_core.calls == TOTAL
    runs = result.runs
    assert len(runs) == TOTAL
    for column in (
        "run_key",
        "machine",
        "config",
        "benchmark",
        "op",
        "value",
        "repeat",
        "seed",
        "metrics.slack_us_p50",
        "power.avg_package_w",
        "turbostat.avg_mhz",
        "turbostat.cstates.C6",
        "sched.migrations",
    ):
        assert column in runs, column
    assert list(runs["config"].unique()) == ["sugov-base", "pstate-perf"]
    assert result.samples.groupby("run_key").size().eq(4).all()  # 200ms / 50ms
    tables = result.tables
    assert set(tables["section"]) == {"metric", "ratio", "power", "perf-per-watt", "turbostat"}
    hmean = tables[(tables["section"] == "metric") & (tables["stat"] == "Hmean")]
    assert len(hmean) == 4 * 2
    assert hmean[hmean["config"] == "sugov-base"]["compare_pct"].eq(0).all()
    assert hmean[hmean["config"] == "pstate-perf"]["significant"].all()
    data = json.loads(result.to_json())
    assert data["runs"] == {"total": TOTAL, "executed": TOTAL, "loaded": 0}
    assert data["configs"][1]["resolved"]["skylake-8x"]["driver"] == "intel_pstate"
    assert [t["section"] for t in data["tables"]] == [
        "metric",
        "ratio",
        "power",
        "perf-per-watt",
        "turbostat",
    ]


def test_results_do_not_depend_on_the_job_count_or_call_order(varying_core, exp_path) -> None:
    exp = Experiment.from_toml(exp_path)
    a = exp.run(jobs=1)
    # the same runs in reverse order give the same frames and tables
    reversed_exp = Experiment.from_toml(exp_path)
    reversed_exp.specs.reverse()
    b = reversed_exp.run(jobs=1)
    a_runs = stable(a.runs).sort_values("run_key").reset_index(drop=True)
    b_runs = stable(b.runs).sort_values("run_key").reset_index(drop=True)
    pd.testing.assert_frame_equal(a_runs, b_runs)
    assert a.text() == b.text()


def test_per_run_files_and_resume_after_interrupt(varying_core, exp_path, tmp_path) -> None:
    out = tmp_path / "out"
    exp = Experiment.from_toml(exp_path)
    varying_core.fail_at = 11  # Ctrl-C during the 11th run
    with pytest.raises(KeyboardInterrupt):
        exp.run(jobs=1, out=out)
    files = sorted((out / "runs").glob("*.parquet"))
    assert len(files) == 10  # every finished run is on disk ...
    assert not list((out / "runs").glob(".*.tmp"))  # ... and nothing half-written
    assert {f.stem for f in files} == {s.key for s in exp.specs[:10]}

    varying_core.fail_at = None
    varying_core.calls = 0
    resumed = Experiment.from_toml(exp_path).run(jobs=1, out=out)
    assert varying_core.calls == TOTAL - 10  # nothing repeated
    assert (resumed.executed, resumed.loaded) == (TOTAL - 10, 10)
    assert len(list((out / "runs").glob("*.parquet"))) == TOTAL  # nothing lost

    varying_core.calls = 0
    again = Experiment.from_toml(exp_path).run(jobs=1, out=out)
    assert varying_core.calls == 0
    assert again.loaded == TOTAL

    fresh = Experiment.from_toml(exp_path).run(jobs=1)
    pd.testing.assert_frame_equal(stable(resumed.runs), stable(fresh.runs))
    assert resumed.text() == fresh.text() == again.text()
    # a stored sweep keeps no per-task lists in memory; a run's whole result comes from its file
    spec = again.experiment.specs[3]
    assert "tasks" not in again.results[spec.key]
    assert again.result(spec).tasks.equals(fresh.result(spec).tasks)
    assert len(fresh.result(spec).tasks) > 0


def test_damaged_or_stale_files_are_rerun(varying_core, exp_path, tmp_path) -> None:
    out = tmp_path / "out"
    exp = Experiment.from_toml(exp_path)
    exp.run(jobs=1, out=out)
    store = RunStore(out)
    store.path(exp.specs[0].key).write_bytes(b"not parquet")
    (out / "runs" / f".{exp.specs[1].key}.abc.tmp").write_bytes(b"half")
    varying_core.calls = 0
    result = Experiment.from_toml(exp_path).run(jobs=1, out=out)
    assert varying_core.calls == 1
    assert result.loaded == TOTAL - 1
    assert not list((out / "runs").glob(".*.tmp"))


def test_run_file_contents(varying_core, exp_path, tmp_path) -> None:
    out = tmp_path / "out"
    exp = Experiment.from_toml(exp_path)
    exp.run(jobs=1, out=out)
    spec = exp.specs[5]
    frame = pd.read_parquet(RunStore(out).path(spec.key))
    assert len(frame) == 1
    row = frame.iloc[0]
    assert (row["run_key"], row["config"], row["op"], row["repeat"]) == (
        spec.key,
        spec.config,
        spec.op,
        spec.repeat,
    )
    assert row["seed"] == spec.seed
    assert list(row["samples.pkg_watt"]) == pytest.approx(
        [s["pkg_watt"] for s in json.loads(row["result_json"])["samples"]]
    )
    assert json.loads(row["config_json"]) == spec.sim_config
    # the per-task list has its own column; the result text the tables read does not carry it
    assert "tasks" not in json.loads(row["result_json"])
    assert len(json.loads(row["tasks_json"])) > 0


def test_format_1_files_are_still_read(varying_core, exp_path, tmp_path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    out = tmp_path / "out"
    exp = Experiment.from_toml(exp_path)
    exp.run(jobs=1, out=out)
    store = RunStore(out)
    spec = exp.specs[2]
    full = store.load(spec)
    assert full is not None and len(full["tasks"]) > 0
    # a file as format 1 wrote it: the task list inside result_json, no tasks_json
    old = {"run_key": spec.key, "store_format": 1, "result_json": json.dumps(full)}
    pq.write_table(pa.Table.from_pylist([old]), store.path(spec.key))
    assert store.load(spec, tasks=False) == {k: v for k, v in full.items() if k != "tasks"}
    assert store.load(spec) == full
    varying_core.calls = 0
    again = Experiment.from_toml(exp_path).run(jobs=1, out=out)
    assert varying_core.calls == 0 and again.loaded == TOTAL


def test_cli_compare_writes_outputs_and_resumes(varying_core, exp_path, tmp_path) -> None:
    out = tmp_path / "out"
    tables_json = tmp_path / "tables.json"
    args = ["compare", str(exp_path), "--out", str(out), "--jobs", "1", "--json", str(tables_json)]
    first = runner.invoke(app, args)
    assert first.exit_code == 0, first.stderr
    assert "periodic slack_us_p50 (skylake-8x)" in first.stdout
    assert f"{TOTAL} runs executed, 0 loaded" in first.stderr
    for name in ("runs.parquet", "samples.parquet", "tables.txt", "tables.json", "report.html"):
        assert (out / name).is_file(), name
    assert (out / "experiment.toml").read_text() == EXPERIMENT
    assert (out / "tables.txt").read_text() == first.stdout
    assert json.loads(tables_json.read_text())["experiment"]["name"] == "sweep"
    assert len(pd.read_parquet(out / "runs.parquet")) == TOTAL

    varying_core.calls = 0
    second = runner.invoke(app, args)
    assert second.exit_code == 0, second.stderr
    assert varying_core.calls == 0
    assert f"0 runs executed, {TOTAL} loaded" in second.stderr
    assert second.stdout == first.stdout


def test_cli_interrupt_tells_how_to_resume(varying_core, exp_path, tmp_path) -> None:
    out = tmp_path / "out"
    varying_core.fail_at = 5
    result = runner.invoke(app, ["compare", str(exp_path), "--out", str(out), "--jobs", "1"])
    assert result.exit_code == 130
    assert f"interrupted: 4 of {TOTAL} runs stored in {out}; run the same command again" in (
        result.stderr
    )
    varying_core.fail_at = None
    result = runner.invoke(app, ["compare", str(exp_path), "--jobs", "1", "--json", "-"])
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["runs"]["total"] == TOTAL


def test_cli_errors(varying_core, exp_path) -> None:
    result = runner.invoke(app, ["compare", str(exp_path), "--backend", "slurm"])
    assert result.exit_code == 2
    assert "unknown backend 'slurm'; allowed: local, dask, ray" in result.stderr
    result = runner.invoke(app, ["compare", str(exp_path), "--jobs", "0"])
    assert result.exit_code == 2 and "--jobs 0: must be at least 1" in result.stderr


def test_cli_refuses_unusable_outputs_before_running(varying_core, exp_path, tmp_path) -> None:
    afile = tmp_path / "afile"
    afile.write_text("x")
    cases = [
        (["--out", str(afile)], f"--out {afile}: exists and is not a directory"),
        (["--json", str(tmp_path)], f"--json {tmp_path}: is a directory"),
        (["--json", str(tmp_path / "no" / "t.json")], "does not exist"),
    ]
    for extra, message in cases:
        result = runner.invoke(app, ["compare", str(exp_path), "--jobs", "1", *extra])
        assert result.exit_code == 2, result.output
        assert message in result.output
        assert "runs executed" not in result.output


def test_html_report_with_images(varying_core, exp_path, tmp_path) -> None:
    result = Experiment.from_toml(exp_path).run(jobs=1)
    html_path = result.report(tmp_path / "report")
    text = html_path.read_text()
    assert text.startswith("<!DOCTYPE html>")
    images = [line.split('src="')[1].split('"')[0] for line in text.splitlines() if "<img " in line]
    kinds = [Path(i).stem.rsplit("-", 1)[-1] for i in images]
    assert kinds == ["slack_us_p50", "frequency", "idle", "power", "perf_per_watt"]
    for image in images:
        data = (html_path.parent / image).read_bytes()
        assert data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 5000, image
    assert text.count("<pre>") == len(result.table_list)
    assert 'class="better"' in text or 'class="worse"' in text  # significant cells coloured
    assert "pstate-perf" in text and "intel_pstate" in text


# ---- backends ------------------------------------------------------------------------------


def test_execute_is_picklable_at_module_level() -> None:
    import pickle

    assert pickle.loads(pickle.dumps(execute)) is execute


def test_dask_backend_in_process_cluster(varying_core, exp_path) -> None:
    """A threaded Dask cluster in this process (the fake core is patched in here)."""
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(
        n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None
    ) as cluster:
        result = Experiment.from_toml(exp_path).run(
            backend="dask", address=cluster.scheduler_address
        )
    assert varying_core.calls == TOTAL
    local = Experiment.from_toml(exp_path).run(jobs=1)
    pd.testing.assert_frame_equal(stable(result.runs), stable(local.runs))
    assert result.text() == local.text()


SMALL = textwrap.dedent(
    """
    [experiment]
    name = "small"
    repeats = 2
    seed = 3

    [[machine]]
    preset = "skylake-8x"

    [[config]]
    name = "sugov-noninv"
    kernel = "5.2"
    driver = "intel_cpufreq"
    governor = "schedutil"
    invariance = "none"

    [[config]]
    name = "pstate-hwp"
    kernel = "5.2"
    driver = "intel_pstate"
    governor = "powersave"

    [[benchmark]]
    workload = "periodic"
    param = "tasks"
    values = [1, 4]
    params = { duty_pct = 20, period_ms = 16 }
    duration = "300ms"
    """
)


@pytest.fixture(scope="module")
def dask_cluster():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster:
        yield cluster


def test_dask_local_cluster_matches_local_pool(real_core, dask_cluster, tmp_path) -> None:
    """Worker processes of a Dask LocalCluster run the real core; the results equal the local
    pool's (seeds come from the runs, not the backend)."""
    path = tmp_path / "small.toml"
    path.write_text(SMALL)
    exp = Experiment.from_toml(path)
    on_dask = exp.run(backend="dask", address=dask_cluster.scheduler_address, out=tmp_path / "d")
    pooled = Experiment.from_toml(path).run(jobs=2)
    inline = Experiment.from_toml(path).run(jobs=1)
    pd.testing.assert_frame_equal(stable(on_dask.runs), stable(pooled.runs))
    pd.testing.assert_frame_equal(stable(on_dask.runs), stable(inline.runs))
    assert on_dask.text() == pooled.text()
    assert len(list((tmp_path / "d" / "runs").glob("*.parquet"))) == len(exp.specs)


@pytest.mark.skipif(os.environ.get("SCHEDSIM_RAY_TESTS") != "1", reason="set SCHEDSIM_RAY_TESTS=1")
def test_ray_backend(real_core, tmp_path) -> None:
    pytest.importorskip("ray")
    path = tmp_path / "small.toml"
    path.write_text(SMALL)
    on_ray = Experiment.from_toml(path).run(backend="ray", jobs=2)
    inline = Experiment.from_toml(path).run(jobs=1)
    pd.testing.assert_frame_equal(stable(on_ray.runs), stable(inline.runs))


def test_ray_backend_absent_is_a_clean_error(varying_core, exp_path) -> None:
    try:
        import ray  # noqa: F401
    except ImportError:
        pass
    else:
        pytest.skip("ray is installed")
    from schedsim import ConfigError

    with pytest.raises(ConfigError, match=r"pip install 'schedsim\[ray\]'"):
        Experiment.from_toml(exp_path).run(backend="ray")


MULTI = textwrap.dedent(
    """
    [experiment]
    name = "multi"
    repeats = 2
    seed = 2
    significance = "ttest"
    labels = "legacy"

    [[machine]]
    preset = "skylake-8x"

    [[machine]]
    preset = "skylake-8x"
    name = "skylake-percore"
    overrides = { topology = { freq_domain = "core" } }

    [[config]]
    name = "base"
    kernel = "6.12"

    [[config]]
    name = "perf"
    kernel = "6.12"
    governor = "performance"

    [[benchmark]]
    workload = "periodic"
    param = "tasks"
    stride = { pattern = "powertwo", min = 1, max = 4 }
    duration = "100ms"
    summarise = "Subselection"

    [[benchmark]]
    name = "hackbench-pipes"
    workload = "hackbench"
    """
)


def test_machines_unswept_benchmarks_and_options(varying_core, tmp_path) -> None:
    path = tmp_path / "multi.toml"
    path.write_text(MULTI)
    exp = Experiment.from_toml(path)
    assert len(exp.specs) == 2 * 2 * (3 + 1) * 2  # machines x configs x ops x repeats
    per_core = next(s for s in exp.specs if s.machine == "skylake-percore")
    assert len(per_core.sim_config["machine"]["freq_domains"]) == 4
    result = exp.run(jobs=1)
    text = result.text()
    for machine in ("skylake-8x", "skylake-percore"):
        assert f"periodic slack_us_p50 ({machine})" in text
        assert f"hackbench-pipes elapsed_s ({machine})" in text
        assert f"hackbench-pipes turbostat ({machine})" in text
    # Subselection rows, legacy names, t-test marks on Hmean (not on SubHmean)
    assert re.search(r"^SubHmean +tasks-1 ", text, re.M)
    assert re.search(r"^SubHmeanCI tasks-4 ", text, re.M)
    assert re.search(r"^BHmean-95 +tasks-2 ", text, re.M)
    # names without '-': one header row (the empty first one is left out)
    assert "\n\n" not in text.split("periodic slack_us_p50 (skylake-8x)\n", 1)[1][:5]
    assert re.search(r"^Hmean +tasks-1 .*\*", text, re.M)
    assert not re.search(r"^SubHmean +tasks-1 .*\*", text, re.M)
    # the unswept benchmark has one op, named after its metric; lower is better: Amean
    assert re.search(r"^Amean +elapsed_s +\d", text, re.M)
    # ... and its power and perf-per-watt rows are named after the benchmark
    power = text.split("hackbench-pipes package power, W (skylake-8x)\n", 1)[1]
    assert re.search(r"^Amean +hackbench-pipes +\d", power, re.M)
    assert not re.search(r"^Amean +elapsed_s", power.split("\n\n", 1)[0], re.M)
    assert "t-test on the means gives p < 0.10" in text
    html = result.report(tmp_path / "r").read_text()
    assert html.count("<h2>") == 1 + 2 * 2  # configs + machines x benchmarks


def test_turbostat_monitor_leaves_out_the_warmup_intervals():
    # a run with a 0.25 s warm-up sampled every second: its 0.25 s interval is the warm-up's,
    # the monitor reads the two after it; a run shorter than one interval gives its whole value
    from schedsim.compare import turbostat_samples

    result = {
        "sim": {"measured_from_s": 0.25},
        "samples": [
            {"t_s": 0.25, "pkg_watt": 10.0},
            {"t_s": 1.25, "pkg_watt": 30.0},
            {"t_s": 1.5, "pkg_watt": 32.0},
        ],
        "turbostat": {"pkg_watt": 30.4},
    }
    assert turbostat_samples(result, "pkg_watt") == [30.0, 32.0]
    result["sim"]["measured_from_s"] = 0.0
    assert turbostat_samples(result, "pkg_watt") == [10.0, 30.0, 32.0]
    assert turbostat_samples({"samples": [], "turbostat": {"pkg_watt": 7.0}}, "pkg_watt") == [7.0]


def test_split_tasks_cuts_the_task_list_out_of_the_core_json() -> None:
    # the worker's cut gives the same result and task list as parsing the whole text, for a
    # run with tasks and cgroups after them, and for text the cut does not recognise
    import json as _json

    from schedsim import native
    from schedsim.config import build_config
    from schedsim.sweep import split_tasks

    cfg = build_config(
        "skylake-8x",
        "periodic:tasks=3,period_ms=10,duty_pct=30",
        kernel="5.2",
        duration="50ms",
        cgroups=["cg1:max=50000/100000"],
        run_in=["cg1"],
    )
    text = str(native.core_function("run")(_json.dumps(cfg)))
    head, tasks = split_tasks(text)
    whole = _json.loads(text)
    assert tasks is not None and _json.loads(tasks) == whole.pop("tasks")
    assert len(_json.loads(tasks)) == 3
    assert _json.loads(head) == whole and "cg1" in whole["cgroups"]
    loose = _json.dumps({"a": 1, "tasks": [{"pid": 1}]})
    assert split_tasks(loose) == ('{"a":1}', '[{"pid":1}]')
