"""A recorded ftrace trace as a workload (DESIGN "Workloads": a trace turned into a workload and
replayed under other policies): `ftrace:PATH` in a workload string, `trace_workload(PATH)` in
Python.

Every task of the trace (pid > 0) becomes a task program that repeats what the trace shows it
doing (open loop unless `causal`):

- the time it ran on a CPU becomes work, `run` cycles = the running time × that CPU's frequency
  (its `cpu_frequency` events; before a CPU's first one, that first value; for a CPU without
  any, the `khz` parameter). Stretches split by preemption (`prev_state` R or R+) add up into
  one burst;
- the time it was blocked becomes a `sleep` (`prev_state` S, and the other sleeping states) or
  an `io` (D, uninterruptible: iowait), from its switch-out to its wakeup (`sched_waking`, else
  `sched_wakeup`, else its next switch-in);
- it starts at its first appearance in the trace (`delay_ns` from the trace's first event), and
  ends with `exit` where the trace shows it dying (`prev_state` X, Z or x), else with a sleep to
  the trace's end;
- its comm is its last one, its nice (120 + nice) or real-time priority (99 - prio, FIFO) comes
  from the trace's `prio` fields.

With `causal`, a sleeper woken by a task running on the waking CPU waits for a message from
that task instead of for its recorded wakeup time (docs/workloads/ftrace.md, "Causal replay").
What a replay does not keep: which task forked which, locks, IO completions, CPU affinity, and
the source CPU's performance per cycle (work recorded on a LITTLE core is as many cycles as on a
big one). The kernel paths the trace's running time holds and the simulator charges again
(the way to sleep and back, a wakeup) are taken off the bursts they end.
"""

from __future__ import annotations

import bisect
import copy
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import programs as prog
from .errors import ConfigError
from .ftrace import parse_line

# The catalogue entry `schedsim workloads` and experiment files see for `ftrace:PATH`.
FTRACE_INFO: dict[str, Any] = {
    "name": "ftrace",
    "description": "A recorded ftrace text trace (ftrace:PATH), replayed: every task runs the "
    "cycles it ran (running time x its CPU's frequency) and sleeps (S) or waits in iowait (D) "
    "until its recorded wakeup, or with causal=1 until the task that woke it gets there.",
    "params": [
        {
            "name": "path",
            "default": None,
            "description": "the trace (tracefs text or trace-cmd report)",
        },
        {
            "name": "causal",
            "default": False,
            "description": "replay a sleeper woken by a running task as waiting for that task "
            "(a message from it) instead of for its recorded wakeup time",
        },
        {
            "name": "khz",
            "default": 0.0,
            "description": "the frequency of CPUs the trace has no cpu_frequency event for "
            "(0: such a CPU is an error)",
        },
    ],
    "metrics": ["elapsed_s", "marks_<NAME>"],
    "primary": "elapsed_s",
    "higher_is_better": False,
    "open_ended": False,
}

_USED_EVENTS = frozenset(
    {"sched_switch", "sched_waking", "sched_wakeup", "sched_wakeup_new", "cpu_frequency"}
)
_USED = re.compile(": (?:" + "|".join(sorted(_USED_EVENTS)) + "):")
_SLEEPING = frozenset("SITtP")
_DEAD = frozenset("XZx")


@dataclass
class _Task:
    pid: int
    start_ns: int
    comm: str = ""
    prio: int = 120
    ops: list[dict[str, Any]] = field(default_factory=list)
    cycles: float = 0.0  # work of the burst under way
    running_since: tuple[int, int] | None = None  # (cpu, ns)
    blocked: tuple[str, int] | None = None  # ("sleep" | "io", since ns)
    dead: bool = False

    def flush_work(self, deduct: float = 0.0) -> None:
        cycles = max(self.cycles - deduct, 0.0)
        if cycles > 0:
            self.ops.append(prog.run(cycles))
        self.cycles = 0.0

    def wake(self, t: int) -> None:
        if self.blocked is not None:
            kind, since = self.blocked
            if t > since:
                self.ops.append(prog.io(t - since) if kind == "io" else prog.sleep(t - since))
            self.blocked = None


