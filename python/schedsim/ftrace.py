"""ftrace text (tracefs `trace` / `trace-cmd report`) → pandas, with LISA's conventions.

One row per event: index `Time` (float seconds), columns `__cpu`, `__pid`, `__comm`, `event`
and the event's own fields. `sched_switch` is parsed in its raw `prev_comm=... ==> next_comm=...`
form and in trace-cmd's plugin form (`comm:pid [prio] STATE ==> comm:pid [prio]`); other events
as `key=value` pairs. Lines that are not events (`# tracer`, `cpus=N`, `version = 6`) are skipped.
"""

from __future__ import annotations

import re
from typing import Any

import pandas as pd

# LISA's HRTxtTraceParser header regex (spec/ecosystem.md §1.1).
HEADER = re.compile(
    r"\s*(?P<__comm>.+)-(?P<__pid>\d+)[^\[]*\[(?P<__cpu>\d*)\][^\d]+"
    r"(?P<__timestamp>\d+\.\d+): +(?P<__event>\w+):"
)

# LISA's raw sched_switch fields regex.
SCHED_SWITCH_RAW = re.compile(
    r"prev_comm=(?P<prev_comm>.+?) +prev_pid=(?P<prev_pid>\d+) +prev_prio=(?P<prev_prio>-?\d+) "
    r"+prev_state=(?P<prev_state>[^ ]+) ==> next_comm=(?P<next_comm>.+?) +"
    r"next_pid=(?P<next_pid>\d+) +next_prio=(?P<next_prio>-?\d+)"
)

# trace-cmd's sched_switch plugin form (libtraceevent plugin_sched_switch.c).
SCHED_SWITCH_PLUGIN = re.compile(
    r"(?P<prev_comm>.+?):(?P<prev_pid>\d+) \[(?P<prev_prio>-?\d+)\] (?P<prev_state>\S+) ==> "
    r"(?P<next_comm>.+?):(?P<next_pid>\d+) \[(?P<next_prio>-?\d+)\]"
)

# trace-cmd's sched_wakeup plugin form.
SCHED_WAKEUP_PLUGIN = re.compile(
    r"(?P<comm>.+?):(?P<pid>\d+) \[(?P<prio>-?\d+)\] (?:success=(?P<success>\d+) )?"
    r"CPU:(?P<target_cpu>\d+)"
)

KEY_VALUE = re.compile(r"(\w+)=(\S*)")

# Fields that stay strings even when they look like numbers.
STRING_FIELDS = frozenset({"comm", "prev_comm", "next_comm", "prev_state", "name", "buf"})

_INT = re.compile(r"^-?\d+$")


def _convert(key: str, value: str) -> Any:
    if key not in STRING_FIELDS and _INT.match(value):
        return int(value)
    return value


def parse_line(line: str) -> dict[str, Any] | None:
    """One trace line → a dict (`Time`, `__cpu`, `__pid`, `__comm`, `event`, fields), or None."""
    if not line or line.lstrip().startswith("#"):
        return None
    m = HEADER.match(line)
    if not m:
        return None
    row: dict[str, Any] = {
        "Time": float(m.group("__timestamp")),
        "__cpu": int(m.group("__cpu")) if m.group("__cpu") else None,
        "__pid": int(m.group("__pid")),
        "__comm": m.group("__comm").strip(),
        "event": m.group("__event"),
    }
    payload = line[m.end() :].strip()
    event = row["event"]
    fields: dict[str, Any] | None = None
    if event == "sched_switch":
        sm = SCHED_SWITCH_RAW.search(payload) or SCHED_SWITCH_PLUGIN.search(payload)
        if sm:
            fields = {k: _convert(k, v) for k, v in sm.groupdict().items()}
    elif event in ("sched_wakeup", "sched_wakeup_new", "sched_waking") and "=" not in payload:
        wm = SCHED_WAKEUP_PLUGIN.search(payload)
        if wm:
            fields = {k: _convert(k, v) for k, v in wm.groupdict().items() if v is not None}
    if fields is None:
        fields = {k: _convert(k, v) for k, v in KEY_VALUE.findall(payload)}
    for key, value in fields.items():
        row.setdefault(key, value)
    return row


def parse_ftrace(text: str) -> pd.DataFrame:
    """All events of an ftrace text trace as one DataFrame (LISA column conventions).

    Fields that an event does not have are missing (NA); dtypes are pandas' nullable ones.
    """
    rows = [r for r in (parse_line(line) for line in text.splitlines()) if r is not None]
    if not rows:
        df = pd.DataFrame(columns=["Time", "__cpu", "__pid", "__comm", "event"])
    else:
        df = pd.DataFrame.from_records(rows)
    df = df.set_index("Time")
    df.index = df.index.astype("float64")
    df = df.convert_dtypes()
    return df


def df_event(events: pd.DataFrame, name: str) -> pd.DataFrame:
    """The rows of one event, with only the columns that event has (like LISA's df_event)."""
    sub = events[events["event"] == name]
    return sub.dropna(axis="columns", how="all").drop(columns=["event"])
