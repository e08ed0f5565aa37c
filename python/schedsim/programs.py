"""Builders for explicit task programs (the `custom` workload of workload/spec.rs).

    >>> wl = custom_workload(
    ...     tasks=[task("ping", loop(run(20_000), send("a2b"), recv("b2a")))],
    ...     channels=[channel("a2b"), channel("b2a")],
    ... )
    >>> schedsim.run("skylake-8x", wl, duration="1s")

Each builder returns the JSON-ready dict of one OpSpec / TaskSpec / ChannelSpec; the whole
workload is validated against `schedsim.spec.CustomWorkload` when the run is configured.
"""

from __future__ import annotations

from typing import Any

Op = dict[str, Any]


def run(cycles: float, stall_ns: float = 0.0) -> Op:
    """Fixed work: `cycles` scale with frequency, SMT share and IPC; `stall_ns` does not."""
    return {"op": "run", "cycles": float(cycles), "stall_ns": float(stall_ns)}


def run_for(ns: int) -> Op:
    """Busy for a fixed wall time, whatever the speed."""
    return {"op": "run_for", "ns": int(ns)}


def sleep(ns: int) -> Op:
    return {"op": "sleep", "ns": int(ns)}


def timer(period_ns: int) -> Op:
    """Sleep until the next activation of a periodic timer (rt-app `timer`)."""
    return {"op": "timer", "period_ns": int(period_ns)}


def io(ns: int) -> Op:
    """Block in iowait for `ns`; wakes with the IOWAIT flag."""
    return {"op": "io", "ns": int(ns)}


def send(chan: str) -> Op:
    return {"op": "send", "chan": chan}


def recv(chan: str) -> Op:
    return {"op": "recv", "chan": chan}


def recv_any(*chans: str) -> Op:
    """poll() over the channels and read the first ready one (round-robin from the one after
    the last served); blocks while all are empty."""
    return {"op": "recv_any", "chans": list(chans)}


def send_polled(*chans: str) -> Op:
    """Send on the channel at the position the last `recv_any` served (reply on that
    connection)."""
    return {"op": "send_polled", "chans": list(chans)}


def fork(task_name: str) -> Op:
    return {"op": "fork", "task": task_name}


def exec_(comm: str) -> Op:
    return {"op": "exec", "comm": comm}


def wait() -> Op:
    return {"op": "wait"}


def exit_() -> Op:
    return {"op": "exit"}


def mark(name: str) -> Op:
    """Record a named point in time for the workload's metrics."""
    return {"op": "mark", "name": name}


def run_dist(dist: dict[str, Any], stall_ns: float = 0.0) -> Op:
    """Work drawn from a distribution at each execution: `const(v)`, `uniform(lo, hi)`,
    `exponential(mean)`, `log_normal(mu, sigma, scale)` (cycles)."""
    return {"op": "run_dist", "dist": dist, "stall_ns": stall_ns}


def const(value: float) -> dict[str, Any]:
    return {"kind": "const", "value": value}


def uniform(lo: float, hi: float) -> dict[str, Any]:
    return {"kind": "uniform", "lo": lo, "hi": hi}


def exponential(mean: float) -> dict[str, Any]:
    return {"kind": "exponential", "mean": mean}


def log_normal(mu: float, sigma: float, scale: float = 1.0) -> dict[str, Any]:
    """exp(N(mu, sigma)) × scale cycles."""
    return {"kind": "log_normal", "mu": mu, "sigma": sigma, "scale": scale}


def lock(mutex: str) -> Op:
    """Take a mutex (FIFO hand-off); blocks while another task holds it."""
    return {"op": "lock", "mutex": mutex}


def unlock(mutex: str) -> Op:
    return {"op": "unlock", "mutex": mutex}


def lock_row(table: str, rows: int) -> Op:
    """Lock one uniformly drawn row of a table of `rows` row locks (an UPDATE of a random row);
    blocks while another task holds that row. Held until `unlock_rows`."""
    return {"op": "lock_row", "table": table, "rows": rows}


def unlock_rows(table: str) -> Op:
    """Release every row the task holds in `table` (the end of its transaction)."""
    return {"op": "unlock_rows", "table": table}


def group_commit(log: str, ns: int) -> Op:
    """Make a commit record durable through a log with group commit: flush in iowait for `ns`
    if no flush is under way, else wait and share the next flush."""
    return {"op": "group_commit", "log": log, "ns": ns}


def journal_commit(journal: str) -> Op:
    """ext4's fsync: ask the journal thread to commit the running transaction and sleep until
    that commit is written (jbd2_complete_transaction)."""
    return {"op": "journal_commit", "journal": journal}


def journal_wait(journal: str) -> Op:
    """The journal thread: sleep until a commit is asked for, then close the running
    transaction and continue with its commit."""
    return {"op": "journal_wait", "journal": journal}


def journal_done(journal: str) -> Op:
    """The journal thread: the commit is written; wake every fsync waiting for it."""
    return {"op": "journal_done", "journal": journal}