class _Frequencies:
    """Each CPU's frequency over time, from `cpu_frequency` events (kHz)."""

    def __init__(self, changes: dict[int, list[tuple[int, int]]], khz: float, path: str) -> None:
        self.times = {c: [t for t, _ in v] for c, v in changes.items()}
        self.khz = {c: [k for _, k in v] for c, v in changes.items()}
        self.default = khz
        self.path = path

    def cycles(self, cpu: int, a: int, b: int) -> float:
        """∫ f dt over [a, b] ns on `cpu`, in cycles (kHz × ns × 1e-6)."""
        if b <= a:
            return 0.0
        times = self.times.get(cpu)
        if not times:
            if self.default <= 0:
                raise ConfigError(
                    f"workload 'ftrace': {self.path}: CPU {cpu} has no cpu_frequency event; give "
                    "its frequency as khz=N (e.g. ftrace:PATH,khz=2000000)"
                )
            return self.default * (b - a) * 1e-6
        khz = self.khz[cpu]
        # value i holds from times[i] to times[i + 1]; the first one also before times[0]
        i = max(bisect.bisect_right(times, a) - 1, 0)
        total, t = 0.0, a
        while True:
            end = min(times[i + 1], b) if i + 1 < len(times) else b
            total += khz[i] * (end - t) * 1e-6
            if end >= b:
                return total
            t, i = end, i + 1


def known(*values: Any) -> bool:
    """Every field present (a line cut short lacks some)."""
    return all(v is not None for v in values)


def _ns(seconds: float) -> int:
    return int(round(seconds * 1e9))


# A numeric `prev_state` (raw traces of some tools) in the TASK_REPORT layout of v4.14 and
# later: S 0x1, D 0x2, T 0x4, t 0x8, X 0x10, Z 0x20, P 0x40, I 0x80, preempted 0x100.
_STATE_BITS = tuple((1 << i, letter) for i, letter in enumerate("SDTtXZPI"))


def _state_letters(state: Any) -> set[str]:
    text = str(state).strip()
    if text.isdigit():
        bits = int(text)
        return {letter for bit, letter in _STATE_BITS if bits & bit}
    return set(text.replace("|", "").replace("+", ""))


def _state_kind(state: Any) -> str:
    """`run` (still runnable), `sleep`, `io` or `exit` for a `prev_state`."""
    letters = _state_letters(state)
    if letters & _DEAD:
        return "exit"
    if "D" in letters:
        return "io"
    if letters & _SLEEPING:
        return "sleep"
    return "run"


@dataclass(frozen=True)
class KernelCosts:
    """What the replaying machine charges a task for the kernel paths a trace's running time
    already holds: one block and wake (`context_switch`, of which the sleeper runs
    `context_switch_out` on its way out and the rest on its way back in) and, in a causal
    replay, one wakeup it performs (`wakeup` and the placement's `select_base`)."""

    switch: float = 0.0
    wakeup: float = 0.0


def replay_costs(machine: Any) -> KernelCosts:
    """The costs of `machine`'s first core type; none without a machine."""
    if machine is None or not machine.spec.core_types:
        return KernelCosts()
    cycles = machine.spec.core_types[0].kernel_cycles or {}
    # a missing key costs nothing in the core either; a waker pays `wakeup` and the placement
    # (`select_base`, plus EAS's per-CPU terms where EAS runs, left in)
    wakeup = float(cycles.get("wakeup", 0.0)) + float(cycles.get("select_base", 0.0))
    return KernelCosts(switch=float(cycles.get("context_switch", 0.0)), wakeup=wakeup)


# Converted traces by (path, mtime, size and the options): an experiment builds a config for
# every point and configuration.
_CACHE: dict[tuple[Any, ...], dict[str, Any]] = {}


def trace_workload(
    path: str | Path,
    khz: float = 0.0,
    causal: bool = False,
    costs: KernelCosts | None = None,
) -> dict[str, Any]:
    """The `custom` workload spec that replays the ftrace text at `path` (module doc). `costs`
    are taken off the bursts that end in a block (`switch`) or in a causal wakeup (`wakeup`),
    at most the burst: the kernel paths the trace's running time holds and the simulator
    charges again."""
    p = Path(path).expanduser()
    if not p.is_file():
        raise ConfigError(f"workload 'ftrace': file '{path}' not found")
    costs = costs or KernelCosts()
    stat = p.stat()
    key = (str(p.resolve()), stat.st_mtime_ns, stat.st_size, float(khz), bool(causal), costs)
    if key not in _CACHE:
        _CACHE.clear()  # one trace at a time: they can be large
        _CACHE[key] = _convert(p, str(path), float(khz), bool(causal), costs)
    return copy.deepcopy(_CACHE[key])


