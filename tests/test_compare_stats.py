"""MMTests' statistics (spec/workloads.md §1) against values computed by hand.

The data set [1, 2, 4]: Amean 7/3, Stddev sqrt(7/3) (deviations -4/3, -1/3, 5/3), Hmean 12/7,
HStddev sqrt(Σ(1/x - 7/12)² · (12/7)⁴ / 3) = sqrt(7/24 · 20736/2401 / 3).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from schedsim.report import stats as st

X = [1.0, 2.0, 4.0]
Q975 = 1.959963984540054  # qnorm(0.975)


def test_means_and_spreads() -> None:
    assert st.amean(X) == pytest.approx(7 / 3)
    assert st.hmean(X) == pytest.approx(12 / 7)
    assert st.stddev(X, "amean") == pytest.approx(math.sqrt(7 / 3))
    assert st.stddev(X, "hmean") == pytest.approx(math.sqrt(7 / 24 * 20736 / 2401 / 3))
    assert st.stddev(X, "hmean") == pytest.approx(0.916324257985455)
    assert st.coeffvar(X, "amean") == pytest.approx(math.sqrt(7 / 3) * 100 / (7 / 3))
    assert st.coeffvar(X, "hmean") == pytest.approx(0.916324257985455 * 100 / (12 / 7))


def test_edge_cases_follow_stat_pm() -> None:
    assert math.isnan(st.amean([]))
    assert math.isnan(st.hmean([1.0, 0.0]))  # any x <= 0
    assert math.isnan(st.hmean([1.0, -2.0]))
    assert math.isnan(st.stddev([3.0], "amean"))  # n <= 1
    assert st.coeffvar([3.0], "amean") == 0.0  # a NaN stddev counts as 0
    assert st.coeffvar([0.0, 0.0], "amean") == 0.0  # a zero mean gives 0
    # identical samples: exactly their value and no rounding-noise spread
    same = [11036.658368] * 3
    assert st.amean(same) == 11036.658368
    assert st.stddev(same, "amean") == 0.0
    assert st.hmean(same) == 11036.658368
    assert st.stddev(same, "hmean") == 0.0


def test_percentiles_and_best_means_are_taken_best_first() -> None:
    lower = st.best_first(X, higher_is_better=False)
    higher = st.best_first(X, higher_is_better=True)
    assert lower == [1.0, 2.0, 4.0]
    assert higher == [4.0, 2.0, 1.0]
    # count = int(3 * 95 / 100) = 2; Pctile-95 is the 2nd best
    assert st.percentile(lower, 95) == 2.0
    assert st.percentile(higher, 95) == 2.0
    # count = int(1.5) = 1: the best
    assert st.percentile(lower, 50) == 1.0
    assert st.percentile(higher, 50) == 4.0
    assert st.percentile(higher, 10) == 4.0  # at least one sample
    # BAmean-95 (lower is better): mean of the best 2 = (1 + 2) / 2
    assert st.best_mean(lower, 95, "amean") == 1.5
    # BHmean-95 (higher is better): hmean of 4 and 2 = 2 / (1/4 + 1/2) = 8/3
    assert st.best_mean(higher, 95, "hmean") == pytest.approx(8 / 3)
    ten = st.best_first([float(v) for v in range(1, 11)], higher_is_better=False)
    assert st.percentile(ten, 90) == 9.0 and st.best_mean(ten, 90, "amean") == 5.0


def test_pdiff_and_pndiff_sign_convention() -> None:
    # a positive percentage is always an improvement
    assert st.pdiff(110, 100) == pytest.approx(10.0)  # throughput up 10 %
    assert st.pdiff(90, 100) == pytest.approx(-10.0)
    assert st.pndiff(90, 100) == pytest.approx(10.0)  # time down 10 %
    assert st.pndiff(110, 100) == pytest.approx(-10.0)
    # edge cases of Stat.pm
    assert st.pdiff(5, 5) == 0 and st.pdiff(0, 5) == 0
    assert st.pdiff(5, 0) == 100 and st.pdiff(5, math.nan) == 100
    assert st.pndiff(5, 5) == 0 and st.pndiff(0, 5) == 100 and st.pndiff(5, 0) == -99
    # Stddev and CoeffVar compare with pndiff whatever the direction, the mean follows it
    assert st.compare_function("stddev-_mean", True) == "pndiff"
    assert st.compare_function("coeffvar-_mean", True) == "pndiff"
    assert st.compare_function("submeanci-_mean", True) == "pndiff"
    assert st.compare_function("_mean", True) == "pdiff"
    assert st.compare_function("_mean", False) == "pndiff"
    assert st.compare_function("percentile-95", True) == "pdiff"
    assert st.rdiff(3, 2) == 1.5 and st.rdiff(3, 0) == 0 and st.rdiff(0, 2) == 1


def test_stat_names_current_and_legacy() -> None:
    assert st.stat_name("_mean", True) == "Hmean"
    assert st.stat_name("_mean", False) == "Amean"
    assert st.stat_name("stddev-_mean", True) == "HStddev"
    assert st.stat_name("coeffvar-_mean", False) == "CoeffVar"
    assert st.stat_name("_mean-95", True) == "BHmean.95"
    assert st.stat_name("_mean-95", False) == "BAmean.95"
    assert st.stat_name("percentile-90", False) == "Pctile.90"
    assert st.stat_name("_mean-95", False, "legacy") == "BAmean-95"
    assert st.stat_name("percentile-95", False, "legacy") == "Pct.95"
    assert st.stat_name("percentile-50", False, "legacy") == "2nd-qrtle"
    assert st.stat_name("submean-_mean", False) == "SubAmean"
    assert st.stat_name("submeanci-_mean", True) == "SubHmeanCI"


def test_summary_rows_of_each_type() -> None:
    s = st.summarise([[1.0], [2.0], [4.0]], higher_is_better=False, summary_type="Multiops")
    names = [st.stat_name(x, False) for x in s.stats]
    assert names == ["Min", "Amean", "Stddev", "CoeffVar", "Max", "BAmean.95"]
    assert s.values == pytest.approx(
        (1.0, 7 / 3, math.sqrt(7 / 3), math.sqrt(7 / 3) * 100 / (7 / 3), 4.0, 1.5)
    )
    assert s.n == 3 and s.main_index == 1
    assert s.ci == pytest.approx((7 / 3 - Q975 * math.sqrt(7 / 3), 7 / 3 + Q975 * math.sqrt(7 / 3)))
    h = st.summarise([[1.0, 2.0], [4.0]], higher_is_better=True, summary_type="Normalisedops")
    names = [st.stat_name(x, True) for x in h.stats]
    assert names == ["Min", "Hmean", "BHmean.95", "Pctile.95", "HStddev", "HCoeffVar", "Max"]
    assert h.values[1] == pytest.approx(12 / 7)
    assert h.values[2] == pytest.approx(8 / 3)
    left = st.summarise([X], False, "NormalisedLeftSkewops")
    assert [st.stat_name(x, False) for x in left.stats][2:4] == ["BAmean.50", "Pctile.50"]
    monitor = st.summarise([X], False, "Monitor")
    assert [st.stat_name(x, False) for x in monitor.stats] == ["Amean", "Max"]


def test_significance_ci_rule() -> None:
    # |Δmean| > 1.96 (σ_base + σ_new): means 11 and 15, σ = 1 each: 4 / 3.92 = 1.02 > 1
    base = st.summarise([[10.0], [11.0], [12.0]], False)
    new = st.summarise([[14.0], [15.0], [16.0]], False)
    mark, r = st.significant_ci(base, new)
    assert mark and r == pytest.approx(-4 / (2 * Q975))
    # 3.9 / 3.92 < 1
    near = st.summarise([[13.9], [14.9], [15.9]], False)
    assert not st.significant_ci(base, near)[0]
    # one sample: no interval, never significant
    one = st.summarise([[100.0]], False)
    assert not st.significant_ci(base, one)[0]
    # zero variance on both sides: cidiff is the raw difference (MMTests' quirk)
    assert st.significant_ci(st.summarise([[5.0], [5.0]], False), st.summarise([[6.5]] * 2, False))[
        0
    ]
    assert not st.significant_ci(
        st.summarise([[5.0], [5.0]], False), st.summarise([[5.5]] * 2, False)
    )[0]


def test_significance_ttest_rule() -> None:
    base = st.summarise([[10.0], [11.0], [12.0]], False)
    # stderr = sqrt(1/3 + 1/3); df = 4; t_{0.95, 4} = 2.131847 gives p = 0.10 exactly at
    # Δ = 2.131847 * sqrt(2/3) = 1.7407
    below = st.summarise([[x + 1.70] for x in (10.0, 11.0, 12.0)], False)
    above = st.summarise([[x + 1.80] for x in (10.0, 11.0, 12.0)], False)
    assert not st.significant_ttest(base, below)[0]
    assert st.significant_ttest(base, above)[0]
    p = st.ttest_p(11.0, 1.0, 3, 11.0 + 2.131847 * math.sqrt(2 / 3), 1.0, 3)
    assert p == pytest.approx(0.10, abs=1e-6)
    # zero variance: significant iff the means differ
    flat = st.summarise([[5.0], [5.0]], False)
    assert st.significant_ttest(flat, st.summarise([[5.0001]] * 2, False))[0]
    assert not st.significant_ttest(flat, st.summarise([[5.0]] * 2, False))[0]
    # the marked rows: /^.mean/ under the t-test, the ratio statistic's row under the CI rule
    assert st.is_mark_row("ttest", base, 1, "Amean")
    assert st.is_mark_row("ttest", base, 1, "Hmean")
    assert not st.is_mark_row("ttest", base, 5, "BAmean.95")
    assert st.is_mark_row("ci", base, 1, "Amean") and not st.is_mark_row("ci", base, 0, "Min")


@pytest.mark.parametrize(
    ("t", "df", "upper"),
    [
        (2.131847, 4, 0.05),  # t tables: one-sided 5 % points
        (2.015048, 5, 0.05),
        (1.812461, 10, 0.05),
        (2.776445, 4, 0.025),
        (1.0, 1, 0.25),  # Cauchy: 1/2 - atan(1)/pi
        (1.0, 2, 0.5 - 1 / (2 * math.sqrt(3))),  # df 2: 1/2 - t / (2 sqrt(t² + 2))
        (0.0, 7, 0.5),
        (-1.0, 1, 0.75),
    ],
)
def test_t_distribution_tail_without_scipy(t: float, df: float, upper: float) -> None:
    assert st.t_sf_fallback(t, df) == pytest.approx(upper, abs=2e-7)
    assert st.t_sf(t, df) == pytest.approx(upper, abs=2e-7)


def test_t_distribution_fallback_matches_scipy() -> None:
    scipy_stats = pytest.importorskip("scipy.stats")
    for df in (1, 2, 3, 4, 7, 12, 30, 100, 1000):
        for t in (0.01, 0.3, 1.0, 1.7, 2.5, 4.0, 9.0, 40.0):
            expected = float(scipy_stats.t.sf(t, df))
            assert st.t_sf_fallback(t, df) == pytest.approx(expected, rel=1e-9, abs=1e-300)


def test_geometric_mean_of_ratios() -> None:
    from schedsim.report.mmtests import gmean_of_ratios

    assert st.geomean([1.1, 0.9, 1.0]) == pytest.approx(0.99 ** (1 / 3))
    assert st.geomean([2.0, 8.0]) == pytest.approx(4.0)
    assert gmean_of_ratios([2.0, math.nan]) == pytest.approx(math.sqrt(2.0))  # NaN → 1
    assert gmean_of_ratios([0.0, 1.0]) == pytest.approx(math.sqrt(1e-5))  # 0 → 1e-5


def test_submean_by_hand() -> None:
    rng = np.random.default_rng(1)
    # one sample per iteration: L = 1, every draw is the sample: SubAmean = Amean, the spread
    # is the sample variance of the iterations: half = 1.96 sqrt((7/3) / 3)
    m, half = st.submean_ci([[1.0], [2.0], [4.0]], "amean", rng)
    assert m == pytest.approx(7 / 3)
    assert half == pytest.approx(Q975 * math.sqrt((7 / 3) / 3))
    # constant iterations of 5 samples: L = 4, med = 5 and 7, var = 0; smean = (1·4 + 1·4)/1
    m, half = st.submean_ci([[5.0] * 5, [7.0] * 5], "amean", rng)
    assert m == pytest.approx(6.0)
    assert half == pytest.approx(Q975 * math.sqrt(8 / 8))


def test_submean_is_seeded() -> None:
    data = [[3.0, 4.0, 9.0, 1.0, 5.0], [2.0, 6.0, 5.0, 3.0, 5.0]]
    a = st.submean_ci(data, "amean", np.random.default_rng(42))
    b = st.submean_ci(data, "amean", np.random.default_rng(42))
    assert a == b
    assert 1.0 < a[0] < 9.0 and a[1] > 0
    s = st.summarise(data, False, "Subselection", rng=np.random.default_rng(42))
    assert [st.stat_name(x, False) for x in s.stats][-2:] == ["SubAmean", "SubAmeanCI"]
    assert s.values[-2:] == pytest.approx(a)
    assert s.ratio_value == pytest.approx(a[0])
    assert s.ci == pytest.approx((a[0] - a[1], a[0] + a[1]))
