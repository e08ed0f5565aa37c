"""Running simulations through the compiled core."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from . import native
from .config import build_config
from .errors import ConfigError
from .machines import Machine
from .results import RunResult


def run_config(config: Mapping[str, Any]) -> RunResult:
    """Run one simulation from a complete SimConfig dict (see `build_config`).

    A configuration the core rejects raises ConfigError with the core's message.
    """
    run = native.core_function("run")
    text = native.config_json(config)
    try:
        out = run(text)
    except ValueError as err:
        raise ConfigError(str(err)) from None
    return RunResult.from_json(out, dict(config))


def run(
    machine: str | Machine,
    workload: str | Mapping[str, Any],
    *,
    kernel: str | None = None,
    driver: str | None = None,
    governor: str | None = None,
    invariance: str | None = None,
    sets: Iterable[str] | Mapping[str, Any] | None = None,
    seed: int = 1,
    duration: str | int | None = None,
    trace: bool | str = False,
    sample_interval: str | int | None = None,
    cgroups: Iterable[Mapping[str, Any] | str] | Mapping[str, Mapping[str, Any]] | None = None,
    run_in: Iterable[str] | None = None,
) -> RunResult:
    """Run one simulation.

    >>> r = schedsim.run("skylake-8x", "periodic:tasks=2,period_ms=10,duty_pct=30",
    ...                  kernel="5.2", duration="200ms")
    >>> r.primary, r.tasks.head()

    Arguments are those of `schedsim run` (see `build_config`); `sets` maps tunables
    (`{"sched_migration_cost_ns": 500000, "features.NEXT_BUDDY": 1}`) or lists `key=value`.
    `cgroups` defines cgroup v2 groups in the cgroup files' syntax
    (`[{"path": "cg1", "max": "50000 100000"}]`, or `["cg1:max=50000/100000"]`) and `run_in`
    lists the groups that each get one copy of the workload (docs/cgroups.md).
    `trace=True` records an ftrace text trace (`r.trace_text`, `r.events`), `trace="perfetto"`
    a Perfetto protobuf trace (`r.trace_perfetto`, bytes for `ui.perfetto.dev`),
    `trace="chrome"` a Chrome JSON trace (`r.trace_chrome`).
    """
    config = build_config(
        machine,
        workload,
        kernel=kernel,
        driver=driver,
        governor=governor,
        invariance=invariance,
        sets=sets,
        seed=seed,
        duration=duration,
        trace=trace,
        sample_interval=sample_interval,
        cgroups=cgroups,
        run_in=run_in,
    )
    return run_config(config)
