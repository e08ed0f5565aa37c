"""The source comments of a preset file: every value line with the comment that sources it.

Preset files carry one source per value, as a TOML comment on the value's line
(`c_eff = 2740  # calibrated ...`). `value_sources` reads them back with the key's full path
(`power.c_eff`, `idle_states.skl[2].exit_latency_us`, `opp_tables.big.opps[3]`), for
`schedsim machines --describe` and for the test that every value has one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_TABLE = re.compile(r"^\[\s*([^\[\]]+?)\s*\]$")
_ARRAY_TABLE = re.compile(r"^\[\[\s*([^\[\]]+?)\s*\]\]$")
_KEY = re.compile(r"^([A-Za-z0-9_.\-\"]+)\s*=\s*(.*)$")


@dataclass(frozen=True)
class ValueSource:
    """One value line: its key path, the value as written, its source comment, its line."""

    key: str
    value: str
    source: str
    line: int


def split_comment(line: str) -> tuple[str, str]:
    """`value  # comment` -> (`value`, `comment`); a `#` inside a quoted string is kept."""
    quote: str | None = None
    escaped = False
    for i, ch in enumerate(line):
        if quote:
            if escaped:
                escaped = False
            elif ch == "\\" and quote == '"':
                escaped = True
            elif ch == quote:
                quote = None
        elif ch in "\"'":
            quote = ch
        elif ch == "#":
            return line[:i].rstrip(), line[i + 1 :].strip()
    return line.rstrip(), ""


def value_sources(text: str) -> list[ValueSource]:
    """Every value line of a preset (key path, value, source comment), in file order.

    Multi-line arrays (`opps = [` ... `]`) give one entry per row, `KEY[i]`; arrays of tables
    (`[[idle_states.skl]]`) are numbered, `idle_states.skl[i].KEY`.
    """
    out: list[ValueSource] = []
    section = ""
    counts: dict[str, int] = {}
    array_key: str | None = None
    array_rows = 0
    for number, raw in enumerate(text.splitlines(), start=1):
        stripped = raw.strip()
        if not stripped or stripped.startswith("#"):
            continue
        body, comment = split_comment(stripped)
        if array_key is not None:
            if body == "]":
                array_key = None
                continue
            out.append(ValueSource(f"{array_key}[{array_rows}]", body.rstrip(","), comment, number))
            array_rows += 1
            continue
        m = _ARRAY_TABLE.match(body)
        if m:
            name = m.group(1)
            index = counts.get(name, 0)
            counts[name] = index + 1
            section = f"{name}[{index}]"
            continue
        m = _TABLE.match(body)
        if m:
            section = m.group(1)
            continue
        m = _KEY.match(body)
        if not m:
            continue
        key = f"{section}.{m.group(1)}" if section else m.group(1)
        value = m.group(2).strip()
        if value == "[":
            array_key, array_rows = key, 0
            continue
        out.append(ValueSource(key, value, comment, number))
    return out
