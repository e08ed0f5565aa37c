"""The ftrace text parser (LISA conventions)."""

import pandas as pd

from schedsim.ftrace import parse_ftrace
from schedsim.results import RunResult
from support import FAKE_TRACE

PLUGIN_FORM = """\
cpus=6
       trace-cmd-6244  [005] 162534.215742: sched_switch:         trace-cmd:6244 [120] x ==> swapper/5:0 [120]
          <idle>-0     [005] 162534.215764: cpu_idle:             state=2 cpu_id=5
           <...>-19427 [000]  6550.018664: sched_wakeup_new:      comm=shutils pid=19428 prio=120 success=1 target_cpu=2
          <idle>-0     [001] 162534.216057: sched_wakeup:         sh:6243 [120] CPU:001
"""  # noqa: E501


def test_raw_form() -> None:
    df = parse_ftrace(FAKE_TRACE)
    assert df.index.name == "Time"
    assert df.index.dtype == "float64"
    assert list(df.index) == [0.001, 0.003, 0.003, 0.00301]
    assert list(df.columns[:4]) == ["__cpu", "__pid", "__comm", "event"]
    assert list(df["event"]) == ["sched_switch", "sched_waking", "cpu_frequency", "cpu_idle"]
    sw = df.iloc[0]
    assert sw["__comm"] == "<idle>"
    assert sw["__pid"] == 0
    assert sw["prev_comm"] == "swapper/0"
    assert sw["prev_state"] == "R"
    assert sw["next_comm"] == "rtapp-small"
    assert sw["next_pid"] == 1001
    assert sw["next_prio"] == 120
    waking = df.iloc[1]
    assert waking["comm"] == "rtapp-big"
    assert waking["target_cpu"] == 1
    assert df.iloc[2]["state"] == 1_800_000
    assert df.iloc[3]["state"] == 4_294_967_295
    assert df.iloc[3]["__cpu"] == 1


def test_plugin_form() -> None:
    df = parse_ftrace(PLUGIN_FORM)
    assert len(df) == 4
    sw = df.iloc[0]
    assert (sw["prev_comm"], sw["prev_pid"], sw["prev_state"]) == ("trace-cmd", 6244, "x")
    assert (sw["next_comm"], sw["next_pid"], sw["next_prio"]) == ("swapper/5", 0, 120)
    assert df.iloc[2]["__comm"] == "<...>"
    assert df.iloc[2]["success"] == 1
    wake = df.iloc[3]
    assert (wake["comm"], wake["pid"], wake["target_cpu"]) == ("sh", 6243, 1)


def test_comm_with_dashes_and_spaces() -> None:
    line = (
        "  kworker/u16:2-my task-77  [003]   12.000001: sched_waking: "
        "comm=a pid=1 prio=120 target_cpu=003"
    )
    df = parse_ftrace(line)
    assert df.iloc[0]["__comm"] == "kworker/u16:2-my task"
    assert df.iloc[0]["__pid"] == 77


def test_empty() -> None:
    df = parse_ftrace("# tracer: nop\n#\n")
    assert df.empty
    assert df.index.name == "Time"


def test_run_result_views() -> None:
    result = RunResult(
        {
            "metrics": {"x": 1},
            "tasks": [{"pid": 1, "comm": "a"}, {"pid": 2, "comm": "b"}],
            "cpus": [{"cpu": 0, "busy_ns": 1}],
            "samples": [{"t_ns": 0, "pkg": {"watt": 1.0}}],
            "trace": FAKE_TRACE,
            "sim": {"wall_s": 1.0, "events_per_s": 2.0, "events": 2},
        }
    )
    assert isinstance(result.tasks, pd.DataFrame)
    assert list(result.tasks["pid"]) == [1, 2]
    assert list(result.samples.columns) == ["t_ns", "pkg.watt"]
    sw = result.df_event("sched_switch")
    assert len(sw) == 1
    assert "comm" not in sw.columns and "next_pid" in sw.columns
    text = result.to_json(include_trace=False)
    assert "trace" not in text
    assert '"trace"' in result.to_json()
