"""Perfetto protobuf traces (`trace="perfetto"`, `--trace-format perfetto`): the same events as
the ftrace text of the same run, decoded with Perfetto's own generated message classes."""

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


def test_the_protobuf_holds_the_ftrace_texts_events(both) -> None:
    text, proto = both
    assert proto.trace_text is None and text.trace_perfetto is None
    trace, events = decode(proto.trace_perfetto)
    lines = text_lines(text.trace_text)
    assert len(events) == len(lines) > 100
    # the text is in global time order; the bundles per CPU: compare per CPU, in order
    for cpu in {c for c, *_ in lines}:
        mine = [e for c, e in events if c == cpu]
        theirs = [ln for ln in lines if ln[0] == cpu]
        assert len(mine) == len(theirs)
        for e, (_, us, pid, name, f) in zip(mine, theirs, strict=True):
            assert e.timestamp // 1000 == us
            assert e.pid == pid
            assert e.WhichOneof("event") == name
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


def test_the_trace_names_the_kernel_and_every_task(both) -> None:
    _, proto = both
    trace, _ = decode(proto.trace_perfetto)
    info = next(p.system_info for p in trace.packet if p.HasField("system_info"))
    assert info.utsname.sysname == "Linux"
    assert info.utsname.release == "6.12.0"
    assert info.utsname.machine == "x86_64"
    assert info.num_cpus == 8
    tree = next(p.process_tree for p in trace.packet if p.HasField("process_tree"))
    names = {t.tid: t.name for t in tree.threads}
    tasks = proto.tasks
    assert len(names) == len(tasks)
    for pid, comm in zip(tasks["pid"], tasks["comm"], strict=True):
        assert names[int(pid)] == comm[:15]
    parents = {p.pid: p.ppid for p in tree.processes}
    assert parents == {int(a): int(b) for a, b in zip(tasks["pid"], tasks["ppid"], strict=True)}


def test_perfetto_traces_are_deterministic(both) -> None:
    _, proto = both
    again = schedsim.run("skylake-8x", WORKLOAD, trace="perfetto", **RUN)
    assert again.trace_perfetto == proto.trace_perfetto
    assert "trace_perfetto" not in proto.to_json(include_trace=False)


def test_the_cli_writes_a_pftrace(tmp_path) -> None:
    out = tmp_path / "run.pftrace"
    args = ["run", "-m", "skylake-8x", "-w", WORKLOAD, "--kernel", "6.12", "--duration", "30ms"]
    res = CliRunner().invoke(app, [*args, "--trace", str(out), "--trace-format", "perfetto"])
    assert res.exit_code == 0, res.output
    assert "trace (perfetto) written to" in res.output
    _, events = decode(out.read_bytes())
    assert len(events) > 100
    bad = CliRunner().invoke(app, [*args, "--trace", str(out), "--trace-format", "json"])
    assert bad.exit_code != 0
    assert "allowed: ftrace, perfetto" in bad.output


def test_an_unknown_trace_format_is_refused() -> None:
    with pytest.raises(ConfigError, match="ftrace, perfetto"):
        schedsim.run("skylake-8x", WORKLOAD, trace="chrome", **RUN)
