"""RT throttling and the fair server through the public API: the sysctls and the feature
toggle reach the core, the result counts the events, bad values are refused with the key.
Expected shares follow the kernel's rules (crates/schedsim-core/tests/rt_bandwidth.rs traces
them tick by tick)."""

import pytest

import schedsim
from schedsim import programs as p
from schedsim.errors import ConfigError


def hogs(cpu=0):
    rt = p.task(
        "rt", p.loop(p.run(1e12)), start_cpu=cpu, cpus=[cpu], policy="SCHED_FIFO", priority=10
    )
    fair = p.task("fair", p.loop(p.run(1e12)), start_cpu=cpu, cpus=[cpu])
    return p.custom_workload(tasks=[rt, fair])


def fair_ms(r) -> float:
    t = r.tasks.set_index("comm")
    return t.cpu_ns["fair"] / 1e6


def test_sched_rt_runtime_us_sets_what_rt_leaves_to_the_fair_class() -> None:
    # 600 ms per 1 s: the fair hog runs from the tick after 600 ms to the period's end
    r = schedsim.run(
        "skylake-8x", hogs(), kernel="5.15", duration="2s", sets={"sched_rt_runtime_us": 600_000}
    )
    assert fair_ms(r) == pytest.approx(2 * 400, abs=2 * 4.5)
    assert r.sched["rt_throttles"] == 2
    assert r.sched["fair_server_activations"] == 0


def test_rt_runtime_share_decides_whether_a_lone_hog_is_throttled() -> None:
    shared = schedsim.run("skylake-8x", hogs(), kernel="5.4", duration="2s")
    assert fair_ms(shared) == 0
    assert shared.features["RT_RUNTIME_SHARE"] is True
    own = schedsim.run(
        "skylake-8x", hogs(), kernel="5.4", duration="2s", sets={"features.RT_RUNTIME_SHARE": 0}
    )
    assert fair_ms(own) == pytest.approx(2 * 50, abs=2 * 4.5)
    assert (
        schedsim.run("skylake-8x", hogs(), kernel="5.10", duration="10ms").features[
            "RT_RUNTIME_SHARE"
        ]
        is False
    )


def test_from_v6_12_the_fair_server_replaces_rt_throttling() -> None:
    r = schedsim.run("skylake-8x", hogs(), kernel="6.12", duration="3s")
    assert fair_ms(r) == pytest.approx(150, abs=1)
    assert r.sched["fair_server_activations"] == 3
    assert r.sched["rt_throttles"] == 0
    # sched_rt_runtime_us no longer throttles anything; a longer server runtime serves more
    longer = schedsim.run(
        "skylake-8x",
        hogs(),
        kernel="6.12",
        duration="3s",
        sets={"fair_server_runtime_ns": 200_000_000},
    )
    assert fair_ms(longer) == pytest.approx(3 * 200, abs=5)


@pytest.mark.parametrize(
    ("sets", "message"),
    [
        ({"sched_rt_runtime_us": 2_000_000}, "must not exceed sched_rt_period_us"),
        ({"sched_rt_runtime_us": -2}, "sched_rt_runtime_us = -2"),
        ({"fair_server_period_ns": 10}, "fair_server_period_ns = 10"),
        ({"features.RT_RUNTIME_SHARE": 2}, "RT_RUNTIME_SHARE"),
        ({"fair_server_runtime_ns": 10_000_000}, "the fair server exists from kernel 6.12"),
    ],
)
def test_bad_values_are_refused_with_their_key(sets, message) -> None:
    with pytest.raises(ConfigError, match=message):
        schedsim.run("skylake-8x", hogs(), kernel="5.15", duration="10ms", sets=sets)
