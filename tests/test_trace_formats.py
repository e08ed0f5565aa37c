"""Perfetto protobuf traces (`trace="perfetto"`) and Chrome JSON traces (`trace="chrome"`): the
same events as the ftrace text of the same run; the protobuf decoded with Perfetto's own
generated message classes."""

import json
import re

import pytest
from typer.testing import CliRunner

import schedsim
from schedsim.cli import app
from schedsim.errors import ConfigError

pb = pytest.importorskip("perfetto.protos.perfetto.trace.perfetto_trace_pb2")

RUN = {"kernel": "6.12", "duration": "30ms"}
WORKLOAD = "hackbench:groups=1,loops=5"  # wakeups, forks, exits, migrations, frequency, idle
LINE = re.compile(r"^\s*(.+)-(\d+) \[(\d{3})\]\s+(\d+)\.(\d{6}): (\w+): (.*)$")


def decode(data: bytes):
    trace = pb.Trace.FromString(data)
    events = []  # (cpu, FtraceEvent)
    for packet in trace.packet:
        assert packet.trusted_packet_sequence_id == 1
        if packet.HasField("ftrace_events"):
            bundle = packet.ftrace_events
            stamps = [e.timestamp for e in bundle.event]
            assert stamps == sorted(stamps), "a bundle's events are in time order"
            events += [(bundle.cpu, e) for e in bundle.event]
    return trace, events


def text_lines(text: str):
    out = []
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        m = LINE.match(line)
        assert m, line
        comm, pid, cpu, secs, usecs, name, payload = m.groups()
        fields = dict(kv.split("=", 1) for kv in payload.replace(" ==> ", " ").split(" "))
        out.append((int(cpu), int(secs) * 1_000_000 + int(usecs), int(pid), name, fields))
    return out


@pytest.fixture(scope="module")
def both():
    text = schedsim.run("skylake-8x", WORKLOAD, trace=True, **RUN)
    proto = schedsim.run("skylake-8x", WORKLOAD, trace="perfetto", **RUN)
    return text, proto


COMPANIONS = {"task_newtask", "sched_process_free"}  # written beside a fork and an exit


def test_the_protobuf_holds_the_ftrace_texts_events(both) -> None:
    text, proto = both
    assert proto.trace_text is None and text.trace_perfetto is None
    trace, events = decode(proto.trace_perfetto)
    lines = text_lines(text.trace_text)
    own = [(c, e) for c, e in events if e.WhichOneof("event") not in COMPANIONS]
    assert len(own) == len(lines) > 100
    # timestamps are unique, so Perfetto's merge of the per-CPU queues keeps the run's order:
    # sorted by time, the events are the text's lines in order
    stamps = [e.timestamp for _, e in events]
    assert len(set(stamps)) == len(stamps)
    ordered = sorted(own, key=lambda ce: ce[1].timestamp)
    assert [(c, e.WhichOneof("event")) for c, e in ordered] == [(ln[0], ln[3]) for ln in lines]
    for (_, e), (_, us, pid, name, f) in zip(ordered, lines, strict=True):
        # the text has microseconds; a tie moved the event at most a few ns later
        assert 0 <= e.timestamp - us * 1000 < 1000 + 200
        assert e.pid == pid
        payload = getattr(e, name)
        if name == "sched_switch":
            assert payload.prev_comm == f["prev_comm"]
            assert payload.prev_pid == int(f["prev_pid"])
            assert payload.prev_prio == int(f["prev_prio"])
            assert payload.next_comm == f["next_comm"]
            assert payload.next_pid == int(f["next_pid"])
            # TASK_REPORT bits: R 0, S 1, D 2, X 0x10, and 0x100 for a preempted R+
            bits = {"R": 0, "R+": 0x100, "S": 1, "D": 2, "X": 0x10}
            assert payload.prev_state == bits[f["prev_state"]]
        elif name in ("sched_waking", "sched_wakeup", "sched_wakeup_new"):
            assert (payload.comm, payload.pid, payload.target_cpu) == (
                f["comm"],
                int(f["pid"]),
                int(f["target_cpu"]),
            )
        elif name == "sched_migrate_task":
            assert (payload.pid, payload.orig_cpu, payload.dest_cpu) == (
                int(f["pid"]),
                int(f["orig_cpu"]),
                int(f["dest_cpu"]),
            )
        elif name in ("cpu_frequency", "cpu_idle"):
            assert (payload.state, payload.cpu_id) == (int(f["state"]), int(f["cpu_id"]))
    kinds = {e.WhichOneof("event") for _, e in events}
    assert {"sched_switch", "sched_waking", "sched_process_fork", "cpu_frequency"} <= kinds


