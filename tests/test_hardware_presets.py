"""Hardware behaviour of the shipped presets, through the whole stack: turbo bins by active
cores, busy packages near their TDP (the parametric power calibration) and idle packages at a
small fraction of it, every preset runs and prints a turbostat summary."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

import schedsim
from schedsim import programs as p
from schedsim.cli import app
from support import x86_package_power_mw

pytestmark = pytest.mark.usefixtures("real_core")

TDP_W = {"skylake-8x": 80, "broadwell-80x": 135, "haswell-48x": 120, "skylake-sp-104": 165}


def hogs(n: int, pinned: bool = False) -> dict:
    tasks = [
        p.task(
            f"hog{i}",
            p.loop(p.run(1_000_000)),
            cpus=[i] if pinned else None,
            start_cpu=i if pinned else None,
        )
        for i in range(n)
    ]
    return p.custom_workload(tasks)


def busy_mhz(result: schedsim.RunResult) -> float:
    return result.json["turbostat"]["bzy_mhz"]


@pytest.mark.parametrize(("busy", "mhz"), [(1, 3900), (2, 3900), (3, 3800), (4, 3700)])
def test_skylake_8x_turbo_follows_the_active_core_count(busy: int, mhz: int) -> None:
    # one hog per core (cpus 0..3 are distinct cores), the other cores idle in deep states
    r = schedsim.run(
        "skylake-8x",
        hogs(busy, pinned=True),
        kernel="6.12",
        governor="performance",
        duration="200ms",
    )
    assert busy_mhz(r) == pytest.approx(mhz, abs=2)


@pytest.mark.parametrize("machine", sorted(TDP_W))
def test_busy_package_draws_about_its_tdp_and_idle_a_small_part(machine: str) -> None:
    m = schedsim.load_machine(machine)
    ncpus = len(m.spec.cpus)
    npkg = 1 + max(c.package for c in m.spec.cpus)
    busy = schedsim.run(machine, hogs(ncpus), kernel="6.12", duration="2s")
    watts = busy.power["avg_package_w"]
    tdp = TDP_W[machine] * npkg
    # the all-core turbo where ordinary code fits in the TDP (skylake-8x), otherwise PL2 lets
    # the package run above TDP for a while and PL1 pulls it back towards TDP
    fd = m.spec.freq_domains[0]
    all_core_w = x86_package_power_mw(
        machine, fd.turbo_khz[-1], m.smt, m.spec.power.activity_factor
    )
    expect = min(tdp, all_core_w / 1000 * npkg)
    assert 0.85 * expect <= watts <= 1.3 * tdp, f"{machine}: {watts:.1f} W busy, TDP {tdp} W"
    idle = schedsim.run(
        machine,
        p.custom_workload([p.task("nap", p.sleep(2_000_000_000))]),
        kernel="6.12",
        duration="2s",
    )
    assert idle.power["avg_package_w"] < 0.2 * tdp


@pytest.mark.parametrize("machine", schedsim.list_machines())
def test_every_preset_runs_and_prints_a_turbostat_summary(machine: str) -> None:
    result = CliRunner().invoke(
        app,
        [
            "run",
            "--machine",
            machine,
            "--workload",
            "periodic:tasks=4,period_ms=10,duty_pct=30",
            "--duration",
            "100ms",
            "--kernel",
            "6.12",
        ],
    )
    assert result.exit_code == 0, result.stderr
    assert "Turbostat summary" in result.stdout and "PkgWatt" in result.stdout
