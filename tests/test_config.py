"""build_config: defaults per kernel and machine, validation against the workload catalog."""

import pytest

from schedsim.config import (
    build_config,
    default_driver,
    kernel_default_governor,
    kernel_default_invariance,
    parse_kernel_version,
    resolve_cpufreq,
)
from schedsim.errors import ConfigError
from schedsim.machines import load_machine
from schedsim.spec import SimConfig


def test_build_config_is_a_valid_sim_config(fake_core) -> None:
    cfg = build_config(
        "skylake-8x",
        "periodic:tasks=6,period_ms=16,duty_pct=40",
        kernel="5.2",
        sets=["sched_migration_cost_ns=500000", "features.feec=per-pd"],
        seed=7,
        duration="2s",
    )
    SimConfig.model_validate(cfg)
    assert cfg["workload"] == {
        "name": "periodic",
        "params": {"tasks": 6, "period_ms": 16, "duty_pct": 40},
    }
    assert cfg["kernel"] == {"version": "5.2", "hz": 250, "features": {"feec": "per-pd"}}
    assert cfg["tunables"] == {"sched_migration_cost_ns": 500000}
    assert cfg["seed"] == 7
    assert cfg["duration_ns"] == 2_000_000_000
    assert cfg["trace"] is False
    assert len(cfg["machine"]["cpus"]) == 8
    assert "custom" not in cfg["workload"]


def test_float_parameter_accepts_an_int(fake_core) -> None:
    cfg = build_config("skylake-8x", "hackbench:ratio=2", duration="1s")
    assert cfg["workload"]["params"]["ratio"] == 2.0
    assert isinstance(cfg["workload"]["params"]["ratio"], float)


def test_int_parameter_refuses_a_float(fake_core) -> None:
    with pytest.raises(ConfigError, match="tasks=2.5: expected an integer"):
        build_config("skylake-8x", "periodic:tasks=2.5")


def test_unknown_workload_lists_the_allowed_ones(fake_core) -> None:
    with pytest.raises(ConfigError) as err:
        build_config("skylake-8x", "nosuch")
    assert str(err.value) == "unknown workload 'nosuch'; allowed: ftrace, hackbench, periodic"


def test_unknown_parameter_lists_the_allowed_ones(fake_core) -> None:
    with pytest.raises(ConfigError) as err:
        build_config("skylake-8x", "periodic:tasks=2,speed=3")
    assert str(err.value) == (
        "workload 'periodic': unknown parameter 'speed'; allowed: tasks, period_ms, duty_pct"
    )


@pytest.mark.parametrize(
    ("kernel", "driver", "governor", "invariance"),
    [
        # Before v5.8 intel_pstate is active everywhere; FIE arrives in v5.7.
        ("5.2", "intel_pstate", "powersave", "none"),
        ("5.7", "intel_pstate", "powersave", "turbo:4"),
        # HWP part: active from v5.8 on too.
        ("6.12", "intel_pstate", "powersave", "turbo:4"),
    ],
)
def test_x86_defaults_follow_the_kernel(kernel, driver, governor, invariance) -> None:
    m = load_machine("skylake-8x")
    version = parse_kernel_version(kernel)
    drv = default_driver(m, version)
    assert (drv, kernel_default_governor(drv), kernel_default_invariance(m, version)) == (
        driver,
        governor,
        invariance,
    )
    choice = resolve_cpufreq(m, kernel)
    assert (choice.driver, choice.governor, choice.invariance) == (driver, governor, invariance)


def test_no_hwp_means_passive_from_5_8() -> None:
    m = load_machine("skylake-8x", {"machine": {"hwp": False}})
    assert resolve_cpufreq(m, "5.7").driver == "intel_pstate"
    drv = default_driver(m, (5, 8))
    assert (drv, kernel_default_governor(drv)) == ("intel_cpufreq", "schedutil")


def test_arm_defaults() -> None:
    m = load_machine("sdm845")
    drv = default_driver(m, (6, 12))
    assert (drv, kernel_default_governor(drv), kernel_default_invariance(m, (6, 12))) == (
        "qcom-cpufreq-hw",
        "schedutil",
        "cpufreq",
    )