def test_forks_and_exits_carry_what_perfettos_importer_reads(both) -> None:
    # trace_processor opens a new task's runnable time at task_newtask and ends a thread at
    # sched_process_free; it does not parse sched_process_fork or sched_process_exit
    _, proto = both
    _, events = decode(proto.trace_perfetto)
    seq = sorted((e for _, e in events), key=lambda e: e.timestamp)
    names = [e.WhichOneof("event") for e in seq]
    for i, name in enumerate(names):
        if name == "sched_process_fork":
            fork, new = seq[i].sched_process_fork, seq[i + 1]
            assert names[i + 1] == "task_newtask"
            assert new.pid == fork.parent_pid
            child = (new.task_newtask.pid, new.task_newtask.comm)
            assert child == (fork.child_pid, fork.child_comm)
            assert new.task_newtask.clone_flags & 0x10000 == 0  # a process, not a thread
        if name == "sched_process_exit":
            assert names[i + 1] == "sched_process_free"
            assert seq[i + 1].sched_process_free.pid == seq[i].sched_process_exit.pid
    assert names.count("task_newtask") == names.count("sched_process_fork") > 0
    assert names.count("sched_process_free") == names.count("sched_process_exit") > 0


def test_a_kernel_before_4_14_gets_its_own_prev_state_layout() -> None:
    # Perfetto decodes prev_state by the release: before TASK_REPORT (v4.14) a preempted task
    # was marked with TASK_STATE_MAX, 0x1000 from v4.8
    r = schedsim.run("skylake-8x", WORKLOAD, kernel="4.9", duration="30ms", trace="perfetto")
    trace, events = decode(r.trace_perfetto)
    info = next(p.system_info for p in trace.packet if p.HasField("system_info"))
    assert info.utsname.release == "4.9.0"
    states = {e.sched_switch.prev_state for _, e in events if e.HasField("sched_switch")}
    assert 0x1000 in states and 0x100 not in states


def test_the_trace_names_the_kernel_and_every_task(both) -> None:
    _, proto = both
    trace, _ = decode(proto.trace_perfetto)
    info = next(p.system_info for p in trace.packet if p.HasField("system_info"))
    assert info.utsname.sysname == "Linux"
    assert info.utsname.release == "6.12.0"
    assert info.utsname.machine == "x86_64"
    assert info.num_cpus == 8
    # the process tree holds the tasks that exist from the start; task_newtask the others
    tree = next(p.process_tree for p in trace.packet if p.HasField("process_tree"))
    names = {t.tid: t.name for t in tree.threads}
    tasks = proto.tasks
    initial = tasks[tasks["ppid"] == 0]
    assert 0 < len(initial) < len(tasks)
    assert names == {int(p): c[:15] for p, c in zip(initial["pid"], initial["comm"], strict=True)}
    assert {p.pid: p.ppid for p in tree.processes} == {int(p): 0 for p in initial["pid"]}


def test_perfetto_traces_are_deterministic(both) -> None:
    _, proto = both
    again = schedsim.run("skylake-8x", WORKLOAD, trace="perfetto", **RUN)
    assert again.trace_perfetto == proto.trace_perfetto
    assert "trace_perfetto" not in proto.to_json(include_trace=False)


