"""Per-task utilization clamps (`sched_setattr()` with SCHED_FLAG_UTIL_CLAMP, v5.3+) as the
kernel applies them: schedutil runs a boosted task's CPU at the OPP its `uclamp_min` asks for
and holds a capped one to its `uclamp_max`; from v5.6 Energy Aware Scheduling and misfit
detection see the clamps, so a boosted small task leaves the LITTLE CPUs; rt-app's
`util_min`/`util_max` and the `set_uclamp` op set them. rk3399: CPUs 0-3 Cortex-A53
(capacity 446 at 1416 MHz), 4-5 Cortex-A72 (1024 at 1800 MHz)."""

import json

import pytest

import schedsim
from schedsim import programs as p
from schedsim.errors import ConfigError

BIG = 4
LITTLE = [0, 1, 2, 3]


def small(**kw):
    # 1 ms every 10 ms: utilization about 100 at the top OPP
    return p.task("s", p.loop(p.run_for(1_000_000), p.sleep(9_000_000)), **kw)


def hog(**kw):
    return p.task("h", p.loop(p.run(1e12)), **kw)


def run(tasks, kernel="6.12", **kw):
    return schedsim.run(
        "rk3399", p.custom_workload(tasks=tasks), kernel=kernel, governor="schedutil", **kw
    )


@pytest.mark.parametrize("kernel", ["5.10", "6.12"])
def test_uclamp_min_runs_a_small_task_at_the_top_opp(kernel) -> None:
    # The boost lasts while the task is runnable: each wakeup asks for the top OPP and each
    # sleep lets the request fall. On 5.10 rk3399's default rate limit is 10 ms (40 us of
    # transition latency x 1000, capped), so some wakeups' requests are refused and the
    # bursts start lower; without the rate limit every burst runs at the top.
    sets = {"schedutil.rate_limit_us": 0} if kernel == "5.10" else {}
    plain = run([small(start_cpu=BIG, cpus=[BIG])], kernel=kernel, duration="300ms", sets=sets)
    boosted = run(
        [small(start_cpu=BIG, cpus=[BIG], uclamp_min=1024)],
        kernel=kernel,
        duration="300ms",
        sets=sets,
    )
    assert plain.cpus.avg_khz[BIG] < 0.7 * 1_800_000
    assert boosted.cpus.avg_khz[BIG] == pytest.approx(1_800_000, rel=0.01)


@pytest.mark.parametrize(
    ("kernel", "khz"),
    [
        # v6.6+ (sugov_effective_cpu_perf): the cap without headroom, 512 -> 900 -> 1008 MHz
        ("6.12", 1_008_000),
        # before: min(util, 512) with the 1.25 headroom, 1125 -> 1200 MHz
        ("5.10", 1_200_000),
    ],
)
def test_uclamp_max_caps_a_hogs_frequency(kernel, khz) -> None:
    r = run([hog(start_cpu=BIG, cpus=[BIG], uclamp_max=512)], kernel=kernel, duration="300ms")
    assert r.cpus.avg_khz[BIG] == pytest.approx(khz, rel=0.03)


def test_set_uclamp_changes_the_clamp_mid_run() -> None:
    # capped for the first ~150 ms, then released: the CPU's average sits between the two
    prog = [
        p.set_uclamp(max=512),
        p.run_for(150_000_000),
        p.set_uclamp(max=1024),
        p.loop(p.run(1e12)),
    ]
    both = run([p.task("h", *prog, start_cpu=BIG, cpus=[BIG])], duration="300ms")
    capped = run([hog(start_cpu=BIG, cpus=[BIG], uclamp_max=512)], duration="300ms")
    free = run([hog(start_cpu=BIG, cpus=[BIG])], duration="300ms")
    assert capped.cpus.avg_khz[BIG] < both.cpus.avg_khz[BIG] < free.cpus.avg_khz[BIG]


def big_share(r) -> float:
    busy = r.cpus.busy_ns
    return sum(busy[c] for c in (4, 5)) / sum(busy)


