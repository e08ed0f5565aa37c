"""MMTests' summary statistics, comparisons and significance rules (spec/workloads.md §1).

Ported from gormanm/mmtests at 638401e0: `bin/lib/MMTests/Stat.pm` (the statistics, `pdiff`,
`pndiff`, `rdiff`, `cidiff`, `calc_geomean`), `Summarise.pm` (the summary sets, best-first
sorting, `runStatFunc`), `Compare.pm` (the significance mark) and
`bin/lib/Python/subselection-confidence-interval.py` (SubAmean); the t-test rule from
`Compare.pm::_significanceTest` at 8cd087ae^ (before Nov 2024).

Deviations, each deliberate and documented in docs/compare.md:
- SubAmean draws at least one sample per iteration (MMTests draws int(0.8·n), which is 0 for an
  iteration with one sample and then prints NaN); it is seeded so that reruns are identical.
- MMTests evaluates qnorm/pt by calling R; here `statistics.NormalDist` gives qnorm and the
  Student t tail comes from scipy when it is installed, else from `t_sf_fallback` (the
  regularised incomplete beta function by Lentz's continued fraction).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Literal

import numpy as np

NAN = float("nan")
ALPHA = 0.05  # Summarise.pm::runStatFunc
TTEST_LEVEL = 0.10  # Compare.pm::_significanceTest default _SignificanceLevel (before 8cd087ae)

MeanKind = Literal["amean", "hmean"]
Rule = Literal["ci", "ttest"]
Labels = Literal["current", "legacy"]

# Summarise.pm: the statistics each summary type prints, in order; "_mean" is hmean when
# higher is better, amean otherwise. "Monitor" is SummariseMonitor.pm (turbostat and friends).
SUMMARY_STATS: dict[str, tuple[str, ...]] = {
    "Multiops": ("min", "_mean", "stddev-_mean", "coeffvar-_mean", "max", "_mean-95"),
    "Normalisedops": (
        "min",
        "_mean",
        "_mean-95",
        "percentile-95",
        "stddev-_mean",
        "coeffvar-_mean",
        "max",
    ),
    "NormalisedLeftSkewops": (
        "min",
        "_mean",
        "_mean-50",
        "percentile-50",
        "_mean-75",
        "percentile-75",
        "_mean-90",
        "percentile-90",
        "_mean-99",
        "percentile-99",
        "stddev-_mean",
        "coeffvar-_mean",
        "max",
    ),
    "Subselection": (
        "min",
        "_mean",
        "_mean-95",
        "stddev-_mean",
        "coeffvar-_mean",
        "max",
        "submean-_mean",
        "submeanci-_mean",
    ),
    "Monitor": ("_mean", "max"),
}
SUMMARY_TYPES = tuple(k for k in SUMMARY_STATS if k != "Monitor")

# _RatioSummaryStat[0]: the statistic compared for significance and in ratio tables.
RATIO_STAT = dict.fromkeys(SUMMARY_STATS, "_mean") | {"Subselection": "submean-_mean"}

# Stat.pm stat_compare: statistics compared with a fixed function whatever the direction.
STAT_COMPARE = {"stddev": "pndiff", "coeffvar": "pndiff", "submeanci": "pndiff", "samples": "pdiff"}

# Stat.pm stat_names at HEAD ("current", since fa1c230f, 2026-04) and before ("legacy").
_NAMES = {
    "min": "Min",
    "max": "Max",
    "amean": "Amean",
    "hmean": "Hmean",
    "stddev-amean": "Stddev",
    "stddev-hmean": "HStddev",
    "coeffvar-amean": "CoeffVar",
    "coeffvar-hmean": "HCoeffVar",
    "submean-amean": "SubAmean",
    "submean-hmean": "SubHmean",
    "submeanci-amean": "SubAmeanCI",
    "submeanci-hmean": "SubHmeanCI",
}
_PARAM_NAMES = {
    "current": {"amean-": "BAmean.{}", "hmean-": "BHmean.{}", "percentile-": "Pctile.{}"},
    "legacy": {"amean-": "BAmean-{}", "hmean-": "BHmean-{}", "percentile-": "Pct.{}"},
}
_LEGACY_QUARTILES = {"25": "1st-qrtle", "50": "2nd-qrtle", "75": "3rd-qrtle"}


# ---- the statistics (Stat.pm) --------------------------------------------------------------


def amean(xs: Sequence[float]) -> float:
    """Σx/n; NaN for no data. Computed as x₀ + Σ(x − x₀)/n, so that identical samples give
    exactly their value and a zero Stddev (not one of rounding noise)."""
    if len(xs) == 0:
        return NAN
    x0 = xs[0]
    return x0 + math.fsum(x - x0 for x in xs) / len(xs)


def hmean(xs: Sequence[float]) -> float:
    """n/Σ(1/x); NaN for no data or if any x ≤ 0 (Stat.pm::calc_hmean). Identical samples give
    exactly their value."""
    if len(xs) == 0 or any(not x > 0 for x in xs):
        return NAN
    if all(x == xs[0] for x in xs):
        return float(xs[0])
    return len(xs) / math.fsum(1.0 / x for x in xs)


def mean(xs: Sequence[float], kind: MeanKind) -> float:
    return hmean(xs) if kind == "hmean" else amean(xs)


def geomean(xs: Sequence[float]) -> float:
    """(Πx)^(1/n) (Stat.pm::calc_geomean); NaN for no data or a negative product."""
    if len(xs) == 0:
        return NAN
    if all(x > 0 for x in xs):
        return math.exp(math.fsum(math.log(x) for x in xs) / len(xs))
    product = math.prod(xs)
    if product < 0:
        return NAN
    return product ** (1.0 / len(xs))


def stddev(xs: Sequence[float], kind: MeanKind) -> float:
    """Stddev (amean): sqrt(Σ(x−mean)²/(n−1)). HStddev (hmean):
    sqrt(Σ(1/x − 1/hmean)²·hmean⁴/n). NaN when the mean is NaN or n ≤ 1 (Stat.pm::calc_stddev)."""
    m = mean(xs, kind)
    n = len(xs)
    if math.isnan(m) or n <= 1:
        return NAN
    if kind == "amean":
        return math.sqrt(math.fsum((x - m) ** 2 for x in xs) / (n - 1))
    return math.sqrt(math.fsum((1.0 / x - 1.0 / m) ** 2 for x in xs) * m**4 / n)


def coeffvar(xs: Sequence[float], kind: MeanKind) -> float:
    """Stddev·100/mean; a NaN stddev or mean counts as 0, and a zero mean gives 0
    (Stat.pm::calc_coeffvar)."""
    m = mean(xs, kind)
    sd = stddev(xs, kind)
    sd = 0.0 if math.isnan(sd) else sd
    m = 0.0 if math.isnan(m) else m
    return sd * 100.0 / m if m else 0.0


def best_first(xs: Sequence[float], higher_is_better: bool) -> list[float]:
    """The samples sorted best first: descending when higher is better (Summarise.pm)."""
    return sorted(xs, reverse=higher_is_better)


def _count(n: int, pct: float) -> int:
    return max(1, int(n * pct / 100))


def percentile(best: Sequence[float], pct: float) -> float:
    """Pctile-P of best-first data: element int(n·P/100) (at least 1), counted from the best."""
    if len(best) == 0:
        return NAN
    return best[_count(len(best), pct) - 1]


def best_mean(best: Sequence[float], pct: float, kind: MeanKind) -> float:
    """BAmean-P / BHmean-P: the mean of the best int(n·P/100) samples (at least 1)."""
    if len(best) == 0:
        return NAN
    return mean(best[: _count(len(best), pct)], kind)


# ---- comparisons (Stat.pm) -----------------------------------------------------------------


def pdiff(new: float, base: float) -> float:
    """new·100/base − 100, for higher-is-better statistics: equal or new = 0 → 0;
    base = 0 or NaN → 100."""
    if new == base or new == 0:
        return 0.0
    if base == 0 or math.isnan(base):
        return 100.0
    return new * 100.0 / base - 100.0


def signed_pdiff(new: float, base: float) -> float:
    """(new − base)·100/|base|: `pdiff` for a signed statistic (a slack), whose baseline may be
    negative; positive is better, as for `pdiff` of a positive baseline."""
    if new == base:
        return 0.0
    if base == 0 or math.isnan(base):
        return 100.0
    return (new - base) * 100.0 / abs(base)


def signed_rdiff(new: float, base: float) -> float:
    """1 + (new − base)/|base|: the ratio new/base for a positive baseline, and the same
    "above 1 is better" reading for a negative one (a late slack that got less late)."""
    if base == 0 or math.isnan(base):
        return 0.0
    if math.isnan(new):
        return 1.0
    return 1.0 + (new - base) / abs(base)


def pndiff(new: float, base: float) -> float:
    """100 − new·100/base, for lower-is-better statistics (and always for Stddev, CoeffVar,
    SubAmeanCI): equal → 0; new = 0 → 100; base = 0 → −99."""
    if new == base:
        return 0.0
    if new == 0:
        return 100.0
    if base == 0:
        return -99.0
    return 100.0 - new * 100.0 / base


def rdiff(new: float, base: float) -> float:
    """The ratio new/base: 0 if base is 0 or NaN, 1 if new is 0 or NaN."""
    if base == 0 or math.isnan(base):
        return 0.0
    if new == 0 or math.isnan(new):
        return 1.0
    return new / base


def cidiff(
    new: float, new_ci: tuple[float, float], base: float, base_ci: tuple[float, float]
) -> float:
    """The difference in units of the two confidence half-intervals facing each other; the raw
    difference when both are empty (Stat.pm::cidiff)."""
    diff = new - base
    if new < base:
        cisum = new_ci[1] - new + base - base_ci[0]
    else:
        cisum = new - new_ci[0] + base_ci[1] - base
    if cisum == 0:
        return diff
    return diff / cisum


def compare_function(stat: str, higher_is_better: bool) -> str:
    """`pdiff` or `pndiff` for one statistic (Summarise.pm::getStatCompareFunc)."""
    head = stat.split("-", 1)[0]
    if head in STAT_COMPARE:
        return STAT_COMPARE[head]
    return "pdiff" if higher_is_better else "pndiff"


def compare(
    stat: str, higher_is_better: bool, new: float, base: float, signed: bool = False
) -> float:
    fn = compare_function(stat, higher_is_better)
    if fn == "pdiff":
        return signed_pdiff(new, base) if signed else pdiff(new, base)
    return pndiff(new, base)


# ---- distributions -------------------------------------------------------------------------


def qnorm(p: float, sd: float = 1.0) -> float:
    """R's qnorm(p, 0, sd); NaN for a NaN sd."""
    if math.isnan(sd):
        return NAN
    if sd == 0:
        return 0.0
    return NormalDist(0.0, sd).inv_cdf(p)


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (modified Lentz)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c = 1.0
    d = 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 1000):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-15:
            break
    return h