CLI_ARGS = ["run", "-m", "skylake-8x", "-w", WORKLOAD, "--kernel", "6.12", "--duration", "30ms"]


@pytest.mark.parametrize("fmt", ["perfetto", "chrome"])
def test_the_cli_writes_the_trace_file(tmp_path, fmt) -> None:
    out = tmp_path / f"run.{fmt}"
    res = CliRunner().invoke(app, [*CLI_ARGS, "--trace", str(out), "--trace-format", fmt])
    assert res.exit_code == 0, res.output
    assert f"trace ({fmt}) written to" in res.output
    if fmt == "perfetto":
        assert len(decode(out.read_bytes())[1]) > 100
    else:
        assert len(json.loads(out.read_text())["traceEvents"]) > 100


def test_the_cli_refuses_an_unknown_trace_format(tmp_path) -> None:
    out = tmp_path / "run.trace"
    bad = CliRunner().invoke(app, [*CLI_ARGS, "--trace", str(out), "--trace-format", "json"])
    assert bad.exit_code != 0
    assert "allowed: ftrace, perfetto, chrome" in bad.output
    # a format without a file to write is a mistake, not a no-op
    alone = CliRunner().invoke(app, [*CLI_ARGS, "--trace-format", "perfetto"])
    assert alone.exit_code == 2
    assert "--trace-format perfetto: give the file to write, --trace FILE" in alone.output


def test_an_unknown_trace_format_is_refused() -> None:
    with pytest.raises(ConfigError, match="ftrace, perfetto, chrome"):
        schedsim.run("skylake-8x", WORKLOAD, trace="systrace", **RUN)


def test_chrome_json_draws_the_cpus_and_carries_the_ftrace_text(both) -> None:
    text, _ = both
    r = schedsim.run("skylake-8x", WORKLOAD, trace="chrome", **RUN)
    doc = json.loads(r.trace_chrome)
    assert next(iter(doc)) == "traceEvents"  # first: older Perfetto tokenizers stop early
    assert doc["systemTraceEvents"] == text.trace_text
    events = doc["traceEvents"]
    # per CPU, the running slices are the stretches between the text's switches
    lines = text_lines(text.trace_text)
    end_us = r.json["sim"]["simulated_s"] * 1e6
    for cpu in range(8):
        slices = sorted(
            (e for e in events if e["ph"] == "X" and e.get("tid") == 1_000_000_000 + cpu),
            key=lambda e: e["ts"],
        )
        switches = [ln for ln in lines if ln[0] == cpu and ln[3] == "sched_switch"]
        runs = [ln for ln in switches if ln[4]["next_pid"] != "0"]
        assert [s["name"] for s in slices] == [ln[4]["next_comm"] for ln in runs]
        for s, ln in zip(slices, runs, strict=True):
            assert int(s["ts"]) == ln[1]  # µs, the text's precision
            assert s["args"]["pid"] == int(ln[4]["next_pid"])
            assert s["dur"] >= 0 and s["ts"] + s["dur"] <= end_us + 1e-6
        for a, b in zip(slices, slices[1:], strict=False):
            assert a["ts"] + a["dur"] <= b["ts"] + 1e-6  # a CPU runs one task at a time
    freq = [e for e in events if e["ph"] == "C"]
    assert [(e["name"], e["args"]["kHz"]) for e in freq] == [
        (f"cpu{ln[4]['cpu_id']} freq", int(ln[4]["state"]))
        for ln in lines
        if ln[3] == "cpu_frequency"
    ]
    idle = [e for e in events if e["ph"] == "X" and e["tid"] >= 1_100_000_000]
    states = {"POLL", "C1", "C1E", "C3", "C6", "C7s", "C8", "C9", "C10"}  # skylake-8x's
    assert idle and {e["name"] for e in idle} <= states
    assert "trace_chrome" not in r.to_json(include_trace=False)
    # the ftrace text inside gives the same events frame
    assert r.events.equals(text.events)