def test_active_intel_pstate_offers_only_its_own_governors() -> None:
    m = load_machine("skylake-8x")
    with pytest.raises(ConfigError, match="allowed: performance, powersave"):
        resolve_cpufreq(m, "5.2", driver="intel_pstate", governor="schedutil")
    choice = resolve_cpufreq(
        m, "5.2", driver="intel_cpufreq", governor="schedutil", invariance="turbo:4"
    )
    assert (choice.governor, choice.invariance) == ("schedutil", "turbo:4")


@pytest.mark.parametrize(
    ("machine", "kwargs", "match"),
    [
        ("skylake-8x", {"governor": "schedutil"}, "allowed: performance, powersave"),
        ("skylake-8x", {"driver": "qcom-cpufreq-hw"}, "allowed: intel_pstate, intel_cpufreq"),
        ("skylake-8x", {"invariance": "turbo:5"}, "turbo bins 1..4"),
        ("skylake-8x", {"invariance": "cpufreq"}, "Arm's cpufreq-based scale"),
        ("skylake-8x", {"invariance": "amd-midpoint"}, "for AMD machines"),
        ("skylake-8x", {"invariance": "fast"}, "allowed: none, turbo:N, base"),
        ("sdm845", {"invariance": "turbo:4"}, "has no turbo table"),
        ("sdm845", {"governor": "userspace"}, "allowed: performance, powersave, schedutil"),
        ("skylake-8x", {"kernel": "six"}, "expected a version MAJOR.MINOR"),
    ],
)
def test_cpufreq_errors(machine, kwargs, match) -> None:
    kernel = kwargs.pop("kernel", "6.12")
    with pytest.raises(ConfigError, match=match):
        resolve_cpufreq(load_machine(machine), kernel, **kwargs)


def test_passive_driver_takes_generic_governors() -> None:
    choice = resolve_cpufreq(
        load_machine("skylake-8x"), "5.2", driver="intel_cpufreq", governor="powersave"
    )
    assert (choice.driver, choice.governor, choice.invariance) == (
        "intel_cpufreq",
        "powersave",
        "none",
    )


def test_seed_and_duration_checks(fake_core) -> None:
    with pytest.raises(ConfigError, match="seed"):
        build_config("skylake-8x", "periodic", seed=-1)
    with pytest.raises(ConfigError, match="must be positive"):
        build_config("skylake-8x", "periodic", duration="0s")


def test_custom_workload_is_validated(fake_core) -> None:
    from schedsim import programs as p

    good = p.custom_workload([p.task("t", p.loop(p.run(1000), p.sleep(1000)))])
    cfg = build_config("skylake-8x", good, duration="10ms")
    assert cfg["workload"]["custom"]["tasks"][0]["program"][0]["op"] == "loop"
    bad = p.custom_workload([p.task("t", {"op": "spin", "ns": 3})])
    with pytest.raises(ConfigError, match="custom workload"):
        build_config("skylake-8x", bad, duration="10ms")


def test_poll_ops_are_validated(fake_core) -> None:
    from schedsim import programs as p

    server = p.task("srv", p.loop(p.recv_any("q0", "q1"), p.run(1000), p.send_polled("r0", "r1")))
    chans = [p.channel(c, capacity=1) for c in ("q0", "q1", "r0", "r1")]
    good = p.custom_workload([server], channels=chans)
    cfg = build_config("skylake-8x", good, duration="10ms")
    body = cfg["workload"]["custom"]["tasks"][0]["program"][0]["body"]
    assert body[0] == {"op": "recv_any", "chans": ["q0", "q1"]}
    assert body[2] == {"op": "send_polled", "chans": ["r0", "r1"]}
    empty = p.custom_workload([p.task("t", p.recv_any())], channels=chans)
    with pytest.raises(ConfigError, match="custom workload"):
        build_config("skylake-8x", empty, duration="10ms")


