"""cgroup v2 `cpu.uclamp.*` as the kernel applies it: effective group clamps capped by the
parent's (`cpu_util_update_eff`), RT tasks restricted by their group (`uclamp_tg_restrict`, v5.13
clamps their default request of 1024 into the group's range), no such files before v5.4; and
`cpu.stat` usage counting RT time (`cgroup_account_cputime`)."""

import pytest

import schedsim
from schedsim import programs as p
from schedsim.errors import ConfigError

BIG = 4  # rk3399's first Cortex-A72: OPPs up to 1800 MHz


def spin(name, cgroup=None, cpu=0, **kw):
    return p.task(name, p.loop(p.run(1e12)), start_cpu=cpu, cpus=[cpu], cgroup=cgroup, **kw)


def run(tasks, cgroups, machine="rk3399", **kw):
    wl = p.custom_workload(tasks=tasks)
    return schedsim.run(machine, wl, cgroups=cgroups, governor="schedutil", **kw)


@pytest.mark.parametrize(
    ("kernel", "khz"),
    [
        # v5.13+: the RT request (1024) clamped into [0, 512]: 512 without headroom (uclamp max
        # caps the request), 900 MHz -> the 1008 MHz OPP
        ("6.12", 1_008_000),
        # before: the group's max (512) with schedutil's 1.25 headroom, 1125 -> 1200 MHz
        ("5.10", 1_200_000),
    ],
)
def test_a_groups_uclamp_max_caps_its_rt_tasks(kernel, khz) -> None:
    rt = spin("rt", "cg1", cpu=BIG, policy="SCHED_FIFO", priority=10)
    r = run([rt], [{"path": "cg1", "uclamp_max": 50}], kernel=kernel, duration="300ms")
    # the average includes the first requests, before the clamp's value is reached
    assert r.cpus.avg_khz[BIG] == pytest.approx(khz, rel=0.03)
    free = run([rt], [{"path": "cg1"}], kernel=kernel, duration="300ms")
    assert free.cpus.avg_khz[BIG] == pytest.approx(1_800_000, rel=0.01)


def test_a_child_cannot_protect_more_than_its_parent() -> None:
    # a/b asks for uclamp.min 100 % but a's effective min is 0 (the default request): the
    # task runs as if unclamped; at the top level the same request runs it at the top OPP
    def small(cgroup):
        prog = p.loop(p.run_for(1_000_000), p.sleep(9_000_000))
        return p.task("s", prog, start_cpu=BIG, cpus=[BIG], cgroup=cgroup)

    kw = {"kernel": "6.12", "duration": "300ms"}
    nested = run([small("a/b")], [{"path": "a"}, {"path": "a/b", "uclamp_min": 100}], **kw)
    plain = run([small("a")], [{"path": "a"}], **kw)
    top = run([small("a")], [{"path": "a", "uclamp_min": 100}], **kw)
    assert nested.cpus.avg_khz[BIG] == pytest.approx(plain.cpus.avg_khz[BIG], rel=1e-9)
    assert top.cpus.avg_khz[BIG] == pytest.approx(1_800_000, rel=0.01)
    assert plain.cpus.avg_khz[BIG] < 0.7 * 1_800_000


def test_cpu_stat_usage_counts_rt_time() -> None:
    # an RT task ignores cpu.max, and its time is the group's usage all the same
    rt = spin("rt", "cg1", policy="SCHED_FIFO", priority=10)
    r = run([rt], [{"path": "cg1", "max": "20000 100000"}], duration="500ms")
    cpu_us = int(r.tasks["cpu_ns"].iloc[0]) // 1000
    assert cpu_us > 490_000
    assert r.cgroups["usage_usec"].iloc[0] == cpu_us


def test_uclamp_files_need_kernel_5_4() -> None:
    with pytest.raises(ConfigError, match=r"cgroup 'cg1': cpu.uclamp.min/max need kernel 5.4"):
        run([spin("a", "cg1")], [{"path": "cg1", "uclamp_max": 50}], kernel="5.2", duration="10ms")
