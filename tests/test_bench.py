import random

import pytest

from schedsim.bench import (
    SIMSO_PERIODS_MS,
    periodic_taskset,
    periodic_workload,
    pingpong_workload,
    uunifast_discard,
)
from schedsim.machines import load_machine
from schedsim.spec import CustomWorkload


def test_uunifast_discard_sums_and_caps() -> None:
    utils = uunifast_discard(random.Random(1), 40, 6.0)
    assert len(utils) == 40
    assert sum(utils) == pytest.approx(6.0)
    assert all(0 < u <= 0.9 for u in utils)


def test_uunifast_needs_a_feasible_total() -> None:
    from schedsim.errors import ConfigError

    with pytest.raises(ConfigError):
        uunifast_discard(random.Random(1), 2, 1.9)


def test_simso_taskset_is_deterministic() -> None:
    a = periodic_taskset(40, 6.0, seed=1)
    assert a == periodic_taskset(40, 6.0, seed=1)
    assert a != periodic_taskset(40, 6.0, seed=2)
    assert all(period in SIMSO_PERIODS_MS for _, period in a)


def test_periodic_workload_cycles_at_f_max() -> None:
    machine = load_machine("skylake-8x")
    wl = periodic_workload(machine, 40, 6.0, seed=1)
    CustomWorkload.model_validate(wl["custom"])
    tasks = wl["custom"]["tasks"]
    assert len(tasks) == 40
    total = 0.0
    for task, (u, period_ms) in zip(tasks, periodic_taskset(40, 6.0, seed=1), strict=True):
        (loop,) = task["program"]
        run, timer = loop["body"]
        assert loop["count"] == -1
        assert timer == {"op": "timer", "period_ns": period_ms * 1_000_000}
        # u x period x f_max (3.9 GHz)
        assert run["cycles"] == pytest.approx(u * period_ms * 1e-3 * 3.9e9, abs=1)
        total += run["cycles"] / (period_ms * 1e-3 * 3.9e9)
    assert total == pytest.approx(6.0, abs=1e-4)


def test_pingpong_workload() -> None:
    wl = pingpong_workload(32)
    CustomWorkload.model_validate(wl["custom"])
    tasks = wl["custom"]["tasks"]
    assert len(tasks) == 64
    assert len(wl["custom"]["channels"]) == 64
    ping, pong = tasks[0], tasks[1]
    assert [op["op"] for op in ping["program"][0]["body"]] == ["run", "send", "recv"]
    assert [op["op"] for op in pong["program"][0]["body"]] == ["recv", "run", "send"]
    assert ping["program"][0]["body"][1]["chan"] == pong["program"][0]["body"][0]["chan"]
    assert ping["program"][0]["body"][0]["cycles"] == 20_000
