"""A recorded ftrace trace replayed as a workload (`ftrace:PATH`, `schedsim.replay`): the
programs it becomes, checked against a hand-written trace, and a round trip through a run."""

from pathlib import Path

import pytest

import schedsim
from schedsim.errors import ConfigError
from schedsim.replay import trace_workload

TRACE = Path(__file__).parent / "data" / "replay-hand.txt"  # its header tells the story


@pytest.fixture
def trace_file(tmp_path):
    path = tmp_path / "trace.txt"
    path.write_text(TRACE.read_text())
    return path


def test_the_trace_becomes_each_tasks_program(trace_file) -> None:
    wl = trace_workload(trace_file, khz=3_000_000)
    tasks = {t["name"]: t for t in wl["custom"]["tasks"]}
    assert set(tasks) == {"app", "hog", "sleeper"}

    def ops(name):
        return [(o["op"], o.get("cycles", o.get("ns"))) for o in tasks[name]["program"]]

    # cycles = running ns x kHz x 1e-6; a preempted stretch joins the next one
    assert ops("app") == [
        ("run", pytest.approx(1_000_000 * 2_000_000 * 1e-6)),  # 1 ms at 2 GHz
        ("sleep", 3_000_000),  # S from 1.001000 to its waking at 1.004000
        ("run", pytest.approx(500_000 * 2.0 + 500_000 * 1.0 + 1_000_000 * 1.0)),
        ("io", 2_000_000),  # D from 1.007010 to its wakeup at 1.009010
        ("run", pytest.approx(1_000_000 * 3.0)),  # cpu1 at khz
        ("exit", None),
    ]
    assert tasks["app"]["delay_ns"] == 0 and tasks["app"]["nice"] == 0
    assert ops("hog") == [("run", pytest.approx(1_000_000.0)), ("exit", None)]
    assert tasks["hog"]["delay_ns"] == 5_010_000 and tasks["hog"]["nice"] == -20
    # first seen when woken; asleep until the trace's end
    assert ops("sleeper") == [("run", pytest.approx(1_500_000.0)), ("sleep", 7_520_000)]
    assert tasks["sleeper"]["delay_ns"] == 2_000_000
    assert tasks["sleeper"]["policy"] == "SCHED_FIFO" and tasks["sleeper"]["priority"] == 80


def test_a_cpu_without_frequency_needs_khz(trace_file) -> None:
    with pytest.raises(ConfigError, match=r"CPU 1 has no cpu_frequency event.*khz="):
        trace_workload(trace_file)


def test_bad_traces_are_refused_with_the_file_named(tmp_path) -> None:
    with pytest.raises(ConfigError, match="not found"):
        schedsim.run("skylake-8x", f"ftrace:{tmp_path / 'missing.txt'}")
    empty = tmp_path / "empty.txt"
    empty.write_text("# tracer: nop\n")
    with pytest.raises(ConfigError, match=f"{empty}: no sched_switch events"):
        schedsim.run("skylake-8x", f"ftrace:{empty}")


def test_a_replay_runs_and_takes_the_traces_time(trace_file) -> None:
    r = schedsim.run("skylake-8x", f"ftrace:{trace_file},khz=3000000", kernel="6.12")
    assert sorted(r.tasks["comm"]) == ["app", "hog", "sleeper"]
    # the sleeper starts 2 ms in, runs its 1.5 M cycles at the replay's own frequency (it
    # took 0.5 ms in the trace), then sleeps its recorded 7.52 ms
    sleeper = r.tasks.set_index("comm").loc["sleeper"]
    assert sleeper["start_ns"] == 2_000_000
    assert sleeper["exit_ns"] >= 2_000_000 + 1_500_000 / 4.0 + 7_520_000
    assert 0.00952 < r.metrics["elapsed_s"] < 0.0125
    # the result names the replayed trace, not the explicit programs it ran as
    assert r.json["workload"] == {
        "name": "ftrace",
        "params": {"path": str(trace_file.resolve()), "khz": 3000000.0},
    }