def barrier(name: str) -> Op:
    """Meet every task instance whose program names this barrier."""
    return {"op": "barrier", "name": name}


def cond_wait(cond: str, mutex: str) -> Op:
    """Release `mutex`, wait for a signal on `cond`, take `mutex` again."""
    return {"op": "cond_wait", "cond": cond, "mutex": mutex}


def signal(cond: str) -> Op:
    return {"op": "signal", "cond": cond}


def broadcast(cond: str) -> Op:
    return {"op": "broadcast", "cond": cond}


def suspend() -> Op:
    return {"op": "suspend"}


def resume(task_name: str) -> Op:
    return {"op": "resume", "task": task_name}


def yield_() -> Op:
    """sched_yield()."""
    return {"op": "yield"}


def clock(
    name: str,
    period_ns: int,
    *,
    unique: bool = False,
    relative: bool = True,
    origin_ns: int = 0,
) -> Op:
    """rt-app's `timer` with a `ref`: advance the named periodic clock by `period_ns` and sleep
    until its expiry if that is still ahead (docs/workloads/rt-app.md)."""
    return {
        "op": "clock",
        "name": name,
        "period_ns": int(period_ns),
        "unique": unique,
        "relative": relative,
        "origin_ns": int(origin_ns),
    }


def set_affinity(*cpus: int) -> Op:
    """sched_setaffinity() on itself: allow only `cpus` (none: every CPU)."""
    return {"op": "set_affinity", "cpus": [int(c) for c in cpus]}


def set_uclamp(min: int | None = None, max: int | None = None) -> Op:  # noqa: A002
    """sched_setattr() with SCHED_FLAG_UTIL_CLAMP on itself (kernel 5.3+): the task's
    utilization clamp requests, 0..1024; one left out keeps its current request."""
    op: Op = {"op": "set_uclamp"}
    if min is not None:
        op["min"] = int(min)
    if max is not None:
        op["max"] = int(max)
    return op


def loop(*body: Op, count: int = -1) -> Op:
    """Repeat `body` `count` times (`count < 0`: forever)."""
    return {"op": "loop", "count": int(count), "body": list(body)}


def task(
    name: str,
    *program: Op,
    instances: int = 1,
    nice: int = 0,
    policy: str = "SCHED_OTHER",
    priority: int = 0,
    cpus: list[int] | None = None,
    start: bool = True,
    delay_ns: int = 0,
    start_cpu: int | None = None,
    cgroup: str | None = None,
    uclamp_min: int | None = None,
    uclamp_max: int | None = None,
) -> dict[str, Any]:
    """A task template; `start=False` templates are only created by a `fork` op naming them.

    `start_cpu` places an initial task on that CPU instead of fork balancing. `cgroup` puts
    the template's tasks in that cgroup (a path defined by the run's `cgroups`, e.g. `"cg1"`
    or `"a/b"`); without it, an initial task starts in the root group and a forked one in its
    parent's group. `uclamp_min` / `uclamp_max` (0..1024, kernel 5.3+) are the tasks'
    utilization clamp requests from creation, as `sched_setattr()` sets them.
    """
    spec: dict[str, Any] = {
        "name": name,
        "instances": instances,
        "nice": nice,
        "policy": policy,
        "priority": priority,
        "cpus": list(cpus or []),
        "start": start,
        "delay_ns": delay_ns,
        "program": list(program),
    }
    if start_cpu is not None:
        spec["start_cpu"] = start_cpu
    if cgroup is not None:
        spec["cgroup"] = cgroup
    if uclamp_min is not None:
        spec["uclamp_min"] = uclamp_min
    if uclamp_max is not None:
        spec["uclamp_max"] = uclamp_max
    return spec


def channel(
    name: str,
    capacity: int = 1024,
    tcp: bool = False,
    write_space: int | None = None,
    pipe_page: int | None = None,
) -> dict[str, Any]:
    """A bounded message channel (pipe or socket); `tcp` makes it a loopback TCP connection
    whose sends leave the socket timers armed on the sending CPU; `write_space` K makes its
    blocked senders wake all at once when a receive leaves at most K messages (an AF_UNIX
    socket: a quarter of its buffer) instead of one per receive; `pipe_page` N makes it a pipe
    of capacity / N pages of N messages, whose writers wait for a free page."""
    spec: dict[str, Any] = {"name": name, "capacity": capacity}
    if tcp:
        spec["tcp"] = True
    if write_space is not None:
        spec["write_space"] = write_space
    if pipe_page is not None:
        spec["pipe_page"] = pipe_page
    return spec


def custom_workload(
    tasks: list[dict[str, Any]],
    channels: list[dict[str, Any]] | None = None,
    params: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The WorkloadSpec of a custom workload, ready for `schedsim.run` / `build_config`."""
    return {
        "name": "custom",
        "params": dict(params or {}),
        "custom": {"tasks": tasks, "channels": list(channels or [])},
    }
