"""Access to the compiled extension `schedsim._core`, imported on first use.

Everything that does not simulate (presets, config checks, trace parsing) works without it.
"""

import json
from typing import Any

from .errors import CoreUnavailableError


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


def check_config(sim_config: dict[str, Any]) -> str | None:
    """The core's objection to a SimConfig (what it checks before a run: kernel features,
    tunables, cpufreq, cgroups, workload parameters), None if it has none. Without the compiled
    extension nothing is checked here and the run reports it."""
    try:
        fn = core_function("check")
    except CoreUnavailableError:
        return None
    try:
        fn(json.dumps(sim_config))
    except ValueError as err:
        return str(err)
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as err:  # a panic in the core (pyo3's PanicException)
        return f"the core failed while checking the configuration: {err}"
    return None