def betainc_regularized(a: float, b: float, x: float) -> float:
    """I_x(a, b), the regularised incomplete beta function."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    front = math.exp(log_front)
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_sf_fallback(t: float, df: float) -> float:
    """P(T > t) for Student's t with df degrees of freedom (R's pt(t, df, lower.tail=FALSE)),
    without scipy: 0.5·I_{df/(df+t²)}(df/2, 1/2) for t ≥ 0."""
    if math.isnan(t) or not df > 0:
        return NAN
    if math.isinf(t):
        return 0.0 if t > 0 else 1.0
    tail = 0.5 * betainc_regularized(df / 2.0, 0.5, df / (df + t * t))
    return tail if t >= 0 else 1.0 - tail


def t_sf(t: float, df: float) -> float:
    """P(T > t): scipy's `stats.t.sf` when scipy is installed, else `t_sf_fallback`."""
    if math.isnan(t) or not df > 0:
        return NAN
    try:
        from scipy import stats as _scipy_stats
    except ImportError:
        return t_sf_fallback(t, df)
    return float(_scipy_stats.t.sf(t, df))


# ---- SubAmean (subselection-confidence-interval.py) ----------------------------------------


def submean_ci(
    iterations: Sequence[Sequence[float]],
    kind: MeanKind,
    rng: np.random.Generator,
    alpha: float = ALPHA,
    selections: int = 1000,
    fracsize: float = 0.8,
) -> tuple[float, float]:
    """The Kalibera/Bulej/Tůma subselection mean and its CI half-length.

    Per iteration j (n_j samples), L_j = int(0.8·n_j) (at least 1); 1000 draws of L_j samples
    with replacement give the median sub-mean med_j, 1000 more the median variance v_j. Then
    m = mean(med_j), svar = mean(v_j), smean = Σ(med_j − m)²·L_j/(iters − 1) and
    half = qnorm(1 − α/2)·sqrt((smean + svar)/ΣL_j).
    """
    arrays = [np.asarray(x, dtype=float) for x in iterations if len(x) > 0]
    iters = len(arrays)
    if iters == 0:
        return NAN, NAN
    if kind == "hmean" and any(bool((a <= 0).any()) for a in arrays):
        return NAN, NAN
    med = np.zeros(iters)
    var = np.zeros(iters)
    lens = np.zeros(iters, dtype=int)
    for j, xx in enumerate(arrays):
        lens[j] = max(1, int(fracsize * len(xx)))
        draws = rng.choice(xx, size=(selections, lens[j]), replace=True)
        sub = 1.0 / np.mean(1.0 / draws, axis=1) if kind == "hmean" else np.mean(draws, axis=1)
        draws = rng.choice(xx, size=(selections, lens[j]), replace=True)
        med[j] = np.median(sub)
        var[j] = np.median(np.var(draws, axis=1))
    m = float(np.mean(med))
    svar = float(np.mean(var))
    smean = 0.0
    if iters > 1:
        smean = float(np.sum((med - m) ** 2 * lens)) / (iters - 1)
    half = NormalDist().inv_cdf(1 - alpha / 2) * math.sqrt((smean + svar) / float(np.sum(lens)))
    return m, half