def test_a_run_replayed_from_its_own_trace_does_the_same_work(tmp_path) -> None:
    """Record a run's ftrace, replay it on the same machine at the same fixed frequency: each
    task runs as long as it did (its recorded running time includes the kernel paths the
    replay charges again, a few %), and the replay spans the recording."""
    args = {"kernel": "6.12", "driver": "intel_cpufreq", "governor": "performance"}
    rec = schedsim.run(
        "skylake-8x",
        "periodic:tasks=3,period_ms=4,duty_pct=30",
        duration="200ms",
        trace=True,
        **args,
    )
    path = tmp_path / "rec.txt"
    path.write_text(rec.trace_text)
    rep = schedsim.run("skylake-8x", f"ftrace:{path}", **args)
    before = dict(zip(rec.tasks["comm"], rec.tasks["cpu_ns"], strict=True))
    after = dict(zip(rep.tasks["comm"], rep.tasks["cpu_ns"], strict=True))
    assert set(after) == set(before)
    for comm, ns in before.items():
        assert after[comm] == pytest.approx(ns, rel=0.08), comm
    assert rep.metrics["elapsed_s"] == pytest.approx(0.2, rel=0.03)


def test_a_trace_cmd_report_in_the_plugin_form_replays() -> None:
    """trappy's sample (ARM-software/trappy tests, a 6-CPU Arm board): `trace-cmd report`
    without -N, whose sched_switch reads `comm:pid [prio] STATE ==> comm:pid [prio]`."""
    path = Path(__file__).parent / "data" / "trappy-trace_idle_report.txt"
    wl = trace_workload(path, khz=1_000_000)
    tasks = {t["name"]: t for t in wl["custom"]["tasks"]}
    assert len(tasks) == 11
    # kschedfreq:0 runs at prio 49: SCHED_FIFO priority 50; it waits in D
    k = tasks["kschedfreq:0"]
    assert (k["policy"], k["priority"]) == ("SCHED_FIFO", 50)
    assert [o["op"] for o in k["program"]][:2] == ["run", "io"]
    # sh (pid 6243) ran 437 us and died (the plugin form's x)
    assert [(o["op"], o.get("cycles")) for o in tasks["sh"]["program"]] == [
        ("run", pytest.approx(437.0 * 1000)),
        ("exit", None),
    ]
    r = schedsim.run("hikey960", f"ftrace:{path},khz=1000000", kernel="6.12")
    assert len(r.tasks) == 11


def test_an_experiment_compares_policies_on_a_replayed_trace(tmp_path) -> None:
    from schedsim import Experiment

    path = tmp_path / "traces" / "hand.txt"  # relative to the experiment file below
    path.parent.mkdir()
    path.write_text(TRACE.read_text())
    exp_file = tmp_path / "exp.toml"
    exp_file.write_text(
        """
[experiment]
name = "replay"
repeats = 1

[[machine]]
preset = "rk3399"

[[config]]
name = "sugov"
kernel = "6.12"
governor = "schedutil"

[[config]]
name = "perf"
kernel = "6.12"
governor = "performance"

[[benchmark]]
workload = "ftrace"
params = { path = "traces/hand.txt", khz = 2000000 }
"""
    )
    res = Experiment.from_toml(exp_file).run(jobs=1)
    runs = res.runs.set_index("config")
    # the same recorded work takes longer at schedutil's frequencies than at the top one
    assert runs.loc["sugov", "metrics.elapsed_s"] > runs.loc["perf", "metrics.elapsed_s"] > 0


def test_work_under_way_at_the_trace_end_is_kept(tmp_path) -> None:
    # preempted (R+) at the end: its 1 ms at 1 GHz is still to be replayed
    path = tmp_path / "t.txt"
    lines = [
        "<idle>-0 [000] 5.000000: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 "
        "prev_state=R ==> next_comm=a next_pid=7 next_prio=120",
        "a-7 [000] 5.001000: sched_switch: prev_comm=a prev_pid=7 prev_prio=120 prev_state=R+ "
        "==> next_comm=b next_pid=8 next_prio=120",
        "b-8 [000] 5.001500: sched_switch: prev_comm=b prev_pid=8 prev_prio=120 prev_state=S "
        "==> next_comm=swapper/0 next_pid=0 next_prio=120",
    ]
    path.write_text("\n".join(lines) + "\n")
    tasks = {t["name"]: t["program"] for t in trace_workload(path, khz=1e6)["custom"]["tasks"]}
    assert tasks["a"] == [{"op": "run", "cycles": pytest.approx(1e6), "stall_ns": 0.0}]
    assert tasks["b"] == [{"op": "run", "cycles": pytest.approx(5e5), "stall_ns": 0.0}]


