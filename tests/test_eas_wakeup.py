"""The eb92692b study (seed 002) through the compiled core: experiments/eas-wakeup-eb92692b.toml,
shortened to 1.5 simulated seconds and one repeat, and the `select_task_rq_fair` profile tables
it prints."""

from __future__ import annotations

import math
import tomllib
from pathlib import Path

import pytest

from schedsim.compare import pooled_select_profile
from schedsim.experiment import Experiment

STUDY = Path(__file__).parent.parent / "experiments" / "eas-wakeup-eb92692b.toml"


def test_pooled_profile_matches_one_session() -> None:
    """Two runs pooled give the mean and sample variance of all their calls together."""
    a, b = [1.0, 2.0, 3.0], [5.0, 7.0]

    def run(xs: list[float]) -> dict:
        n, m = len(xs), sum(xs) / len(xs)
        var = sum((x - m) ** 2 for x in xs) / (n - 1)
        rows = [{"cpu": 0, "hits": n, "avg_us": m, "var_us2": var}]
        rows.append({"cpu": 1, "hits": 0, "avg_us": 0.0, "var_us2": 0.0})
        return {"eas": {"select_task_rq_fair": rows}}

    prof = pooled_select_profile([run(a), run(b)])
    xs = a + b
    mean = sum(xs) / len(xs)
    var = sum((x - mean) ** 2 for x in xs) / (len(xs) - 1)
    hits, avg, s2 = prof[0]
    assert hits == pytest.approx(2.5)
    assert avg == pytest.approx(mean)
    assert s2 == pytest.approx(var)
    assert prof[1][0] == 0 and math.isnan(prof[1][1])
    assert pooled_select_profile([{"eas": {"select_task_rq_fair": []}}, {}]) == {}


@pytest.mark.usefixtures("real_core")
def test_per_cpu_policies_gain_the_most_from_5_4() -> None:
    data = tomllib.loads(STUDY.read_text())
    data["experiment"]["repeats"] = 1
    data["benchmark"][0]["duration"] = "1500ms"
    exp = Experiment.from_dict(data, origin=str(STUDY), base_dir=STUDY.parent)
    res = exp.run(jobs=1)

    tables = [t for t in res.table_list if t.section == "select-profile"]
    assert [t.configs for t in tables] == [
        ["percpu-v5.3", "percpu-v5.4"],
        ["cluster-v5.3", "cluster-v5.4"],
    ]
    assert "select_task_rq_fair per waking CPU" in res.text()

    def totals(config: str) -> tuple[float, float]:
        """All CPUs: hits per run and the mean time of one call (us)."""
        runs = [res.results[s.key] for s in exp.specs if s.config == config]
        prof = pooled_select_profile(runs)
        hits = sum(h for h, _, _ in prof.values())
        return hits, sum(h * m for h, m, _ in prof.values() if h) / hits

    (h53p, a53p), (h54p, a54p) = totals("percpu-v5.3"), totals("percpu-v5.4")
    (h53c, a53c), (h54c, a54c) = totals("cluster-v5.3"), totals("cluster-v5.4")
    # the same wakeups are placed before and after (no functional change) ...
    assert h53p > 50 and h54p == pytest.approx(h53p, rel=0.1)
    assert h53c > 50 and h54c == pytest.approx(h53c, rel=0.1)
    # ... each call is cheaper with 5.4 ...
    assert a54p < a53p and a54c < a53c
    # ... and per-CPU policies (O(n^2) -> O(n)) gain the most, as in seed 002.
    assert (a53p - a54p) / a53p > (a53c - a54c) / a53c + 0.2
    assert a53p > a53c
