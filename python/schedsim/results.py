"""`RunResult`: one simulation's result JSON, with pandas views."""

from __future__ import annotations

import base64
import json
import re
from functools import cached_property
from typing import Any

import pandas as pd

from .frames import frame_of, to_polars
from .ftrace import df_event, parse_ftrace
from .native import REPLAY_OF

# Keys every result carries (DESIGN "run --json"; the core may add more).
CONTRACT_KEYS = (
    "schedsim_version",
    "machine",
    "kernel",
    "workload",
    "seed",
    "metrics",
    "primary",
    "power",
    "turbostat",
    "sched",
    "sim",
    "cpus",
    "tasks",
    "samples",
)

# cpu.stat's fields, in the file's order, as the result's optional `cgroups` section reports
# them per cgroup below the root: {path: {"usage_usec": ..., ...}}.
CPU_STAT_FIELDS = (
    "usage_usec",
    "nr_periods",
    "nr_throttled",
    "throttled_usec",
    "nr_bursts",
    "burst_usec",
)

# What the core reports per cgroup besides cpu.stat: where in each period its period timer
# fires (µs after a multiple of the period; 0 for aligned timers, 41abdba9).
CGROUP_EXTRA_FIELDS = ("period_phase_us",)

_CGROUP_METRIC = re.compile(
    rf"^cg_(?P<path>.+)_(?P<field>{'|'.join(CPU_STAT_FIELDS + CGROUP_EXTRA_FIELDS)})$"
)


def cgroup_metric(name: str) -> tuple[str, str] | None:
    """`cg_<path>_<field>` (`cg_cg1_throttled_usec`, `cg_a/b_nr_periods`) → (path, field): a
    cgroup's cpu.stat field used as a per-run metric; None for any other name."""
    m = _CGROUP_METRIC.match(name)
    return (m.group("path"), m.group("field")) if m else None


# The keys that hold a recorded trace (ftrace text; Perfetto protobuf in base64; Chrome JSON).
TRACE_KEYS = ("trace", "trace_perfetto", "trace_chrome")

# Fields that depend on the host's speed, not on the simulation.
WALL_CLOCK_FIELDS = (("sim", "wall_s"), ("sim", "events_per_s"))