# ---- summaries -----------------------------------------------------------------------------


def mean_kind(higher_is_better: bool, signed: bool = False) -> MeanKind:
    """Summarise.pm's mean: Hmean when higher is better (rates), Amean otherwise. A metric that
    can be zero or negative (an rt-app slack) takes Amean either way: the harmonic mean of such
    values is undefined."""
    return "hmean" if higher_is_better and not signed else "amean"


def stat_name(
    stat: str, higher_is_better: bool, labels: Labels = "current", kind: MeanKind | None = None
) -> str:
    """The printed name of a statistic (Summarise.pm::getStatName, Stat.pm stat_names)."""
    kind = kind or mean_kind(higher_is_better)
    key = stat.replace("_mean", kind)
    if key in _NAMES:
        return _NAMES[key]
    head, _, arg = key.partition("-")
    if labels == "legacy" and head == "percentile" and arg in _LEGACY_QUARTILES:
        return _LEGACY_QUARTILES[arg]
    template = _PARAM_NAMES[labels].get(head + "-")
    if template is None:
        return key
    return template.format(int(float(arg)) if float(arg).is_integer() else arg)


@dataclass(frozen=True)
class Summary:
    """One op's summary for one config: the statistics of `SUMMARY_STATS[summary_type]` and what
    the significance rules need."""

    summary_type: str
    higher_is_better: bool
    kind: MeanKind  # which mean `_mean` is
    stats: tuple[str, ...]
    values: tuple[float, ...]
    n: int  # pooled sample count
    mean: float  # the _mean statistic (Hmean or Amean)
    sd: float  # its Stddev/HStddev (NaN for n ≤ 1)
    ratio_value: float  # _RatioSummaryStat[0]: the mean, or SubAmean for Subselection
    ci: tuple[float, float] | None  # confidence interval of ratio_value, None when undefined

    @property
    def signed(self) -> bool:
        """A higher-is-better metric averaged arithmetically: a slack, which may be negative."""
        return self.higher_is_better and self.kind == "amean"

    @property
    def main_index(self) -> int:
        """Index of the row that carries the significance mark under the CI rule."""
        return self.stats.index(RATIO_STAT[self.summary_type])

    def value(self, stat: str) -> float:
        return self.values[self.stats.index(stat)]