def _convert(p: Path, path: str, khz: float, causal: bool, costs: KernelCosts) -> dict[str, Any]:
    try:
        text = p.read_text(encoding="utf-8", errors="replace")
    except OSError as err:
        raise ConfigError(f"workload 'ftrace': {path}: cannot read: {err.strerror}") from None
    # the events a replay reads, parsed line by line (no DataFrame: traces run to millions of
    # lines), in time order (stable: lines at one time keep their order)
    rows = [
        r
        for r in (parse_line(line) for line in text.splitlines() if _USED.search(line))
        if r is not None and r["event"] in _USED_EVENTS
    ]
    rows.sort(key=lambda r: r["Time"])
    if not any(r["event"] == "sched_switch" for r in rows):
        raise ConfigError(
            f"workload 'ftrace': {path}: no sched_switch events to replay (expected tracefs "
            "text or trace-cmd report output)"
        )
    t0 = _ns(rows[0]["Time"])
    t_end = _ns(rows[-1]["Time"])
    changes: dict[int, list[tuple[int, int]]] = {}
    for row in rows:
        if row["event"] == "cpu_frequency" and known(row.get("cpu_id"), row.get("state")):
            changes.setdefault(int(row["cpu_id"]), []).append((_ns(row["Time"]), int(row["state"])))
    freqs = _Frequencies(changes, float(khz), str(path))
    tasks: dict[int, _Task] = {}
    channels: dict[str, dict[str, Any]] = {}

    def task(pid: int, t: int, comm: str | None, prio: Any, running_on: int | None = None) -> _Task:
        """The task `pid`, created at `t` when first seen; one first seen switching out was
        running on `running_on` from the trace's start."""
        tk = tasks.get(pid)
        if tk is None:
            tk = tasks[pid] = _Task(pid=pid, start_ns=t)
            if running_on is not None:
                tk.running_since = (running_on, t)
        if known(comm) and comm:
            tk.comm = str(comm)
        if known(prio) and str(prio).lstrip("-").isdigit():
            tk.prio = int(prio)
        return tk

    for row in rows:
        t, event = _ns(row["Time"]), row["event"]
        if event == "sched_switch":
            if not known(row.get("prev_pid"), row.get("next_pid"), row.get("prev_state")):
                continue  # a line cut short
            cpu = int(row["__cpu"])
            prev, nxt = int(row["prev_pid"]), int(row["next_pid"])
            if prev > 0:
                tk = task(prev, t0, row["prev_comm"], row["prev_prio"], running_on=cpu)
                if tk.running_since is not None:
                    tk.cycles += freqs.cycles(cpu, tk.running_since[1], t)
                tk.running_since = None
                kind = _state_kind(row["prev_state"])
                if kind == "exit":
                    tk.flush_work()
                    tk.ops.append(prog.exit_())
                    tk.dead = True
                elif kind in ("sleep", "io"):
                    tk.flush_work(costs.switch)
                    tk.blocked = (kind, t)
            if nxt > 0:
                tk = task(nxt, t, row["next_comm"], row["next_prio"])
                tk.wake(t)
                tk.running_since = (cpu, t)
        elif (
            event in ("sched_waking", "sched_wakeup", "sched_wakeup_new")
            and known(row.get("pid"))
            and int(row["pid"]) > 0
        ):
            wakee = task(int(row["pid"]), t, row.get("comm"), row.get("prio"))
            waker = tasks.get(int(row["__pid"]))
            if (
                causal
                and wakee.blocked is not None
                and wakee.blocked[0] == "sleep"
                and waker is not None
                and waker is not wakee
                and waker.running_since is not None
                and waker.running_since[0] == row["__cpu"]
            ):
                # the waker, running on the CPU that woke the sleeper, sends it a message
                cpu, since = waker.running_since
                waker.cycles += freqs.cycles(cpu, since, t)
                waker.flush_work(costs.wakeup)
                chan = f"wake-{waker.pid}-{wakee.pid}"
                channels.setdefault(chan, prog.channel(chan))
                waker.ops.append(prog.send(chan))
                waker.running_since = (cpu, t)
                wakee.ops.append(prog.recv(chan))
                wakee.blocked = None
            else:
                wakee.wake(t)
    programs = []
    names = [tk.comm or f"pid{tk.pid}" for tk in tasks.values()]
    uses = Counter(names)
    for tk, name in zip(tasks.values(), names, strict=True):
        if not tk.dead:
            # at the trace's end: still running, preempted (its burst under way) or asleep
            if tk.running_since is not None:
                cpu, since = tk.running_since
                tk.cycles += freqs.cycles(cpu, since, t_end)
            tk.flush_work()
            tk.wake(t_end)
        if not tk.ops:
            continue
        unique = name if uses[name] == 1 else f"{name}-{tk.pid}"
        rt = tk.prio < 100
        programs.append(
            prog.task(
                unique,
                *tk.ops,
                nice=0 if rt else min(max(tk.prio - 120, -20), 19),
                policy="SCHED_FIFO" if rt else "SCHED_OTHER",
                priority=min(max(99 - tk.prio, 1), 99) if rt else 0,
                delay_ns=max(tk.start_ns - t0, 0),
            )
        )
    if not programs:
        raise ConfigError(f"workload 'ftrace': {path}: no task ran in the trace")
    return prog.custom_workload(programs, list(channels.values()))
