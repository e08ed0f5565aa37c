"""cgroup v2 groups on the Python side (on the fake core): the cpu controller files' syntax
(cpu.weight, cpu.max, cpu.max.burst, cpu.uclamp.*), the core's CgroupSpec and its checks, the
CLI flags, experiment files and the results' cpu.stat."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

import schedsim
from schedsim import ConfigError, Experiment
from schedsim import programs as p
from schedsim.cli import app
from schedsim.config import (
    build_config,
    parse_cgroup,
    parse_cgroup_option,
    parse_cgroups,
    parse_cpu_max,
    parse_uclamp,
)
from schedsim.results import CPU_STAT_FIELDS, RunResult, cgroup_metric
from schedsim.spec import CgroupSpec, SimConfig

runner = CliRunner()

RUN = ["run", "-m", "skylake-8x", "-w", "periodic:tasks=2", "--duration", "200ms"]


# ---- cpu.max and the other files ------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("max", (None, 100_000)),
        ("max 50000", (None, 50_000)),
        ("max/50000", (None, 50_000)),
        ("50000 100000", (50_000, 100_000)),
        ("  50000   100000 ", (50_000, 100_000)),
        ("1600000/100000", (1_600_000, 100_000)),
        ("25000", (25_000, 100_000)),  # the quota alone: the period keeps its default
        (25000, (25_000, 100_000)),
        ("1000 1000", (1_000, 1_000)),
        ("1000 1000000", (1_000, 1_000_000)),
    ],
)
def test_cpu_max_forms(text, expected) -> None:
    assert parse_cpu_max(text, "cg1") == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("999 100000", "cgroup 'cg1': max = '999 100000': the quota must be 1000.."),
        ("50000 999", "cgroup 'cg1': max = '50000 999': the period must be 1000..1000000 µs"),
        ("50000 1000001", "the period must be 1000..1000000 µs"),
        ("lots 100000", 'the quota \'lots\' is not a number; "QUOTA PERIOD", "QUOTA", '),
        ("50000 often", "the period 'often' is not a number"),
        ("1 2 3", 'expected "QUOTA PERIOD", "QUOTA", "max" or "max PERIOD" in µs'),
        ("1/2/3", 'expected "QUOTA PERIOD"'),
        ("", 'expected "QUOTA PERIOD"'),
        (True, "max = True: expected"),
        (-5, "the quota '-5' is not a number"),
    ],
)
def test_cpu_max_errors_name_the_cgroup_and_key(text, expected) -> None:
    with pytest.raises(ConfigError) as err:
        parse_cpu_max(text, "cg1")
    assert expected in str(err.value)
    assert str(err.value).startswith("cgroup 'cg1': max = ")


def test_uclamp_is_max_or_a_percentage() -> None:
    assert parse_uclamp("max") == 100.0
    assert parse_uclamp("12.5") == 12.5
    assert parse_uclamp(20) == 20.0
    assert parse_uclamp(12.345) == 12.35  # two decimals, as cgroup_parse_float keeps
    for bad in ("101", -1, "x", "50%", True):
        with pytest.raises(ConfigError, match=r"uclamp_max = .*: expected \"max\" or a perc"):
            parse_uclamp(bad, "cg1", "uclamp_max")


def test_a_definition_in_file_syntax_becomes_a_cgroup_spec() -> None:
    spec = parse_cgroup(
        {
            "path": "cg1",
            "weight": "200",
            "max": "50000 100000",
            "max_burst": 10000,
            "uclamp_min": "10",
            "uclamp_max": "max",
        }
    )
    assert spec == {
        "path": "cg1",
        "weight": 200,
        "quota_us": 50_000,
        "period_us": 100_000,
        "burst_us": 10_000,
        "uclamp_min": 10.0,
        "uclamp_max": 100.0,
    }
    # defaults: the kernel's for a new group
    assert parse_cgroup({"path": "a"}) == CgroupSpec(path="a").model_dump()
    assert CgroupSpec(path="a").model_dump() == {
        "path": "a",
        "weight": 100,
        "quota_us": None,
        "period_us": 100_000,
        "burst_us": 0,
        "uclamp_min": 0.0,
        "uclamp_max": 100.0,
    }


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        (
            {"path": "cg1", "quota": 5},
            "cgroup 'cg1': unknown key 'quota'; allowed: path, weight, max, max_burst, "
            "uclamp_min, uclamp_max",
        ),
        ({"path": "cg1", "weight": 0}, "cgroup 'cg1': weight = 0: cpu.weight allows 1..10000"),
        ({"path": "cg1", "weight": 10001}, "weight = 10001: cpu.weight allows 1..10000"),
        ({"path": "cg1", "weight": "heavy"}, "weight = 'heavy': cpu.weight allows 1..10000"),
        ({"path": "cg1", "weight": 1.5}, "weight = 1.5: cpu.weight allows 1..10000"),
        (
            {"path": "cg1", "max_burst": 5000},
            "cgroup 'cg1': max_burst = 5000: cpu.max.burst needs a quota",
        ),
        (
            {"path": "cg1", "max": "max 100000", "max_burst": 5000},
            "max_burst = 5000: cpu.max.burst needs a quota",
        ),
        (
            {"path": "cg1", "max": "20000 100000", "max_burst": 30000},
            "cgroup 'cg1': max_burst = 30000: allowed 0..20000 µs (at most the quota)",
        ),
        (
            {"path": "cg1", "uclamp_min": 60, "uclamp_max": 50},
            "cgroup 'cg1': uclamp_min = 60 is above uclamp_max = 50",
        ),
        ({"path": "/"}, "cgroup path '/': expected a path relative to the root group"),
        ({"path": "/cg1"}, "(no leading '/'; the root group itself cannot be configured)"),
        ({"path": "a//b"}, "cgroup path 'a//b': expected a path like 'cg1' or 'a/b'"),
        ({"path": "a/../b"}, "'..' is not allowed"),
        ({"path": "a:b"}, "component 'a:b': allowed characters are letters, digits and"),
        ({"weight": 5}, "missing path"),
    ],
)
def test_definition_errors_name_the_cgroup_and_key(entry, expected) -> None:
    with pytest.raises(ConfigError) as err:
        parse_cgroup(entry)
    assert expected in str(err.value)


def test_a_list_keeps_parents_before_children() -> None:
    specs = parse_cgroups([{"path": "a"}, {"path": "a/b", "weight": 50}, {"path": "c"}])
    assert [g["path"] for g in specs] == ["a", "a/b", "c"]
    # a mapping of path -> definition
    specs = parse_cgroups({"a": {"max": "max"}, "a/b": {"max": "20000 100000"}})
    assert [(g["path"], g["quota_us"]) for g in specs] == [("a", None), ("a/b", 20000)]
    with pytest.raises(ConfigError, match="cgroup 'a': path = 'b' differs from its name"):
        parse_cgroups({"a": {"path": "b"}})
    with pytest.raises(ConfigError, match="^cgroup 'a' is defined twice$"):
        parse_cgroups([{"path": "a"}, {"path": "a", "weight": 5}])
    with pytest.raises(ConfigError, match="cgroup 'a/b': its parent 'a' is not defined"):
        parse_cgroups([{"path": "a/b"}])
    with pytest.raises(ConfigError, match="cgroup 'a/b': its parent 'a' must be defined before"):
        parse_cgroups([{"path": "a/b"}, {"path": "a"}])


# ---- the CLI form ---------------------------------------------------------------------------


def test_cli_form() -> None:
    assert parse_cgroup_option("cg1") == {"path": "cg1"}
    assert parse_cgroup_option("cg1:max=1600000/100000,weight=200") == {
        "path": "cg1",
        "max": "1600000/100000",
        "weight": "200",
    }
    assert parse_cgroup_option("a/b:max=max,max_burst=0,uclamp_min=12.5,uclamp_max=max") == {
        "path": "a/b",
        "max": "max",
        "max_burst": "0",
        "uclamp_min": "12.5",
        "uclamp_max": "max",
    }
    # the file's own form, with a space, works when quoted
    assert parse_cgroups(["cg1:max=50000 100000"])[0]["quota_us"] == 50000


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", "--cgroup: empty"),
        ("cg1:", "--cgroup 'cg1:': nothing after ':'"),
        ("cg1:max", "--cgroup 'cg1:max': bad setting 'max'; expected PATH[:key=value,...]"),
        (
            "cg1:quota=5",
            "--cgroup 'cg1:quota=5': unknown key 'quota'; allowed: weight, max, max_burst, "
            "uclamp_min, uclamp_max",
        ),
        ("cg1:path=x", "unknown key 'path'"),
        ("cg1:weight=2,weight=3", "'weight' given twice"),
    ],
)
def test_cli_form_errors(text, expected) -> None:
    with pytest.raises(ConfigError) as err:
        parse_cgroup_option(text)
    assert expected in str(err.value)


# ---- the core's structures ------------------------------------------------------------------


def _errors(exc: ValidationError) -> str:
    return "; ".join(e["msg"] for e in exc.errors())


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"weight": 0}, "cgroup 'cg1': weight = 0: allowed 1..10000"),
        ({"period_us": 999}, "cgroup 'cg1': period_us = 999: allowed 1000..1000000 µs"),
        ({"period_us": 1_000_001}, "period_us = 1000001: allowed 1000..1000000 µs"),
        ({"quota_us": 999}, "cgroup 'cg1': quota_us = 999: allowed 1000..17592186044415 µs"),
        ({"burst_us": 10}, "burst_us = 10: cpu.max.burst needs a quota"),
        ({"quota_us": 5000, "burst_us": 6000}, "burst_us = 6000: allowed 0..5000 µs"),
        ({"uclamp_min": -1.0}, "uclamp_min = -1.0: allowed 0.0..100.0 %"),
        ({"uclamp_max": 100.5}, "uclamp_max = 100.5: allowed 0.0..100.0 %"),
        ({"uclamp_min": 50.0, "uclamp_max": 40.0}, "uclamp_min = 50.0 is above uclamp_max"),
        ({"weight": True}, "Input should be a valid integer"),
        ({"cpu_weight": 5}, "Extra inputs are not permitted"),
    ],
)
def test_cgroup_spec_checks(fields, expected) -> None:
    with pytest.raises(ValidationError) as err:
        CgroupSpec.model_validate({"path": "cg1", **fields})
    assert expected in _errors(err.value)


def _sim(fake_core, **kw):
    cfg = build_config("skylake-8x", "periodic:tasks=2", duration="10ms")
    cfg.update(kw)
    return cfg


@pytest.mark.parametrize(
    ("cgroups", "workload_cgroups", "expected"),
    [
        ([{"path": "a"}, {"path": "a"}], [], "cgroups: 'a' is defined twice"),
        ([{"path": "a/b"}], [], "cgroups: 'a/b': its parent 'a' is not defined"),
        ([{"path": "a/b"}, {"path": "a"}], [], "its parent 'a' must be listed before it"),
        ([{"path": "a"}], ["b"], "workload.cgroups: 'b' is not a defined cgroup; defined: a"),
        ([], ["b"], "workload.cgroups: 'b' is not a defined cgroup; defined: none"),
        ([{"path": "a"}], ["a", "a"], "workload.cgroups: 'a' is listed twice"),
    ],
)
def test_sim_config_cross_checks(fake_core, cgroups, workload_cgroups, expected) -> None:
    cfg = _sim(fake_core, cgroups=cgroups)
    cfg["workload"]["cgroups"] = workload_cgroups
    with pytest.raises(ValidationError) as err:
        SimConfig.model_validate(cfg)
    assert expected in _errors(err.value)


def test_sim_config_task_cgroup_must_be_defined(fake_core) -> None:
    cfg = _sim(fake_core, cgroups=[{"path": "a"}])
    cfg["workload"] = p.custom_workload(tasks=[p.task("t", p.run(1000), cgroup="b")])
    with pytest.raises(ValidationError) as err:
        SimConfig.model_validate(cfg)
    assert "task 't': cgroup 'b' is not a defined cgroup; defined: a" in _errors(err.value)


def test_json_leaves_out_what_the_core_defaults(fake_core) -> None:
    """Without cgroups a config serialises as before they existed (the run keys of stored
    experiments stay the same)."""
    cfg = build_config("skylake-8x", "periodic:tasks=2", duration="10ms")
    assert "cgroups" not in cfg and "cgroups" not in cfg["workload"]
    custom = p.custom_workload(tasks=[p.task("t", p.run(1000))])
    cfg = build_config("skylake-8x", custom, duration="10ms")
    assert "cgroup" not in cfg["workload"]["custom"]["tasks"][0]
    assert "cgroups" not in cfg


# ---- build_config and the Python API --------------------------------------------------------


def test_build_config_with_cgroups_and_run_in(fake_core) -> None:
    cfg = build_config(
        "skylake-8x",
        "periodic:tasks=2",
        duration="10ms",
        cgroups=[
            {"path": "cg1", "max": "1600000 100000", "weight": 200},
            "cg2:max=25000/100000,max_burst=5000",
            {"path": "cg2/leaf", "uclamp_max": 50},
        ],
        run_in=["cg1", "cg2"],
    )
    SimConfig.model_validate(cfg)
    assert [g["path"] for g in cfg["cgroups"]] == ["cg1", "cg2", "cg2/leaf"]
    assert cfg["cgroups"][0] == {
        "path": "cg1",
        "weight": 200,
        "quota_us": 1_600_000,
        "period_us": 100_000,
        "burst_us": 0,
        "uclamp_min": 0.0,
        "uclamp_max": 100.0,
    }
    assert cfg["cgroups"][1]["quota_us"] == 25_000 and cfg["cgroups"][1]["burst_us"] == 5000
    assert cfg["cgroups"][2]["uclamp_max"] == 50.0
    assert cfg["workload"]["cgroups"] == ["cg1", "cg2"]


def test_run_in_must_name_a_defined_cgroup(fake_core) -> None:
    with pytest.raises(ConfigError) as err:
        build_config("skylake-8x", "periodic", duration="1s", cgroups=["cg1"], run_in=["cg2"])
    assert str(err.value) == "--in-cgroup/run_in 'cg2': not a defined cgroup; defined: cg1"
    with pytest.raises(ConfigError, match="defined: none"):
        build_config("skylake-8x", "periodic", duration="1s", run_in=["cg2"])
    with pytest.raises(ConfigError, match="'cg1': listed twice"):
        build_config("skylake-8x", "periodic", duration="1s", cgroups=["cg1"], run_in=["cg1"] * 2)


def test_programs_task_cgroup(fake_core) -> None:
    assert "cgroup" not in p.task("t", p.run(1))
    assert p.task("t", p.run(1), cgroup="cg1")["cgroup"] == "cg1"
    wl = p.custom_workload(
        tasks=[
            p.task("a", p.loop(p.run(20_000)), cgroup="cg1"),
            p.task("b", p.loop(p.run(20_000)), cgroup="cg1/inner", instances=2),
            p.task("c", p.fork("d"), p.wait()),
            p.task("d", p.run(1000), start=False),
        ]
    )
    cfg = build_config(
        "skylake-8x",
        wl,
        duration="10ms",
        cgroups={"cg1": {"max": "50000 100000"}, "cg1/inner": {"weight": 50}},
    )
    tasks = {t["name"]: t for t in cfg["workload"]["custom"]["tasks"]}
    assert tasks["a"]["cgroup"] == "cg1"
    assert tasks["b"]["cgroup"] == "cg1/inner"
    assert "cgroup" not in tasks["c"] and "cgroup" not in tasks["d"]
    bad = p.custom_workload(tasks=[p.task("a", p.run(1), cgroup="nope")])
    with pytest.raises(ConfigError) as err:
        build_config("skylake-8x", bad, duration="10ms", cgroups=["cg1"])
    assert str(err.value) == "task 'a': cgroup 'nope' is not a defined cgroup; defined: cg1"


def test_run_passes_cgroups(fake_core) -> None:
    r = schedsim.run(
        "skylake-8x",
        "periodic:tasks=2",
        duration="200ms",
        cgroups=["cg1:max=50000/100000"],
        run_in=["cg1"],
    )
    (config,) = fake_core.configs
    assert config["cgroups"][0]["quota_us"] == 50000
    assert config["workload"]["cgroups"] == ["cg1"]
    assert list(r.cgroups["path"]) == ["cg1"]


# ---- results --------------------------------------------------------------------------------


def test_result_cpu_stat() -> None:
    stat = dict(zip(CPU_STAT_FIELDS, (400_000, 20, 10, 150_000, 0, 0), strict=True))
    r = RunResult({"cgroups": {"cg1": stat, "cg1/x": stat}})
    assert list(r.cgroups.columns) == ["path", *CPU_STAT_FIELDS]
    assert list(r.cgroups["path"]) == ["cg1", "cg1/x"]
    assert r.cgroups.loc[0, "throttled_usec"] == 150_000
    assert r.cpu_stat("cg1")["nr_throttled"] == 10
    with pytest.raises(KeyError, match="no cgroup 'cg2' in this result; it has: cg1, cg1/x"):
        r.cpu_stat("cg2")
    empty = RunResult({})
    columns = ["path", *CPU_STAT_FIELDS, "period_phase_us"]  # as a run with groups has them
    assert empty.cgroups.empty and list(empty.cgroups.columns) == columns


def test_cgroup_metric_names() -> None:
    assert cgroup_metric("cg_cg1_throttled_usec") == ("cg1", "throttled_usec")
    assert cgroup_metric("cg_a/b_nr_periods") == ("a/b", "nr_periods")
    assert cgroup_metric("cg_my_group_usage_usec") == ("my_group", "usage_usec")
    assert cgroup_metric("cg_cg1_period_phase_us") == ("cg1", "period_phase_us")
    assert cgroup_metric("cg__usage_usec") is None
    assert cgroup_metric("elapsed_s") is None
    assert cgroup_metric("cg_cg1_speed") is None


# ---- schedsim run ---------------------------------------------------------------------------


def test_cli_flags_reach_the_config(fake_core) -> None:
    result = runner.invoke(
        app,
        [
            *RUN,
            "--json",
            "--cgroup",
            "cg1:max=1600000/100000,weight=200",
            "--cgroup",
            "cg2:max=25000,max_burst=1000,uclamp_min=10,uclamp_max=max",
            "--cgroup",
            "cg2/leaf",
            "--in-cgroup",
            "cg1",
            "--in-cgroup",
            "cg2",
        ],
    )
    assert result.exit_code == 0, result.stderr
    (config,) = fake_core.configs
    assert [g["path"] for g in config["cgroups"]] == ["cg1", "cg2", "cg2/leaf"]
    cg1, cg2, leaf = config["cgroups"]
    assert (cg1["quota_us"], cg1["period_us"], cg1["weight"]) == (1_600_000, 100_000, 200)
    assert (cg2["quota_us"], cg2["burst_us"], cg2["uclamp_min"]) == (25_000, 1000, 10.0)
    assert leaf["quota_us"] is None
    assert config["workload"]["cgroups"] == ["cg1", "cg2"]
    data = json.loads(result.stdout)
    assert set(data["cgroups"]) == {"cg1", "cg2", "cg2/leaf"}
    assert set(data["cgroups"]["cg1"]) == set(CPU_STAT_FIELDS)


def test_cli_without_cgroups_sends_none(fake_core) -> None:
    result = runner.invoke(app, [*RUN, "--json"])
    assert result.exit_code == 0, result.stderr
    (config,) = fake_core.configs
    assert "cgroups" not in config and "cgroups" not in config["workload"]
    assert "cgroups" not in json.loads(result.stdout)


def test_summary_prints_cpu_stat(fake_core) -> None:
    result = runner.invoke(
        app, [*RUN, "--cgroup", "cg1:max=50000/100000,weight=300", "--in-cgroup", "cg1"]
    )
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    assert "cgroups: cpu.weight, cpu.max, cpu.stat" in out
    rows = {line.split()[1]: line for line in out.splitlines() if line.startswith("│ ")}
    assert "cg1" in out.split("cpu.stat", 1)[1].splitlines()[2]  # the column header
    assert rows["cpu.weight"].split()[3] == "300"
    assert "50000 100000" in rows["cpu.max"]
    # fake core: 200 ms of 100 ms periods, half of them throttled
    assert rows["nr_periods"].split()[3] == "2"
    assert rows["nr_throttled"].split()[3] == "1"
    for key in ("usage_usec", "throttled_usec", "nr_bursts", "burst_usec"):
        assert key in rows
    plain = runner.invoke(app, RUN)
    assert "cpu.stat" not in plain.stdout


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--cgroup", "cg1:max=5/100000"], "cgroup 'cg1': max = '5/100000': the quota must be"),
        (["--cgroup", "cg1:quota=5"], "unknown key 'quota'; allowed: weight, max"),
        (["--cgroup", "a/b"], "cgroup 'a/b': its parent 'a' is not defined"),
        (["--cgroup", "/"], "cgroup path '/': expected a path relative to the root group"),
        (["--cgroup", "cg1", "--cgroup", "cg1"], "cgroup 'cg1' is defined twice"),
        (["--in-cgroup", "cg9"], "--in-cgroup/run_in 'cg9': not a defined cgroup; defined: none"),
        (["--cgroup", "cg1:weight=0"], "cgroup 'cg1': weight = '0': cpu.weight allows 1..10000"),
    ],
)
def test_cli_errors(fake_core, args, expected) -> None:
    result = runner.invoke(app, [*RUN, *args])
    assert result.exit_code == 2, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("schedsim: error: ")
    assert expected in lines[0]
    assert not fake_core.configs


# ---- experiment files -----------------------------------------------------------------------

BASE = textwrap.dedent(
    """
    [experiment]
    name = "cg"
    repeats = 2

    [[machine]]
    preset = "skylake-8x"

    [[config]]
    name = "flat"
    kernel = "6.4"
    cgroups = [{ path = "top", weight = 200 }]

    [[config]]
    name = "nested"
    kernel = "6.4"
    features = { cfs_bw_timer_phase = "aligned" }
    cgroups = [{ path = "top", max = "max" }]

    [[benchmark]]
    workload = "periodic"
    param = "tasks"
    values = [1, 2]
    duration = "200ms"
    cgroups = [
        { path = "top/cg1", max = "1600000 100000" },
        { path = "top/cg2", max = "1600000/100000", max_burst = 100000, uclamp_max = "50" },
    ]
    run_in = ["top/cg1", "top/cg2"]
    """
)


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "exp.toml"
    path.write_text(text)
    return path


def _error(tmp_path: Path, text: str) -> str:
    path = _write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        Experiment.from_toml(path)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"{path}: ")
    return message.removeprefix(f"{path}: ")


def test_experiment_merges_config_and_benchmark_cgroups(fake_core, tmp_path) -> None:
    exp = Experiment.from_toml(_write(tmp_path, BASE))
    assert len(exp.specs) == 2 * 2 * 2
    flat = next(s for s in exp.specs if s.config == "flat").sim_config
    nested = next(s for s in exp.specs if s.config == "nested").sim_config
    assert [g["path"] for g in flat["cgroups"]] == ["top", "top/cg1", "top/cg2"]
    assert flat["cgroups"][0]["weight"] == 200 and flat["cgroups"][0]["quota_us"] is None
    assert flat["cgroups"][1]["quota_us"] == 1_600_000
    assert flat["cgroups"][2]["burst_us"] == 100_000
    assert flat["cgroups"][2]["uclamp_max"] == 50.0
    assert flat["workload"]["cgroups"] == ["top/cg1", "top/cg2"]
    assert nested["kernel"]["features"] == {"cfs_bw_timer_phase": "aligned"}
    assert exp.benchmarks[0].run_in == ("top/cg1", "top/cg2")


def test_cgroups_are_part_of_the_run_key(fake_core, tmp_path) -> None:
    a = Experiment.from_toml(_write(tmp_path, BASE))
    b = Experiment.from_toml(
        _write(tmp_path, BASE.replace('{ path = "top", weight = 200 }', '{ path = "top" }'))
    )
    keys_a = {(s.config, s.op, s.repeat): s.key for s in a.specs}
    keys_b = {(s.config, s.op, s.repeat): s.key for s in b.specs}
    for k in keys_a:
        assert (keys_a[k] == keys_b[k]) == (k[0] == "nested")
    c = Experiment.from_toml(_write(tmp_path, BASE.replace('run_in = ["top/cg1", "top/cg2"]', "")))
    assert {s.key for s in c.specs}.isdisjoint(keys_a.values())
    assert "cgroups" not in c.specs[0].sim_config["workload"]


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            ('{ path = "top", weight = 200 }', '{ path = "top", wieght = 200 }'),
            "config[1] (flat).cgroups[1] (top): unknown key 'wieght'; allowed: path, weight, "
            "max, max_burst, uclamp_min, uclamp_max",
        ),
        (
            ('{ path = "top", weight = 200 }', "{ weight = 200 }"),
            "config[1] (flat).cgroups[1].path: missing (required)",
        ),
        (
            ('{ path = "top", weight = 200 }', '{ path = "top", weight = 0 }'),
            "config[1] (flat).cgroups[1] (top): cgroup 'top': weight = 0: cpu.weight allows "
            "1..10000",
        ),
        (
            ('max = "1600000 100000"', 'max = "1600000 10"'),
            "benchmark[1] (periodic).cgroups[1] (top/cg1): cgroup 'top/cg1': max = "
            "'1600000 10': the period must be 1000..1000000 µs",
        ),
        (
            ('max = "1600000 100000"', 'max = "1600000 100000", max_burst = 2000000'),
            "benchmark[1] (periodic).cgroups[1] (top/cg1): cgroup 'top/cg1': max_burst = "
            "2000000: allowed 0..1600000 µs (at most the quota)",
        ),
        (
            ('path = "top/cg2"', 'path = "top/cg1"'),
            "benchmark[1] (periodic).cgroups[2] (top/cg1): cgroup 'top/cg1' is defined twice",
        ),
        (
            ('{ path = "top", max = "max" }', '{ path = "top/cg1" }'),
            "config[2] (nested).cgroups and benchmark[1] (periodic).cgroups: both define "
            "cgroup 'top/cg1'; define it in one of them",
        ),
        (
            ('{ path = "top", max = "max" }', '{ path = "other" }'),
            "config[2] (nested) × benchmark[1] (periodic).cgroups: cgroup 'top/cg1': its "
            "parent 'top' is not defined",
        ),
        (
            ('run_in = ["top/cg1", "top/cg2"]', 'run_in = ["top/cg3"]'),
            "benchmark[1] (periodic).run_in: 'top/cg3': not a defined cgroup; defined: top, "
            "top/cg1, top/cg2 (with config[1] (flat))",
        ),
        (
            ('run_in = ["top/cg1", "top/cg2"]', 'run_in = "top/cg1"'),
            "benchmark[1] (periodic).run_in: Input should be a valid list",
        ),
        (
            ('run_in = ["top/cg1", "top/cg2"]', 'run_in = ["top/cg1"]\nrun-in = ["x"]'),
            "benchmark[1] (periodic): unknown key 'run-in'; allowed: workload, name, param, "
            "values, stride, params, duration, repeats, metrics, prefer, summarise, decimals, "
            "label, cgroups, run_in",
        ),
    ],
)
def test_experiment_cgroup_errors(fake_core, tmp_path, change, expected) -> None:
    old, new = change
    assert old in BASE
    assert expected in _error(tmp_path, BASE.replace(old, new, 1))


def test_per_cgroup_metrics_in_compare(varying_core, tmp_path) -> None:
    text = BASE.replace(
        'duration = "200ms"',
        'duration = "200ms"\nmetrics = ["slack_us_p50", "cg_top/cg1_throttled_usec", '
        '"cg_top/cg2_usage_usec"]\nprefer = { "cg_top/cg2_usage_usec" = "higher" }',
    )
    exp = Experiment.from_toml(_write(tmp_path, text))
    metrics = {m.name: m.higher_is_better for m in exp.benchmarks[0].metrics}
    assert metrics == {
        "slack_us_p50": True,
        "cg_top/cg1_throttled_usec": False,
        "cg_top/cg2_usage_usec": True,
    }
    res = exp.run(jobs=1, out=tmp_path / "out")
    assert "cg_top/cg1_throttled_usec" in res.text()
    runs = res.runs
    assert "cgroups.top/cg1.throttled_usec" in runs.columns
    assert (runs["cgroups.top/cg1.nr_periods"] == 2).all()  # 200 ms / 100 ms periods
    summary = res.summaries[("skylake-8x", "periodic", "cg_top/cg1_throttled_usec")]
    assert set(summary) == {"flat", "nested"}
    # stored runs load back with their cpu.stat
    again = Experiment.from_toml(_write(tmp_path, text)).run(jobs=1, out=tmp_path / "out")
    assert again.loaded == len(exp.specs) and again.executed == 0
    assert again.runs["cgroups.top/cg1.throttled_usec"].tolist() == (
        runs["cgroups.top/cg1.throttled_usec"].tolist()
    )


def test_per_cgroup_metric_errors(fake_core, tmp_path) -> None:
    undefined = BASE.replace(
        'duration = "200ms"', 'duration = "200ms"\nmetrics = ["cg_top/cg9_throttled_usec"]'
    )
    assert _error(tmp_path, undefined) == (
        "benchmark[1] (periodic).metrics: metric 'cg_top/cg9_throttled_usec': cgroup "
        "'top/cg9' is not defined for config[1] (flat); defined: top, top/cg1, top/cg2"
    )
    no_direction = BASE.replace(
        'duration = "200ms"', 'duration = "200ms"\nmetrics = ["cg_top/cg1_usage_usec"]'
    )
    assert (
        "benchmark[1] (periodic).prefer: metric 'cg_top/cg1_usage_usec': say whether higher "
        "or lower is better"
    ) in _error(tmp_path, no_direction)


def test_random_is_the_interleaved_timer_phase(fake_core, tmp_path) -> None:
    # DESIGN names 41abdba9's phase "random"; it is the interleaved phase, on the command line
    # and in experiment files
    from schedsim.config import parse_sets

    assert parse_sets(["features.cfs_bw_timer_phase=random"]).features == {
        "cfs_bw_timer_phase": "interleaved"
    }
    exp = Experiment.from_toml(
        _write(
            tmp_path,
            BASE.replace('cfs_bw_timer_phase = "aligned"', 'cfs_bw_timer_phase = "random"'),
        )
    )
    nested = next(s for s in exp.specs if s.config == "nested").sim_config
    assert nested["kernel"]["features"] == {"cfs_bw_timer_phase": "interleaved"}