@pytest.mark.parametrize("kernel", ["5.10", "6.12"])
def test_a_boosted_small_task_leaves_the_little_cpus(kernel) -> None:
    # Unclamped, EAS keeps the small task on a LITTLE CPU. With uclamp_min 1024 it does not
    # fit a LITTLE CPU any more: v6.2+'s util_fits_cpu() admits only the big CPUs in the
    # energy-aware wakeup; v5.6-v6.1 it fits nowhere, and misfit migration takes it to a big
    # CPU.
    plain = run([small()], kernel=kernel, duration="1s")
    boosted = run([small(uclamp_min=1024)], kernel=kernel, duration="1s")
    assert big_share(plain) < 0.05
    assert big_share(boosted) > 0.9


def test_rt_app_util_min_and_util_max(tmp_path) -> None:
    rtapp = {
        "global": {"duration": 1, "calibration": 1000},
        "tasks": {
            "boosted": {
                "cpus": [BIG],
                "util_min": 1024,
                "phases": {
                    "p1": {"loop": 10, "run": 1000, "sleep": 9000},
                    "p2": {"util_min": 0, "util_max": 300, "run": 100000},
                },
            }
        },
    }
    path = tmp_path / "clamped.json"
    path.write_text(json.dumps(rtapp))
    r = schedsim.run(
        "rk3399", f"rt-app:{path}", kernel="6.12", governor="schedutil", sample_interval="50ms"
    )
    mhz = list(r.samples.bzy_mhz)
    # 0-100 ms p1 boosted by the task's util_min: the top OPP; 100-200 ms p2 capped at 300;
    # 200-300 ms p1 again, which writes no clamp and so keeps p2's (rt-app sets only what a
    # phase gives): the small task runs low
    assert mhz[0] == pytest.approx(1800, rel=0.02)
    assert mhz[3] < 1000
    assert mhz[5] < 1200


def test_a_capped_hog_stays_on_a_little_cpu_from_v6_2() -> None:
    # util_fits_cpu(): a uclamp_max at or below a LITTLE CPU's capacity (446) makes the hog
    # fit there, for EAS and for cpu_overutilized, so the energy-aware wakeup keeps it there
    plain = run([hog()], duration="1s")
    capped = run([hog(uclamp_max=300)], duration="1s")
    assert big_share(plain) > 0.9
    assert big_share(capped) < 0.1


def test_the_rt_default_sysctl_lets_rt_tasks_run_below_the_top_opp() -> None:
    rt = p.task("rt", p.loop(p.run_for(1_000_000), p.sleep(9_000_000)), start_cpu=BIG, cpus=[BIG])
    rt["policy"], rt["priority"] = "SCHED_FIFO", 10
    default = run([rt], duration="300ms")
    low = run([rt], duration="300ms", sets={"sched_util_clamp_min_rt_default": 0})
    assert default.cpus.avg_khz[BIG] == pytest.approx(1_800_000, rel=0.01)
    assert low.cpus.avg_khz[BIG] < 0.7 * 1_800_000


@pytest.mark.parametrize(
    ("kernel", "tasks", "message"),
    [
        ("5.2", [small(uclamp_min=100)], "need kernel 5.3 or later"),
        ("6.12", [p.task("t", p.set_uclamp(min=900, max=100))], "exceeds uclamp_max"),
    ],
)
def test_bad_clamps_are_refused(kernel, tasks, message) -> None:
    with pytest.raises(ConfigError, match=message):
        run(tasks, kernel=kernel, duration="10ms")


def test_rt_app_util_min_out_of_range_names_the_key(tmp_path) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"tasks": {"t": {"util_min": 2000, "run": 1000}}}))
    with pytest.raises(
        ConfigError, match=r"tasks\.t\.util_min.*-1 \(keep the current clamp\) or 0\.\.1024"
    ):
        schedsim.run("rk3399", f"rt-app:{path}", kernel="6.12", duration="10ms")
