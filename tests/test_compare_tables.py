"""MMTests table layout (compare-mmtests.pl): golden text files under tests/golden/.

After a deliberate layout change, regenerate with
`SCHEDSIM_BLESS=1 .venv/bin/pytest tests/test_compare_tables.py` and review the diff.
"""

from __future__ import annotations

import math
import os
import textwrap
from pathlib import Path

import pytest

from schedsim import Experiment
from schedsim.report import mmtests
from schedsim.report import stats as st

GOLDEN = Path(__file__).parent / "golden"

CONFIGS = ["6.12-vanilla", "6.12-rc3-patched", "nohyphen"]
OPS = ["clients-1", "clients-4"]
# Throughput samples per config and op: three iterations of two samples each.
DATA = {
    "6.12-vanilla": {
        "clients-1": [[100.0, 102.0], [98.0, 101.0], [99.0, 100.0]],
        "clients-4": [[380.0, 390.0], [385.0, 395.0], [388.0, 382.0]],
    },
    "6.12-rc3-patched": {
        "clients-1": [[104.0, 103.0], [105.0, 102.0], [103.0, 104.0]],
        "clients-4": [[300.0, 310.0], [305.0, 295.0], [298.0, 302.0]],
    },
    "nohyphen": {
        "clients-1": [[100.5, 101.0], [99.5, 100.0], [100.0, 101.5]],
        "clients-4": [[0.0, 391.0], [386.0, 392.0], [380.0, 390.0]],  # a zero: Hmean is NaN
    },
}


def check_golden(name: str, text: str) -> None:
    golden = GOLDEN / name
    if os.environ.get("SCHEDSIM_BLESS") == "1":
        golden.parent.mkdir(exist_ok=True)
        golden.write_text(text)
    assert golden.exists(), f"{golden} missing: run with SCHEDSIM_BLESS=1 once and review it"
    assert text == golden.read_text()


def summaries(summary_type: str, higher: bool = True) -> dict:
    return {c: {op: st.summarise(DATA[c][op], higher, summary_type) for op in OPS} for c in CONFIGS}


def test_stats_table_ci_rule_golden() -> None:
    table = mmtests.stats_table(
        summaries("Normalisedops"), CONFIGS, OPS, rule="ci", title="tbench4 Throughput"
    )
    text = table.render()
    check_golden("compare_stats_ci.txt", text)
    lines = text.splitlines()
    # the header: config names split at the first '-' (after -rcN), right-aligned to 23
    assert lines[1].split() == ["6.12", "6.12-rc3"]
    assert lines[2].split() == ["vanilla", "patched", "nohyphen"]
    hmean = next(line for line in lines if line.startswith("Hmean     clients-4"))
    # %12.2f then ' (%7.2f%%)' on the baseline, ' *%7.2f%%*' where significant
    assert hmean == (
        "Hmean     clients-4      386.60 (   0.00%)      301.59 * -21.99%*        0.00 (   0.00%)"
    )
    # a zero sample makes the Hmean NaN, printed as 0 with 0 % (Compare.pm)
    assert hmean.endswith("        0.00 (   0.00%)")
    assert st.hmean([380.0, 390.0, 385.0, 395.0, 388.0, 382.0]) == pytest.approx(386.60, abs=0.005)
    # only the mean rows carry marks under the CI rule
    assert all("*" not in line for line in lines if not line.startswith("Hmean"))


def test_stats_table_ttest_rule_legacy_labels_golden() -> None:
    table = mmtests.stats_table(
        summaries("Normalisedops"),
        CONFIGS,
        OPS,
        rule="ttest",
        labels="legacy",
        title="tbench4 Throughput (pre-2024 rules)",
    )
    text = table.render()
    check_golden("compare_stats_ttest.txt", text)
    assert "BHmean-95 " in text and "Pct.95    " in text


