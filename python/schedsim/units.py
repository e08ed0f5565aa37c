"""Parsing of user-written quantities."""

import re

from .errors import ConfigError

_NS_PER_UNIT = {
    "ns": 1,
    "us": 1_000,
    "µs": 1_000,
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60_000_000_000,
}

_DURATION = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*(ns|us|µs|ms|s|m)\s*$")

DURATION_FORMS = "a number with a unit: ns, us, ms, s or m (e.g. 250ns, 100us, 500ms, 2s, 1m)"


def parse_duration(value: str | int) -> int:
    """Parse `500ms`, `2s`, `1m`, `100us`, `250ns` (decimals allowed: `1.5s`) into nanoseconds.

    An int is taken as nanoseconds already. Raises ConfigError naming the value and the allowed
    forms.
    """
    if isinstance(value, bool):
        raise ConfigError(f"duration {value!r}: expected {DURATION_FORMS}")
    if isinstance(value, int):
        if value < 0:
            raise ConfigError(f"duration {value}: must not be negative")
        return value
    if not isinstance(value, str):
        raise ConfigError(f"duration {value!r}: expected {DURATION_FORMS}")
    m = _DURATION.match(value)
    if not m:
        raise ConfigError(f"duration '{value}': expected {DURATION_FORMS}")
    number, unit = m.groups()
    scale = _NS_PER_UNIT[unit]
    if "." in number:
        whole, _, frac = number.partition(".")
        # Exact decimal arithmetic: no float rounding in the simulated duration.
        ns = int(whole or "0") * scale + int(frac or "0") * scale // 10 ** len(frac or "")
        if int(frac or "0") * scale % 10 ** len(frac or "") != 0:
            raise ConfigError(f"duration '{value}': finer than 1 ns")
    else:
        ns = int(number) * scale
    return ns


def format_duration(ns: int) -> str:
    """The shortest exact form of a duration in ns: 2000000000 -> '2s', 1500000 -> '1500us'."""
    for unit in ("m", "s", "ms", "us"):
        scale = _NS_PER_UNIT[unit]
        if ns and ns % scale == 0:
            return f"{ns // scale}{unit}"
    return f"{ns}ns"