def summarise(
    iterations: Sequence[Sequence[float]],
    higher_is_better: bool,
    summary_type: str = "Multiops",
    rng: np.random.Generator | None = None,
    kind: MeanKind | None = None,
) -> Summary:
    """Summarise one op: `iterations` holds each iteration's samples; they are pooled and sorted
    best-first, then every statistic of the summary type is computed as Summarise.pm does.
    `kind` overrides the mean (`mean_kind`)."""
    if summary_type not in SUMMARY_STATS:
        raise ValueError(
            f"unknown summary type '{summary_type}'; allowed: {', '.join(SUMMARY_STATS)}"
        )
    kind = kind or mean_kind(higher_is_better)
    pooled = [float(x) for it in iterations for x in it]
    best = best_first(pooled, higher_is_better)
    n = len(best)
    m = mean(best, kind)
    sd = stddev(best, kind)
    sub: tuple[float, float] | None = None
    stats = SUMMARY_STATS[summary_type]

    def compute(stat: str) -> float:
        nonlocal sub
        if stat == "min":
            return min(best) if best else NAN
        if stat == "max":
            return max(best) if best else NAN
        if stat == "_mean":
            return m
        if stat == "stddev-_mean":
            return sd
        if stat == "coeffvar-_mean":
            return coeffvar(best, kind)
        if stat.startswith("submean"):
            if sub is None:
                sub = submean_ci(iterations, kind, rng or np.random.default_rng(0))
            return sub[0] if stat == "submean-_mean" else sub[1]
        head, _, arg = stat.partition("-")
        if head == "percentile":
            return percentile(best, float(arg))
        if head == "_mean":
            return best_mean(best, float(arg), kind)
        raise ValueError(f"unknown statistic {stat}")

    values = tuple(compute(s) for s in stats)
    ratio_stat = RATIO_STAT[summary_type]
    if ratio_stat == "_mean":
        q = qnorm(1 - ALPHA / 2, sd)
        ratio_value = m
        ci = None if math.isnan(q) or math.isnan(m) else (m - q, m + q)
    else:
        if sub is None:
            sub = submean_ci(iterations, kind, rng or np.random.default_rng(0))
        ratio_value = sub[0]
        ci = (
            None if math.isnan(sub[0]) or math.isnan(sub[1]) else (sub[0] - sub[1], sub[0] + sub[1])
        )
    return Summary(
        summary_type=summary_type,
        higher_is_better=higher_is_better,
        kind=kind,
        stats=stats,
        values=values,
        n=n,
        mean=m,
        sd=sd,
        ratio_value=ratio_value,
        ci=ci,
    )


