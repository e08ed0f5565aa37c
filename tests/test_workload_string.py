import pytest

from schedsim.config import parse_sets, parse_value, parse_workload
from schedsim.errors import ConfigError


def test_name_only() -> None:
    w = parse_workload("tbench")
    assert w.name == "tbench"
    assert w.params == {}


def test_params_are_typed() -> None:
    w = parse_workload("periodic:tasks=6,period_ms=16,duty_pct=40.5,mode=fast")
    assert w.name == "periodic"
    assert w.params == {"tasks": 6, "period_ms": 16, "duty_pct": 40.5, "mode": "fast"}
    assert isinstance(w.params["tasks"], int)
    assert isinstance(w.params["duty_pct"], float)


def test_hyphenated_names() -> None:
    assert parse_workload("stress-ng-cpu:workers=2").name == "stress-ng-cpu"
    assert parse_workload("netperf-tcp-rr").name == "netperf-tcp-rr"


def test_rt_app_path() -> None:
    w = parse_workload("rt-app:/data/rt-app/example1.json")
    assert w.name == "rt-app"
    assert w.params == {"path": "/data/rt-app/example1.json"}


@pytest.mark.parametrize(
    "text",
    [
        "",
        ":tasks=1",
        "periodic:",
        "periodic:tasks",
        "periodic:tasks=",
        "periodic:=3",
        "periodic:tasks=1,,duty_pct=2",
        "periodic:tasks=1,tasks=2",
        "rt-app:",
        "bad name",
    ],
)
def test_malformed(text: str) -> None:
    with pytest.raises(ConfigError):
        parse_workload(text)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("42", 42),
        ("-3", -3),
        ("0.5", 0.5),
        ("1e3", 1000.0),
        ("abc", "abc"),
        ("nan", "nan"),
        ("per-pd", "per-pd"),
    ],
)
def test_parse_value(text: str, value: object) -> None:
    assert parse_value(text) == value
    assert type(parse_value(text)) is type(value)


def test_sets_split_into_tunables_features_and_hz() -> None:
    s = parse_sets(
        [
            "sched_migration_cost_ns=500000",
            "features.feec=per-pd",
            "feature.TTWU_QUEUE=0",
            "CONFIG_HZ=1000",
            "intel_pstate.no_hwp=1",
        ]
    )
    assert s.tunables == {"sched_migration_cost_ns": 500000, "intel_pstate.no_hwp": 1}
    assert s.features == {"feec": "per-pd", "TTWU_QUEUE": 0}
    assert s.hz == 1000


@pytest.mark.parametrize("text", ["novalue", "=3", "key=", "CONFIG_HZ=123", "features.=1"])
def test_bad_sets(text: str) -> None:
    with pytest.raises(ConfigError):
        parse_sets([text])
