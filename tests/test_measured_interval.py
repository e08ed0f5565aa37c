"""Power and turbostat cover the interval the workload's metrics measure (its warm-up left
out), so perf-per-watt divides a rate by the power of the same interval."""

import pytest

import schedsim


def test_sqlite_power_leaves_out_the_warmup_its_rate_leaves_out() -> None:
    # MMTests' sqlite-txnpersec.pl drops the first 2 s of transactions
    long = schedsim.run("skylake-8x", "sqlite-insert:inserts=9000", kernel="6.12")
    assert long.metrics["elapsed_s"] > 2.5
    assert long.json["sim"]["measured_from_s"] == pytest.approx(2.0)
    window = long.json["sim"]["simulated_s"] - 2.0
    power = long.json["power"]
    assert power["avg_package_w"] == pytest.approx(power["energy_j"] / window, rel=1e-9)
    # a run shorter than the threshold is measured whole, rate and power alike
    short = schedsim.run("skylake-8x", "sqlite-insert:inserts=2520", kernel="6.12")
    assert short.metrics["elapsed_s"] < 2.0
    assert short.json["sim"]["measured_from_s"] == 0.0
    sp = short.json["power"]
    assert sp["avg_package_w"] == pytest.approx(
        sp["energy_j"] / short.json["sim"]["simulated_s"], rel=1e-9
    )


def test_a_run_shorter_than_sqlites_threshold_is_measured_whole() -> None:
    # the threshold is the tool's, not a warm-up the user chose: a short --duration is fine
    r = schedsim.run("skylake-8x", "sqlite-insert:inserts=9000", kernel="6.12", duration="1s")
    assert r.json["sim"]["measured_from_s"] == 0.0
    assert r.metrics["txn_per_s"] > 0
    assert r.metrics["elapsed_s"] is None  # the work was cut short
