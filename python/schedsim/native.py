"""Access to the compiled extension `schedsim._core`, imported on first use.

Everything that does not simulate (presets, config checks, trace parsing) works without it.
"""

import json
import math
from collections.abc import Mapping
from typing import Any

from .errors import ConfigError, CoreUnavailableError

# The core reads integers as at most 64 bits (signed or unsigned).
_INT_MIN, _INT_MAX = -(2**63), 2**64 - 1


def _check_numbers(value: Any, path: str) -> None:
    """Raise ConfigError naming the key of a number the core's JSON cannot take: NaN, an
    infinity, or an integer beyond 64 bits."""
    if isinstance(value, bool):
        return
    if isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(f"{path} = {value}: must be a finite number")
    if isinstance(value, int) and not _INT_MIN <= value <= _INT_MAX:
        raise ConfigError(f"{path} = {value}: out of range (64-bit integers)")
    if isinstance(value, Mapping):
        for key, item in value.items():
            _check_numbers(item, f"{path}.{key}")
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            _check_numbers(item, f"{path}[{i}]")


# What the Python side notes in a SimConfig's workload for its results, not for the core: the
# workload a replay's explicit programs stand for (`replay.py`).
REPLAY_OF = "replay_of"


def config_json(sim_config: Mapping[str, Any]) -> str:
    """A SimConfig as the core's JSON, after checking its numbers (`_check_numbers`), without
    the Python-only notes (`REPLAY_OF`)."""
    _check_numbers(sim_config, "config")
    workload = sim_config.get("workload")
    if isinstance(workload, Mapping) and REPLAY_OF in workload:
        core_workload = {k: v for k, v in workload.items() if k != REPLAY_OF}
        sim_config = {**sim_config, "workload": core_workload}
    return json.dumps(sim_config, separators=(",", ":"))


def core_function(name: str) -> Any:
    """`schedsim._core.<name>`, or CoreUnavailableError telling how to build it."""
    try:
        from . import _core  # type: ignore[attr-defined]
    except ImportError as err:
        raise CoreUnavailableError(
            "the compiled extension schedsim._core is not available; build it with `make build`"
        ) from err
    fn = getattr(_core, name, None)
    if fn is None:
        raise CoreUnavailableError(
            f"schedsim._core has no {name}(): the extension is out of date; run `make build`"
        )
    return fn


def core_version() -> str | None:
    """The core's version string, or None when the extension is not built."""
    try:
        return str(core_function("version")())
    except CoreUnavailableError:
        return None


def model_fingerprint() -> str | None:
    """A hash of the core's sources and data at build time, or None when the extension is not
    built (or predates the fingerprint)."""
    try:
        return str(core_function("model_fingerprint")())
    except CoreUnavailableError:
        return None


def core_check(sim_config: dict[str, Any]) -> tuple[str | None, dict[str, Any] | None]:
    """(the core's objection, None) or (None, what the check returns: `{"primary": {"name",
    "higher_is_better"}}`, the primary metric the configured workload will report); (None,
    None) without the compiled extension."""
    try:
        fn = core_function("check")
    except CoreUnavailableError:
        return None, None
    try:
        out = fn(config_json(sim_config))
    except ValueError as err:  # ConfigError from config_json too
        return str(err), None
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as err:  # a panic in the core (pyo3's PanicException)
        return f"the core failed while checking the configuration: {err}", None
    return None, json.loads(out) if isinstance(out, str) else None


def check_config(sim_config: dict[str, Any]) -> str | None:
    """The core's objection to a SimConfig (what it checks before a run: kernel features,
    tunables, cpufreq, cgroups, workload parameters), None if it has none. Without the compiled
    extension nothing is checked here and the run reports it."""
    return core_check(sim_config)[0]