# ---- significance --------------------------------------------------------------------------


def significant_ci(base: Summary, new: Summary) -> tuple[bool, float]:
    """The current rule (8cd087ae, Nov 2024): |cidiff| > 1 between the ratio statistics' 95 %
    intervals (mean ± 1.96·stddev). Not significant when either interval is undefined."""
    if base.ci is None or new.ci is None:
        return False, 0.0
    r = cidiff(base.ratio_value, base.ci, new.ratio_value, new.ci)
    if math.isnan(r):
        return False, 0.0
    return abs(r) > 1, r


def ttest_p(
    base_mean: float, base_sd: float, base_n: int, new_mean: float, new_sd: float, new_n: int
) -> float:
    """Two-sided p-value of Compare.pm's t-test before 8cd087ae: stderr = sqrt(σb²/nb + σn²/nn),
    t = |Δ|/stderr, df = nb + nn − 2, p = 2·P(T > t). Zero stderr: p = 0 if the means differ,
    else 1."""
    base_sd = 0.0 if math.isnan(base_sd) else base_sd
    new_sd = 0.0 if math.isnan(new_sd) else new_sd
    stderr = 0.0
    if base_n and new_n:
        stderr = math.sqrt(base_sd**2 / base_n + new_sd**2 / new_n)
    if not stderr:
        return 0.0 if base_mean - new_mean else 1.0
    t = abs((base_mean - new_mean) / stderr)
    return 2.0 * t_sf(t, base_n + new_n - 2)


def significant_ttest(
    base: Summary, new: Summary, level: float = TTEST_LEVEL
) -> tuple[bool, float]:
    """The rule before Nov 2024: significant when the t-test's p < 0.10. Returns (mark, p)."""
    p = ttest_p(base.mean, base.sd, base.n, new.mean, new.sd, new.n)
    return (not math.isnan(p) and p < level), p


def is_mark_row(rule: Rule, summary: Summary, index: int, label: str) -> bool:
    """Which row carries the mark: the ratio statistic's row (CI rule), or every row whose name
    matches /^.mean/ — Amean, Hmean (t-test rule, Compare.pm at 8cd087ae^)."""
    if rule == "ci":
        return index == summary.main_index
    return label[1:5] == "mean"
