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


def loop(*body: Op, count: int = -1) -> Op:
    """Repeat `body` `count` times (`count < 0`: forever)."""
    return {"op": "loop", "count": int(count), "body": list(body)}


def task(
    name: str,
    *program: Op,
    instances: int = 1,
    nice: int = 0,
    policy: str = "SCHED_OTHER",
    cpus: list[int] | None = None,
    start: bool = True,
    delay_ns: int = 0,
    start_cpu: int | None = None,
) -> dict[str, Any]:
    """A task template; `start=False` templates are only created by a `fork` op naming them.

    `start_cpu` places an initial task on that CPU instead of fork balancing.
    """
    spec: dict[str, Any] = {
        "name": name,
        "instances": instances,
        "nice": nice,
        "policy": policy,
        "cpus": list(cpus or []),
        "start": start,
        "delay_ns": delay_ns,
        "program": list(program),
    }
    if start_cpu is not None:
        spec["start_cpu"] = start_cpu
    return spec


def channel(name: str, capacity: int = 1024) -> dict[str, Any]:
    """A bounded message channel (pipe or socket)."""
    return {"name": name, "capacity": capacity}


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
