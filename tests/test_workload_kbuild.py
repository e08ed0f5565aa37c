"""kernbench and gitsource through the whole stack on the shipped skylake-8x preset: the
workload strings, the metrics, and gitsource's calibration anchor (2,215 s for the whole suite
at max frequency, here a 50-script share of it)."""

from __future__ import annotations

import pytest

import schedsim
from schedsim.config import ConfigError

pytestmark = pytest.mark.usefixtures("real_core")


def test_gitsource_runs_its_share_of_the_2215_s_anchor_on_skylake_8x() -> None:
    r = schedsim.run(
        "skylake-8x",
        "gitsource:scripts=50",
        driver="intel_cpufreq",
        governor="performance",
        kernel="6.12",
    )
    blocks = sum((i + 1) * 18400 // 1011 - i * 18400 // 1011 for i in range(50))
    per_block = 56 + 2.5
    share = (50 * 20 + blocks * per_block) / (1011 * 20 + 18400 * per_block)
    expect = 2215.3 * share
    assert r.primary["name"] == "elapsed_s"
    assert r.metrics["elapsed_s"] == pytest.approx(expect, rel=0.03)
    assert r.metrics["scripts"] == 50


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
    with pytest.raises(ConfigError, match="procs_per_block"):
        schedsim.run("skylake-8x", "gitsource:procs_per_block=2.5")


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
    # markedly faster; below the published 0.55 because the model's non-invariant baseline runs
    # the chain near the 800 MHz minimum (docs/validation.md, "gitsource with invariance is
    # better than published on skylake-8x"): 0.34 here
    assert 0.3 < ratio < 0.75
    assert inv.power["avg_package_w"] > base.power["avg_package_w"]
