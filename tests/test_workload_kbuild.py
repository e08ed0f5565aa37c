"""kernbench and gitsource through the whole stack on the shipped skylake-8x preset: the
workload strings, the metrics, and gitsource's check against seed 000's skylake-8x baseline
(858.85 s for git v2.15.1's suite, here a 40-script share of it)."""

from __future__ import annotations

import pytest

import schedsim
from schedsim.config import ConfigError

pytestmark = pytest.mark.usefixtures("real_core")


def test_gitsource_baseline_takes_its_share_of_the_seeds_858_s_on_skylake_8x() -> None:
    """Seed 000's 8x-SKYLAKE-UMA ran git v2.15.1's suite in 858.85 s with non-invariant
    schedutil on 5.2. Nothing in the model is fitted to it: the suite's block make-up and work
    were measured on another machine (docs/workloads/gitsource.md), so this is a check. The
    first 40 scripts hold 613 of the 12,114 blocks."""
    r = schedsim.run(
        "skylake-8x",
        "gitsource:scripts=40",
        driver="intel_cpufreq",
        governor="schedutil",
        invariance="none",
        kernel="5.2",
    )
    blocks = sum((i + 1) * 12114 // 790 - i * 12114 // 790 for i in range(40))
    assert blocks == 613
    assert r.primary["name"] == "elapsed_s"
    assert r.metrics["elapsed_s"] == pytest.approx(858.85 * blocks / 12114, rel=0.05)
    assert r.metrics["scripts"] == 40


def test_kernbench_reports_time_metrics_and_scales_with_jobs() -> None:
    one = schedsim.run("skylake-8x", "kernbench:objects=40,jobs=1", kernel="6.12")
    four = schedsim.run("skylake-8x", "kernbench:objects=40,jobs=4", kernel="6.12")
    for r in (one, four):
        m = r.metrics
        assert m["compile_jobs"] == 40
        assert m["user_s"] > m["sys_s"] > 0
        assert m["elapsed_s"] > m["link_s"] + m["prepare_s"]
    assert four.metrics["elapsed_s"] < 0.5 * one.metrics["elapsed_s"]
    # the default is one job per CPU
    default = schedsim.run("skylake-8x", "kernbench:objects=40", kernel="6.12")
    eight = schedsim.run("skylake-8x", "kernbench:objects=40,jobs=8", kernel="6.12")
    assert default.metrics == eight.metrics


def test_kbuild_parameter_errors_name_the_parameter() -> None:
    with pytest.raises(ConfigError, match="jobs"):
        schedsim.run("skylake-8x", "kernbench:jobs=0")
    with pytest.raises(ConfigError, match="scripts"):
        schedsim.run("skylake-8x", "gitsource:scripts=2.5")


def test_gitsource_runs_markedly_faster_with_turbo4_invariance_on_kernel_5_2() -> None:
    """Seed 000's headline on 8x-SKYLAKE-UMA: schedutil with the 4C-turbo invariance reference
    takes 0.55 of the non-invariant time, at more package power (17.33 W vs 13.32 W)."""

    def gitsource(invariance: str) -> schedsim.RunResult:
        return schedsim.run(
            "skylake-8x",
            "gitsource:scripts=10",
            kernel="5.2",
            driver="intel_cpufreq",
            governor="schedutil",
            invariance=invariance,
        )

    base, inv = gitsource("none"), gitsource("turbo:4")
    ratio = inv.metrics["elapsed_s"] / base.metrics["elapsed_s"]
    # markedly faster; below the published 0.55: the non-invariant baseline runs the chain near
    # the 800 MHz minimum (as its 858.85 s says the seed's did) while the invariant configs run
    # it faster than the seed's 475 s (docs/validation.md, "gitsource with invariance is better
    # than published on skylake-8x"): 0.35 here
    assert 0.3 < ratio < 0.75
    assert inv.power["avg_package_w"] > base.power["avg_package_w"]


def test_kernbench_user_time_is_time_running_not_time_waiting() -> None:
    """`user_s` is the on-CPU time of the program work; a job preempted by other jobs waits,
    and that wait is neither user nor sys time. With 4x more jobs than CPUs the build does the
    same work: user + sys is the tasks' CPU time, and sys (the kernel paths charged) does not
    shrink as the runqueues fill."""
    fit = schedsim.run("skylake-8x", "kernbench:objects=60,jobs=8", kernel="6.12")
    over = schedsim.run("skylake-8x", "kernbench:objects=60,jobs=32", kernel="6.12")
    for r in (fit, over):
        cpu_s = float(r.tasks["cpu_ns"].sum()) * 1e-9
        assert r.metrics["user_s"] + r.metrics["sys_s"] == pytest.approx(cpu_s, rel=1e-9)
        assert r.metrics["sys_s"] > 0
    assert float(over.tasks["wait_ns"].sum()) > 100 * float(fit.tasks["wait_ns"].sum())
    assert over.metrics["sys_s"] >= 0.95 * fit.metrics["sys_s"]
    # a build cut short: the work done so far is user time, not sys
    cut = schedsim.run("skylake-8x", "kernbench:objects=60,jobs=8", kernel="6.12", duration="5s")
    assert cut.metrics["elapsed_s"] is None
    assert cut.metrics["sys_s"] <= fit.metrics["sys_s"]
    assert cut.metrics["user_s"] > 10 * cut.metrics["sys_s"]


def test_gitsource_counts_the_scripts_that_ran() -> None:
    done = schedsim.run("skylake-8x", "gitsource:scripts=3", kernel="6.12")
    assert done.metrics["scripts"] == 3
    cut = schedsim.run("skylake-8x", "gitsource:scripts=3", kernel="6.12", duration="0.2s")
    assert cut.metrics["processes"] < done.metrics["processes"]
    assert cut.metrics["scripts"] < 3
