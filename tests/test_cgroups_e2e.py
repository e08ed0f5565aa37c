"""cgroups through the compiled core: cpu.max throttling, cpu.weight shares, the period timers'
phase (41abdba9), cpu.max.burst, fork inheritance, one workload copy per group, rt-app's
taskgroup, the CLI and an experiment file.

Skipped only when the extension is not built (`make test` builds it)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

import schedsim
from schedsim import programs as p
from schedsim.cli import app
from schedsim.results import CPU_STAT_FIELDS

pytestmark = pytest.mark.usefixtures("real_core")

runner = CliRunner()


def spin(name: str, **kw) -> dict:
    """A task that never sleeps."""
    return p.task(name, p.loop(p.run(1_000_000)), **kw)


def test_every_key_reaches_the_core() -> None:
    r = schedsim.run(
        "skylake-8x",
        "periodic:tasks=2",
        duration="200ms",
        cgroups=[
            {
                "path": "a",
                "weight": 300,
                "max": "50000 100000",
                "max_burst": 10000,
                "uclamp_min": 10,
                "uclamp_max": "80.5",
            },
            {"path": "a/b", "max": "max 20000"},
            "c:max=1600000/100000,uclamp_max=max",
        ],
        run_in=["a/b", "c"],
    )
    assert list(r.cgroups["path"]) == ["a", "a/b", "c"]  # no root group
    for field in CPU_STAT_FIELDS:
        assert field in r.cgroups.columns
    # a/b's usage is part of a's, as in the kernel
    assert r.cpu_stat("a")["usage_usec"] >= r.cpu_stat("a/b")["usage_usec"] > 0


def test_quota_throttles() -> None:
    """Two spinning tasks under a quota of half a CPU get about half a CPU."""
    r = schedsim.run(
        "skylake-8x",
        p.custom_workload(tasks=[spin("s", instances=2, cgroup="cg1")]),
        duration="1s",
        cgroups=["cg1:max=50000/100000"],
    )
    stat = r.cpu_stat("cg1")
    assert 9 <= stat["nr_periods"] <= 11
    assert stat["nr_throttled"] >= stat["nr_periods"] - 1
    assert stat["throttled_usec"] > 0
    # at most one quota per refill plus the first one, plus a slice per CPU
    assert 450_000 <= stat["usage_usec"] <= (stat["nr_periods"] + 1) * 50_000 + 2 * 5_000
    assert stat["nr_bursts"] == 0 and stat["burst_usec"] == 0


def test_weights_share_a_cpu() -> None:
    r = schedsim.run(
        "skylake-8x",
        p.custom_workload(
            tasks=[spin("a", cpus=[0], cgroup="hi"), spin("b", cpus=[0], cgroup="lo")]
        ),
        duration="1s",
        cgroups=["hi:weight=200", "lo:weight=100"],
    )
    hi, lo = r.cpu_stat("hi")["usage_usec"], r.cpu_stat("lo")["usage_usec"]
    assert 1.8 < hi / lo < 2.2
    assert r.cpu_stat("hi")["nr_periods"] == 0  # no quota, no period timer


@pytest.mark.parametrize(
    ("kernel", "phase", "aligned"),
    [
        ("5.15", None, True),
        ("6.4", None, False),
        ("6.4", "aligned", True),
        ("5.15", "interleaved", False),
    ],
)
def test_period_timer_phase(kernel, phase, aligned) -> None:
    """Before 6.4 every group's period timer fires at multiples of the period; from 6.4
    (41abdba9) each group gets its own phase. `cfs_bw_timer_phase` overrides the version."""
    sets = {} if phase is None else {"features.cfs_bw_timer_phase": phase}
    r = schedsim.run(
        "skylake-8x",
        p.custom_workload(tasks=[spin("a", cgroup="a"), spin("b", cgroup="b")]),
        duration="500ms",
        kernel=kernel,
        sets=sets,
        cgroups=["a:max=50000/100000", "b:max=50000/100000"],
    )
    phases = [r.cpu_stat(g)["period_phase_us"] for g in ("a", "b")]
    if aligned:
        assert phases == [0, 0]
    else:
        assert len(set(phases)) == 2 and all(0 <= x < 100_000 for x in phases)


def test_bad_timer_phase_is_refused() -> None:
    with pytest.raises(schedsim.ConfigError, match="cfs_bw_timer_phase"):
        schedsim.run(
            "skylake-8x",
            "periodic",
            duration="10ms",
            sets={"features.cfs_bw_timer_phase": "sideways"},
            cgroups=["a:max=50000/100000"],
        )


def test_burst_saves_idle_quota() -> None:
    """A task running 80 ms every 400 ms under 50 ms / 100 ms: with cpu.max.burst it spends
    quota saved while asleep and is throttled less."""
    wl = p.custom_workload(
        tasks=[p.task("b", p.loop(p.run_for(80_000_000), p.sleep(320_000_000)), cgroup="cg1")]
    )

    def stat(burst: int) -> dict:
        r = schedsim.run(
            "skylake-8x",
            wl,
            duration="2s",
            cgroups=[{"path": "cg1", "max": "50000 100000", "max_burst": burst}],
        )
        return r.cpu_stat("cg1")

    plain, burst = stat(0), stat(50_000)
    assert plain["nr_bursts"] == 0 and plain["burst_usec"] == 0
    assert burst["nr_bursts"] > 0 and burst["burst_usec"] > 0
    assert burst["nr_throttled"] < plain["nr_throttled"]
    assert burst["throttled_usec"] < plain["throttled_usec"]


def test_forked_tasks_inherit_the_group() -> None:
    wl = p.custom_workload(
        tasks=[
            p.task("parent", p.fork("child"), p.fork("child"), p.wait(), p.wait(), cgroup="cg1"),
            p.task("child", p.run(300_000_000), start=False),
            p.task("other", p.run(100_000_000)),
        ]
    )
    r = schedsim.run("skylake-8x", wl, cgroups=["cg1:max=100000/100000"])
    tasks = r.tasks
    in_cg1 = tasks[tasks["comm"].isin(["parent", "child"])]["cpu_ns"].sum()
    assert len(tasks[tasks["comm"] == "child"]) == 2
    assert r.cpu_stat("cg1")["usage_usec"] == pytest.approx(in_cg1 / 1000, abs=2)


def test_one_copy_per_group() -> None:
    alone = schedsim.run("skylake-8x", "periodic:tasks=2", duration="200ms")
    copies = schedsim.run(
        "skylake-8x", "periodic:tasks=2", duration="200ms", cgroups=["x", "y"], run_in=["x", "y"]
    )
    assert len(copies.tasks) == 2 * len(alone.tasks)
    assert copies.cpu_stat("x")["usage_usec"] > 0 and copies.cpu_stat("y")["usage_usec"] > 0


def test_cli_json_and_summary() -> None:
    args = [
        "run",
        "-m",
        "skylake-8x",
        "-w",
        "periodic:tasks=4,period_ms=10,duty_pct=80",
        "--duration",
        "300ms",
        "--cgroup",
        "cg1:max=100000/100000,weight=200",
        "--cgroup",
        "cg2:max=50000/100000,max_burst=20000",
        "--in-cgroup",
        "cg1",
        "--in-cgroup",
        "cg2",
    ]
    result = runner.invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert set(data["cgroups"]) == {"cg1", "cg2"}
    for stat in data["cgroups"].values():
        assert set(CPU_STAT_FIELDS) <= set(stat)
        assert stat["nr_throttled"] > 0
    again = runner.invoke(app, [*args, "--json"])
    assert json.loads(again.stdout)["cgroups"] == data["cgroups"]  # deterministic
    summary = runner.invoke(app, args)
    assert summary.exit_code == 0, summary.stderr
    assert "cgroups: cpu.weight, cpu.max, cpu.stat" in summary.stdout
    assert "period_phase_us" in summary.stdout  # what the core adds is shown too


def test_experiment_with_cgroups(tmp_path) -> None:
    path = tmp_path / "exp.toml"
    path.write_text(
        textwrap.dedent(
            """
            [experiment]
            name = "cg"
            repeats = 1

            [[machine]]
            preset = "skylake-8x"

            [[config]]
            name = "aligned"
            kernel = "6.4"
            features = { cfs_bw_timer_phase = "aligned" }

            [[config]]
            name = "interleaved"
            kernel = "6.4"

            [[benchmark]]
            workload = "periodic"
            param = "tasks"
            values = [2]
            params = { duty_pct = 80, period_ms = 10 }
            duration = "300ms"
            cgroups = [
                { path = "cg1", max = "50000 100000" },
                { path = "cg2", max = "50000/100000" },
            ]
            run_in = ["cg1", "cg2"]
            metrics = ["run_us_mean", "cg_cg1_throttled_usec"]
            """
        )
    )
    res = schedsim.Experiment.from_toml(path).run(jobs=1)
    runs = res.runs.set_index("config")
    assert runs.loc["aligned", "cgroups.cg1.period_phase_us"] == 0
    assert runs.loc["interleaved", "cgroups.cg1.period_phase_us"] > 0
    assert (runs["cgroups.cg1.nr_throttled"] > 0).all()
    assert "cg_cg1_throttled_usec" in res.text()


RTAPP_TG = "crates/schedsim-core/data/rt-app/tutorial/example10.json"  # thread0 in /tg1


def test_rt_app_taskgroup_creates_or_uses_the_group() -> None:
    path = Path(__file__).resolve().parents[1] / RTAPP_TG
    created = schedsim.run("skylake-8x", f"rt-app:{path}")
    assert list(created.cgroups["path"]) == ["tg1"]  # created with the default settings
    assert created.cpu_stat("tg1")["nr_periods"] == 0
    thread = created.tasks[created.tasks["comm"].str.startswith("thread0")]
    assert created.cpu_stat("tg1")["usage_usec"] == pytest.approx(
        thread["cpu_ns"].sum() / 1000, abs=2
    )
    capped = schedsim.run("skylake-8x", f"rt-app:{path}", cgroups=["tg1:max=1000/100000"])
    stat = capped.cpu_stat("tg1")
    assert stat["nr_throttled"] > 0
    assert stat["usage_usec"] < created.cpu_stat("tg1")["usage_usec"] / 5
    summary = runner.invoke(app, ["run", "-m", "skylake-8x", "-w", f"rt-app:{path}"])
    assert summary.exit_code == 0, summary.stderr
    rows = {line.split()[1]: line for line in summary.stdout.splitlines() if line.startswith("│ ")}
    assert "max 100000" in rows["cpu.max"] and "100" in rows["cpu.weight"]