PING_PONG = [
    "<idle>-0 [000] 0.000000: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 "
    "prev_state=R ==> next_comm=ping next_pid=10 next_prio=120",
    "ping-10 [000] 0.000100: sched_waking: comm=pong pid=11 prio=120 target_cpu=001",
    "<idle>-0 [001] 0.000100: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 "
    "prev_state=R ==> next_comm=pong next_pid=11 next_prio=120",
    "ping-10 [000] 0.000150: sched_switch: prev_comm=ping prev_pid=10 prev_prio=120 "
    "prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120",
    "pong-11 [001] 0.000300: sched_waking: comm=ping pid=10 prio=120 target_cpu=000",
    "<idle>-0 [000] 0.000300: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 "
    "prev_state=R ==> next_comm=ping next_pid=10 next_prio=120",
    "pong-11 [001] 0.000350: sched_switch: prev_comm=pong prev_pid=11 prev_prio=120 "
    "prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120",
    "ping-10 [000] 0.000500: sched_switch: prev_comm=ping prev_pid=10 prev_prio=120 "
    "prev_state=X ==> next_comm=swapper/0 next_pid=0 next_prio=120",
]


def test_a_causal_replay_waits_for_the_waker(tmp_path) -> None:
    """pong, running on CPU 1, wakes ping: with `causal`, ping's sleep becomes a receive of
    pong's message, sent where pong's work reached the wakeup (1 GHz: 1,000 cycles per us).
    pong's first wakeup starts it (it was not seen asleep), so that one stays a start time."""
    path = tmp_path / "pp.txt"
    path.write_text("\n".join(PING_PONG) + "\n")

    def programs(causal: bool):
        wl = trace_workload(path, khz=1e6, causal=causal)
        tasks = {t["name"]: t for t in wl["custom"]["tasks"]}
        ops = {
            n: [(o["op"], o.get("cycles", o.get("ns", o.get("chan")))) for o in t["program"]]
            for n, t in tasks.items()
        }
        return ops, tasks, wl["custom"]["channels"]

    ops, tasks, chans = programs(causal=True)
    assert ops["ping"] == [
        ("run", pytest.approx(150_000)),  # 150 us: ping's wakeup of pong found pong new
        ("recv", "wake-11-10"),
        ("run", pytest.approx(200_000)),
        ("exit", None),
    ]
    assert ops["pong"] == [
        ("run", pytest.approx(200_000)),  # 0.1 -> 0.3 ms, then the wakeup of ping
        ("send", "wake-11-10"),
        ("run", pytest.approx(50_000)),
        ("sleep", 150_000),  # to the trace's end
    ]
    assert tasks["pong"]["delay_ns"] == 100_000
    assert [c["name"] for c in chans] == ["wake-11-10"]
    # open loop: ping sleeps its recorded 150 us instead
    ops, _, chans = programs(causal=False)
    assert ops["ping"][:2] == [("run", pytest.approx(150_000)), ("sleep", 150_000)]
    assert ops["pong"] == [("run", pytest.approx(250_000)), ("sleep", 150_000)]
    assert chans == []


def test_a_causal_replay_keeps_a_ping_pong_together(tmp_path) -> None:
    """tbench's client and server wake each other every few microseconds. Replayed open loop
    from its own trace, the two schedules drift into each other (more CPU time: SMT sharing,
    runqueue waits); replayed causally, each task does its recorded work again."""
    args = {"kernel": "6.12", "driver": "intel_cpufreq", "governor": "performance"}
    rec = schedsim.run("skylake-8x", "tbench:clients=2", duration="60ms", trace=True, **args)
    path = tmp_path / "tb.txt"
    path.write_text(rec.trace_text)
    cpu = float(rec.tasks["cpu_ns"].sum())
    loose = schedsim.run("skylake-8x", f"ftrace:{path}", **args)
    tight = schedsim.run("skylake-8x", f"ftrace:{path},causal=1", **args)
    assert float(tight.tasks["cpu_ns"].sum()) == pytest.approx(cpu, rel=0.05)
    assert float(loose.tasks["cpu_ns"].sum()) > 1.1 * cpu