class RunResult:
    """The result of one run.

    `json` is the result dict exactly as the core returned it (key order kept); `config` the
    SimConfig dict that produced it, when known.
    """

    def __init__(self, data: dict[str, Any], config: dict[str, Any] | None = None) -> None:
        self._data = data
        self.config = config

    @classmethod
    def from_json(cls, text: str, config: dict[str, Any] | None = None) -> RunResult:
        data = json.loads(text)
        replay = ((config or {}).get("workload") or {}).get(REPLAY_OF)
        if replay is not None:
            # a replayed trace ran as explicit programs: name what was replayed
            data["workload"] = replay
        return cls(data, config)

    @property
    def json(self) -> dict[str, Any]:
        return self._data

    def to_json(self, include_trace: bool = True, indent: int | None = 2) -> str:
        """The result as JSON text; `include_trace=False` leaves out the trace (`trace`, the
        ftrace text, `trace_perfetto`, the base64 protobuf, or `trace_chrome`)."""
        data = self._data
        if not include_trace:
            data = {k: v for k, v in data.items() if k not in TRACE_KEYS}
        return json.dumps(data, indent=indent, ensure_ascii=False)

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    # ---- scalars -----------------------------------------------------------------------------

    @property
    def metrics(self) -> dict[str, Any]:
        return self._data.get("metrics", {})

    @property
    def primary(self) -> dict[str, Any]:
        return self._data.get("primary", {})

    @property
    def power(self) -> dict[str, Any]:
        return self._data.get("power", {})

    @property
    def turbostat(self) -> dict[str, Any]:
        return self._data.get("turbostat", {})

    @property
    def sched(self) -> dict[str, Any]:
        return self._data.get("sched", {})

    @property
    def sim(self) -> dict[str, Any]:
        return self._data.get("sim", {})

    @property
    def features(self) -> dict[str, bool]:
        """The scheduler feature toggles in effect (`/sys/kernel/debug/sched/features`)."""
        return self._data.get("features", {})

    def cpu_stat(self, path: str) -> dict[str, Any]:
        """One cgroup's cpu.stat (`usage_usec`, `nr_periods`, `nr_throttled`, `throttled_usec`,
        `nr_bursts`, `burst_usec`); KeyError naming the cgroups the run has otherwise."""
        groups = self._data.get("cgroups") or {}
        if path not in groups:
            raise KeyError(
                f"no cgroup '{path}' in this result; it has: {', '.join(groups) or 'none'}"
            )
        return groups[path]

    # ---- frames ------------------------------------------------------------------------------

    @cached_property
    def tasks(self) -> pd.DataFrame:
        """One row per task: pid, ppid, comm, cpu_ns, wait_ns, nr_switches, ...; `exit_ns` is a
        nullable integer (`<NA>` while the task is alive)."""
        frame = pd.DataFrame.from_records(self._data.get("tasks", []))
        if "exit_ns" in frame:
            frame["exit_ns"] = frame["exit_ns"].astype("Int64")
        return frame

    @cached_property
    def cpus(self) -> pd.DataFrame:
        """One row per CPU: cpu, busy_ns, idle_ns, context_switches, avg_khz, ..."""
        return pd.DataFrame.from_records(self._data.get("cpus", []))

    @cached_property
    def cgroups(self) -> pd.DataFrame:
        """One row per cgroup below the root: `path`, then its cpu.stat (`usage_usec`,
        `nr_periods`, `nr_throttled`, `throttled_usec`, `nr_bursts`, `burst_usec`) and
        `period_phase_us`. Empty when the run defined no cgroups."""
        groups = self._data.get("cgroups") or {}
        rows = [{"path": path, **(stat or {})} for path, stat in groups.items()]
        if rows:
            return pd.DataFrame.from_records(rows)
        # no groups: the same columns, typed, and no rows
        numeric = (*CPU_STAT_FIELDS, *CGROUP_EXTRA_FIELDS)
        frame = pd.DataFrame({"path": pd.Series(dtype="string")})
        for column in numeric:
            frame[column] = pd.Series(dtype="int64")
        return frame

    @cached_property
    def samples(self) -> pd.DataFrame:
        """Per-interval samples (config.sample_interval_ns), nested keys flattened with dots."""
        samples = self._data.get("samples", [])
        if not samples:
            return pd.DataFrame()
        return pd.json_normalize(samples)

    @property
    def trace_text(self) -> str | None:
        """The ftrace text, when the run was traced as ftrace."""
        return self._data.get("trace")

    @cached_property
    def trace_perfetto(self) -> bytes | None:
        """The Perfetto `Trace` protobuf, when the run was traced with `trace="perfetto"`: write
        it to a `.pftrace` file and open it in ui.perfetto.dev or trace_processor."""
        encoded = self._data.get("trace_perfetto")
        return None if encoded is None else base64.b64decode(encoded)

    @property
    def trace_chrome(self) -> str | None:
        """The Chrome JSON trace (Trace Event Format), when the run was traced with
        `trace="chrome"`: for chrome://tracing or ui.perfetto.dev."""
        return self._data.get("trace_chrome")

    @cached_property
    def events(self) -> pd.DataFrame:
        """The trace as a DataFrame: index `Time` (s), `__cpu`, `__pid`, `__comm`, `event`,
        fields, from the ftrace text (a Chrome JSON trace carries it too). Empty when the run
        was not traced, or traced as Perfetto protobuf."""
        text = self.trace_text
        if text is None and self.trace_chrome is not None:
            text = json.loads(self.trace_chrome).get("systemTraceEvents")
        return parse_ftrace(text or "")

    def df_event(self, name: str) -> pd.DataFrame:
        """The trace rows of one event with that event's columns (LISA's `df_event`)."""
        return df_event(self.events, name)

    FRAMES = ("tasks", "cpus", "cgroups", "samples", "events")

    def to_polars(self, name: str) -> Any:
        """One of the frames (`FRAMES`) as a polars DataFrame (`events` with `Time` as its first
        column). Needs polars (`pip install 'schedsim[polars]'`)."""
        return to_polars(frame_of(self, name, self.FRAMES))

    def __repr__(self) -> str:
        wl = self._data.get("workload", {})
        primary = self.primary
        return (
            f"RunResult(machine={self._data.get('machine')!r}, workload={wl.get('name')!r}, "
            f"{primary.get('name')}={primary.get('value')!r})"
        )


def strip_wall_clock(data: dict[str, Any]) -> dict[str, Any]:
    """A copy of a result without the fields that depend on the host's speed."""
    out = dict(data)
    for section, key in WALL_CLOCK_FIELDS:
        if isinstance(out.get(section), dict):
            out[section] = {k: v for k, v in out[section].items() if k != key}
    return out
