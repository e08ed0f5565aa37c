"""rt-app JSON files through the front end (`rt-app:PATH`), with the compiled core.

The grammar, the metrics and every shipped file are tested in the core
(`crates/schedsim-core/tests/workload_rtapp.rs`); this checks the path from the workload string.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import schedsim

DATA = Path(__file__).parent.parent / "crates" / "schedsim-core" / "data" / "rt-app"

pytestmark = pytest.mark.usefixtures("real_core")


def test_rt_app_file_runs_and_reports_its_log_metrics() -> None:
    path = DATA / "eb92692b-ramp-70-10-16ms.reconstructed.json"
    r = schedsim.run("skylake-8x", f"rt-app:{path}", governor="performance", duration="600ms")
    assert r["workload"]["name"] == "rt-app"
    assert r.primary["name"] == "slack_us_mean"
    assert r.primary["higher_is_better"] is True
    assert r.metrics["task.down.p000001.c_duration_us"] == 11200
    assert r.metrics["task.down.p000001.c_period_us"] == 16000
    assert r.metrics["task.down.p000001.rows"] == 31
    assert r.metrics["slack_us_mean"] > 0


def test_rt_app_unsupported_property_is_a_config_error() -> None:
    with pytest.raises(schedsim.ConfigError, match="unsupported phase-level 'taskgroup'"):
        schedsim.run("skylake-8x", f"rt-app:{DATA / 'tutorial' / 'example11.json'}")