def test_row_lock_and_group_commit_ops_are_validated(fake_core) -> None:
    from schedsim import programs as p

    txn = p.loop(
        p.lock_row("branches", 10),
        p.run(1000),
        p.group_commit("wal", 450_000),
        p.unlock_rows("branches"),
    )
    cfg = build_config("skylake-8x", p.custom_workload([p.task("t", txn)]), duration="10ms")
    body = cfg["workload"]["custom"]["tasks"][0]["program"][0]["body"]
    assert body[0] == {"op": "lock_row", "table": "branches", "rows": 10}
    assert body[2] == {"op": "group_commit", "log": "wal", "ns": 450_000}
    assert body[3] == {"op": "unlock_rows", "table": "branches"}
    bad_ops = (
        {"op": "lock_row", "table": "b", "rows": 0},
        {"op": "group_commit", "log": "w", "ns": -1},
    )
    for bad in bad_ops:
        with pytest.raises(ConfigError, match="custom workload"):
            build_config("skylake-8x", p.custom_workload([p.task("t", bad)]), duration="10ms")


def test_clock_affinity_and_journal_ops_are_validated(fake_core) -> None:
    from schedsim import programs as p

    prog = [
        p.set_affinity(1, 2),
        p.clock("tick", 10_000_000, unique=True),
        p.journal_commit("j"),
        p.journal_wait("j"),
        p.journal_done("j"),
    ]
    cfg = build_config("skylake-8x", p.custom_workload([p.task("t", *prog)]), duration="10ms")
    ops = cfg["workload"]["custom"]["tasks"][0]["program"]
    assert ops[0] == {"op": "set_affinity", "cpus": [1, 2]}
    assert ops[1] == {
        "op": "clock",
        "name": "tick",
        "period_ns": 10_000_000,
        "unique": True,
        "relative": True,
        "origin_ns": 0,
    }
    assert [op["op"] for op in ops[2:]] == ["journal_commit", "journal_wait", "journal_done"]
    bad_ops = (
        {"op": "clock", "name": "c", "period_ns": -1},
        {"op": "clock", "period_ns": 1},
        {"op": "set_affinity", "cpus": [-1]},
        {"op": "set_affinity"},
        {"op": "journal_commit"},
        {"op": "journal_done", "journal": "j", "extra": 1},
    )
    for bad in bad_ops:
        with pytest.raises(ConfigError, match="custom workload"):
            build_config("skylake-8x", p.custom_workload([p.task("t", bad)]), duration="10ms")


def test_tcp_channels_are_validated(fake_core) -> None:
    from schedsim import programs as p

    tasks = [p.task("a", p.send("c")), p.task("b", p.recv("c"))]
    good = p.custom_workload(tasks, channels=[p.channel("c", capacity=1, tcp=True)])
    cfg = build_config("skylake-8x", good, duration="10ms")
    assert cfg["workload"]["custom"]["channels"][0]["tcp"] is True
    plain = p.custom_workload(tasks, channels=[p.channel("c")])
    cfg = build_config("skylake-8x", plain, duration="10ms")
    assert cfg["workload"]["custom"]["channels"][0].get("tcp", False) is False
    bad = p.custom_workload(tasks, channels=[{"name": "c", "tcp": "sometimes"}])
    with pytest.raises(ConfigError, match="tcp"):
        build_config("skylake-8x", bad, duration="10ms")


def test_channel_write_space_and_pipe_page_are_validated(fake_core) -> None:
    from schedsim import programs as p

    tasks = [p.task("a", p.send("c")), p.task("b", p.recv("c"))]
    good = p.custom_workload(tasks, channels=[p.channel("c", capacity=4, write_space=1)])
    cfg = build_config("skylake-8x", good, duration="10ms")
    assert cfg["workload"]["custom"]["channels"][0]["write_space"] == 1
    plain = p.custom_workload(tasks, channels=[p.channel("c", capacity=4)])
    cfg = build_config("skylake-8x", plain, duration="10ms")
    assert cfg["workload"]["custom"]["channels"][0].get("write_space") is None
    pipe = p.custom_workload(tasks, channels=[p.channel("c", capacity=4, pipe_page=2)])
    cfg = build_config("skylake-8x", pipe, duration="10ms")
    assert cfg["workload"]["custom"]["channels"][0]["pipe_page"] == 2
    bad = p.custom_workload(tasks, channels=[p.channel("c", capacity=5, pipe_page=2)])
    with pytest.raises(ConfigError, match="pipe_page must divide the capacity \\(5\\)"):
        build_config("skylake-8x", bad, duration="10ms")
    for bad_space, needle in [(4, "below its capacity \\(4\\), got 4"), (-1, "write_space")]:
        bad = p.custom_workload(tasks, channels=[p.channel("c", capacity=4, write_space=bad_space)])
        with pytest.raises(ConfigError, match=needle):
            build_config("skylake-8x", bad, duration="10ms")


