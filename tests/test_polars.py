"""Result frames as polars DataFrames (`RunResult.to_polars`, `ExperimentResult.to_polars`):
the same rows and values as the pandas frames."""

import pandas as pd
import pytest

import schedsim

pl = pytest.importorskip("polars")


@pytest.fixture(scope="module")
def run():
    return schedsim.run(
        "skylake-8x", "periodic:tasks=2", duration="50ms", trace=True, sample_interval="10ms"
    )


@pytest.mark.parametrize("name", ["tasks", "cpus", "samples"])
def test_run_frames_match_pandas(run, name) -> None:
    pd_frame, pl_frame = getattr(run, name), run.to_polars(name)
    assert isinstance(pl_frame, pl.DataFrame)
    assert pl_frame.columns == list(pd_frame.columns)
    back = pl_frame.to_pandas()
    pd.testing.assert_frame_equal(back, pd_frame.reset_index(drop=True), check_dtype=False)


def test_events_keep_their_time(run) -> None:
    ev = run.to_polars("events")
    assert ev.columns[0] == "Time"
    assert ev.height == len(run.events)
    assert ev["Time"].to_list() == list(run.events.index)
    switches = ev.filter(pl.col("event") == "sched_switch")
    assert switches.height == len(run.df_event("sched_switch"))


def test_unknown_frames_are_named(run) -> None:
    with pytest.raises(ValueError, match="allowed: tasks, cpus, cgroups, samples, events"):
        run.to_polars("trace")


def test_experiment_frames(real_core, tmp_path) -> None:
    from schedsim import Experiment

    path = tmp_path / "exp.toml"
    path.write_text(
        """
[experiment]
name = "pl"
repeats = 2

[[machine]]
preset = "skylake-8x"

[[config]]
name = "a"
kernel = "6.12"

[[config]]
name = "b"
kernel = "6.12"
governor = "performance"

[[benchmark]]
workload = "periodic"
param = "tasks"
values = [1, 2]
duration = "50ms"
"""
    )
    res = Experiment.from_toml(path).run(jobs=1)
    runs = res.to_polars("runs")
    assert runs.height == len(res.runs) == 8
    assert sorted(runs["config"].unique().to_list()) == ["a", "b"]
    tables = res.to_polars("tables")
    assert tables.height == len(res.tables) > 0


def test_a_run_without_cgroups_has_the_same_typed_cgroup_columns() -> None:
    none = schedsim.run("skylake-8x", "periodic", duration="20ms")
    some = schedsim.run("skylake-8x", "periodic", duration="20ms", cgroups=["cg1"], run_in=["cg1"])
    assert none.cgroups.empty and len(some.cgroups) == 1
    assert list(none.cgroups.columns) == list(some.cgroups.columns)
    assert none.to_polars("cgroups").schema == some.to_polars("cgroups").schema