def test_ratio_table_golden() -> None:
    table = mmtests.ratio_table(summaries("Multiops"), CONFIGS, OPS, title="ratios")
    text = table.render()
    check_golden("compare_ratio.txt", text)
    lines = text.splitlines()
    assert lines[-1].startswith("Gmean Higher")
    assert [line.split()[0] for line in lines[3:]] == [
        "Ratio",
        "Ratio",
        "Dmean",
        "Dmin",
        "Dmax",
        "Gmean",
    ]
    gmean = float(lines[-1].split()[3])
    r1 = st.hmean([104.0, 103.0, 105.0, 102.0, 103.0, 104.0]) / st.hmean(
        [100.0, 102.0, 98.0, 101.0, 99.0, 100.0]
    )
    r4 = st.hmean([300.0, 310.0, 305.0, 295.0, 298.0, 302.0]) / st.hmean(
        [380.0, 390.0, 385.0, 395.0, 388.0, 382.0]
    )
    assert gmean == pytest.approx(math.sqrt(r1 * r4), abs=0.005)


def test_lower_is_better_table_and_precision() -> None:
    summ = {
        c: {op: st.summarise([[1.25], [1.5], [1.75]], False) for op in OPS} for c in CONFIGS[:2]
    }
    summ[CONFIGS[1]] = {op: st.summarise([[1.0], [1.1], [1.2]], False) for op in OPS}
    text = mmtests.stats_table(summ, CONFIGS[:2], OPS, precision=4).render()
    amean = next(line for line in text.splitlines() if line.startswith("Amean"))
    # 4 decimals (hackbench's DecimalPlaces), pndiff: 100 - 1.1·100/1.5 = 26.67 % better
    assert amean.split()[2:] == ["1.5000", "(", "0.00%)", "1.1000", "(", "26.67%)"]


def test_split_name() -> None:
    assert mmtests.split_name("5.2-vanilla") == ("5.2", "vanilla")
    assert mmtests.split_name("v5.7-rc1-sugov") == ("v5.7-rc1", "sugov")
    assert mmtests.split_name("baseline") == ("", "baseline")
    assert mmtests.split_name("a-b-c") == ("a", "b-c")


EXPERIMENT = textwrap.dedent(
    """
    [experiment]
    name = "golden"
    repeats = 3
    seed = 7
    sample_interval = "100ms"

    [[machine]]
    preset = "skylake-8x"

    [[config]]
    name = "sugov-base"
    kernel = "5.2"
    driver = "intel_cpufreq"
    governor = "schedutil"
    invariance = "none"

    [[config]]
    name = "sugov-turbo4"
    kernel = "5.2"
    driver = "intel_cpufreq"
    governor = "schedutil"
    invariance = "turbo:4"

    [[config]]
    name = "pstate-perf"
    kernel = "5.2"
    driver = "intel_pstate"
    governor = "performance"

    [[benchmark]]
    workload = "periodic"
    param = "tasks"
    values = [1, 2, 4]
    params = { duty_pct = 20, period_ms = 16 }
    duration = "500ms"
    metrics = ["slack_us_p50", "activations"]
    prefer = { activations = "higher" }
    """
)


def test_full_comparison_golden(varying_core, tmp_path) -> None:
    path = tmp_path / "golden.toml"
    path.write_text(EXPERIMENT)
    result = Experiment.from_toml(path).run(jobs=1)
    text = result.text()
    check_golden("compare_fake.txt", text)
    titles = [line for line in text.splitlines() if line.startswith("periodic ")]
    assert titles == [
        "periodic slack_us_p50 (skylake-8x)",
        "periodic slack_us_p50 ratio to sugov-base (skylake-8x)",
        "periodic activations (skylake-8x)",
        "periodic activations ratio to sugov-base (skylake-8x)",
        "periodic package power, W (skylake-8x)",
        "periodic perf-per-watt = Hmean slack_us_p50 / Amean PkgWatt, ratio to sugov-base "
        "(skylake-8x)",
        "periodic turbostat (skylake-8x)",
    ]
    assert "Amean Avg_MHz" in text and "Max   PkgWatt" in text