def test_rt_app_file_must_exist(fake_core, monkeypatch) -> None:
    from schedsim import config as config_mod

    catalog = {"rt-app": {"name": "rt-app", "params": [{"name": "path", "default": None}]}}
    monkeypatch.setattr(config_mod, "workload_catalog", lambda: catalog)
    with pytest.raises(ConfigError, match="not found"):
        build_config("skylake-8x", "rt-app:/no/such/file.json")


def test_rt_app_string_takes_a_path_then_key_value_parameters() -> None:
    from schedsim.config import parse_workload

    assert parse_workload("rt-app:a/b.json").params == {"path": "a/b.json"}
    got = parse_workload("rt-app:a/b.json,calibration=max").params
    assert got == {"path": "a/b.json", "calibration": "max"}
    # a comma not followed by key=value stays in the path; numbers are read as numbers
    got = parse_workload("rt-app: x,y.json , calibration = 1200").params
    assert got == {"path": "x,y.json", "calibration": 1200}
    with pytest.raises(ConfigError, match="'path' given twice"):
        parse_workload("rt-app:x.json,path=y.json")
    with pytest.raises(ConfigError, match=r"rt-app:PATH\[,key=value...\]"):
        parse_workload("rt-app:,calibration=max")


def test_open_ended_workload_needs_a_duration(fake_core) -> None:
    with pytest.raises(ConfigError, match="'periodic' is open-ended: give a duration"):
        build_config("skylake-8x", "periodic:tasks=2")
    cfg = build_config("skylake-8x", "hackbench:groups=2")  # fixed work: runs to completion
    assert cfg["duration_ns"] is None


def test_custom_is_not_a_workload_string(fake_core) -> None:
    with pytest.raises(ConfigError, match="schedsim.programs"):
        build_config("skylake-8x", "custom", duration="1s")


def test_power_partition_has_no_cpufreq_driver() -> None:
    """A shared-processor LPAR runs at the frequency the firmware sets: no driver, the fixed
    frequency run as `performance`."""
    m = load_machine("power10-smt8")
    choice = resolve_cpufreq(m, "6.2")
    assert (choice.driver, choice.governor, choice.invariance) == (None, "performance", "none")
    with pytest.raises(ConfigError, match="has no cpufreq driver"):
        resolve_cpufreq(m, "6.2", governor="schedutil")
    with pytest.raises(ConfigError, match="unknown driver 'cpufreq-dt'"):
        resolve_cpufreq(m, "6.2", driver="cpufreq-dt")


def test_api_arguments_of_the_wrong_type_are_config_errors(fake_core) -> None:
    with pytest.raises(ConfigError, match="invariance 4: expected a string"):
        build_config("skylake-8x", "periodic", invariance=4, duration="10ms")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"overrides \[1, 2\]: expected a mapping"):
        load_machine("skylake-8x", [1, 2])  # type: ignore[arg-type]


def test_numbers_the_core_cannot_read_name_their_key(fake_core) -> None:
    from schedsim import programs as p
    from schedsim.runner import run

    nan = p.custom_workload(tasks=[p.task("a", p.run(float("nan")))])
    with pytest.raises(ConfigError, match=r"tasks\[0\]\.program\[0\]\.cycles = nan: must be"):
        run("skylake-8x", nan, duration="10ms")
    huge = p.custom_workload(tasks=[p.task("a", p.sleep(2**70))])
    with pytest.raises(ConfigError, match=r"program\[0\]\.ns = 1180591620717411303424: out of"):
        run("skylake-8x", huge, duration="10ms")
    assert fake_core.configs == []


def test_set_values_true_and_false_are_booleans() -> None:
    from schedsim.config import parse_sets

    s = parse_sets(
        ["features.RT_RUNTIME_SHARE=true", "sched_energy_aware=False", "sched_nr_migrate=8"]
    )
    assert s.features == {"RT_RUNTIME_SHARE": True}
    assert s.tunables == {"sched_energy_aware": False, "sched_nr_migrate": 8}
