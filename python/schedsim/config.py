"""User input → the core's `SimConfig` (crates/schedsim-core/src/config.rs).

Python owns presets, defaults and validation: every error here is a `ConfigError` that names the
offending value and lists what is allowed. Nothing falls back to a silent default.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from . import native
from .errors import ConfigError
from .machines import Machine, load_machine
from .machines.preset import format_validation_error
from .spec import CustomWorkload, SimConfig
from .units import parse_duration

DEFAULT_KERNEL = "6.12"
DEFAULT_HZ = 250

GOVERNORS = ("performance", "powersave", "schedutil", "ondemand", "conservative")
INTEL_PSTATE_ACTIVE_GOVERNORS = ("performance", "powersave")
INVARIANCE_FORMS = ("none", "turbo:N", "base", "max", "amd-midpoint", "cpufreq")
HZ_VALUES = (100, 250, 300, 1000)

# --set keys that are not sysctl/sysfs tunables.
_FEATURE_PREFIXES = ("feature.", "features.")
_HZ_KEY = "CONFIG_HZ"

_INT = re.compile(r"^[+-]?\d+$")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]*$")


# ---- scalar values --------------------------------------------------------------------------


def parse_value(text: str) -> int | float | str:
    """`42` → int, `0.5` / `1e3` → float, anything else → the string itself."""
    s = text.strip()
    if _INT.match(s):
        return int(s)
    try:
        value = float(s)
    except ValueError:
        return s
    if math.isfinite(value):
        return value
    return s


# ---- workloads ------------------------------------------------------------------------------


@dataclass(frozen=True)
class WorkloadRequest:
    """A parsed workload string `NAME[:k=v,k=v]` (or `rt-app:PATH`)."""

    name: str
    params: dict[str, Any]


def parse_workload(text: str) -> WorkloadRequest:
    """Parse the workload grammar `NAME[:k=v,k=v]`; `rt-app:PATH` names an rt-app JSON file.

    Values are parsed as int, float or string. Raises ConfigError on a malformed string.
    """
    if not isinstance(text, str) or not text.strip():
        raise ConfigError("workload: empty; expected NAME[:key=value,...], e.g. periodic:tasks=4")
    name, sep, rest = text.strip().partition(":")
    name = name.strip()
    if not _NAME.match(name):
        raise ConfigError(f"workload '{text}': bad name '{name}'; expected NAME[:key=value,...]")
    if name == "rt-app":
        if not rest.strip():
            raise ConfigError(f"workload '{text}': expected rt-app:PATH (an rt-app JSON file)")
        return WorkloadRequest(name, {"path": rest.strip()})
    params: dict[str, Any] = {}
    if sep and not rest.strip():
        raise ConfigError(f"workload '{text}': nothing after ':'; expected NAME:key=value,...")
    if rest.strip():
        for item in rest.split(","):
            key, eq, value = item.partition("=")
            key = key.strip()
            if not eq or not key or not value.strip():
                raise ConfigError(
                    f"workload '{text}': bad parameter '{item.strip()}'; expected key=value"
                )
            if key in params:
                raise ConfigError(f"workload '{text}': parameter '{key}' given twice")
            params[key] = parse_value(value)
    return WorkloadRequest(name, params)


@cache
def core_workloads() -> tuple[dict[str, Any], ...]:
    """The core's workload generators (`_core.workloads()`), parsed."""
    return tuple(json.loads(native.core_function("workloads")()))


def workload_catalog() -> dict[str, dict[str, Any]]:
    return {w["name"]: w for w in core_workloads()}


def _coerce_param(workload: str, name: str, value: Any, default: Any) -> Any:
    """Check a parameter value against the type of its default."""
    if default is None or isinstance(default, str):
        return value
    if isinstance(default, bool):
        if isinstance(value, int) and value in (0, 1):
            return bool(value)
        if isinstance(value, str) and value.lower() in ("true", "false"):
            return value.lower() == "true"
        raise ConfigError(f"workload '{workload}': {name}={value!r}: expected true/false or 1/0")
    if isinstance(default, int):
        if isinstance(value, int):
            return value
        raise ConfigError(f"workload '{workload}': {name}={value!r}: expected an integer")
    if isinstance(default, float):
        if isinstance(value, int | float):
            return float(value)
        raise ConfigError(f"workload '{workload}': {name}={value!r}: expected a number")
    return value


def resolve_workload(workload: str | Mapping[str, Any]) -> dict[str, Any]:
    """A workload string or WorkloadSpec mapping → a validated WorkloadSpec dict.

    Named workloads are checked against `_core.workloads()`: an unknown workload or parameter is
    an error that lists the allowed ones. `custom` workloads carry explicit programs.
    """
    if isinstance(workload, Mapping):
        name = workload.get("name")
        if name == "custom":
            try:
                custom = CustomWorkload.model_validate(workload.get("custom"))
            except ValidationError as err:
                raise ConfigError(f"custom workload: {format_validation_error(err)}") from None
            extra = set(workload) - {"name", "params", "custom"}
            if extra:
                raise ConfigError(f"workload: unknown keys {sorted(extra)}")
            return {
                "name": "custom",
                "params": dict(workload.get("params") or {}),
                "custom": custom.model_dump(mode="json"),
            }
        if not isinstance(name, str):
            raise ConfigError("workload: a mapping needs a 'name'")
        request = WorkloadRequest(name, dict(workload.get("params") or {}))
    else:
        request = parse_workload(workload)

    catalog = workload_catalog()
    named = sorted(name for name in catalog if name != "custom")
    if request.name == "custom":
        raise ConfigError(
            "workload 'custom' takes explicit task programs: build it with the Python API "
            "(schedsim.programs.custom_workload)"
        )
    if request.name not in catalog:
        raise ConfigError(f"unknown workload '{request.name}'; allowed: {', '.join(named)}")
    info = catalog[request.name]
    declared = {p["name"]: p for p in info.get("params", [])}
    params: dict[str, Any] = {}
    for key, value in request.params.items():
        if key not in declared:
            allowed = ", ".join(declared) if declared else "none"
            raise ConfigError(
                f"workload '{request.name}': unknown parameter '{key}'; allowed: {allowed}"
            )
        params[key] = _coerce_param(request.name, key, value, declared[key].get("default"))
    if request.name == "rt-app":
        path = Path(str(params["path"])).expanduser()
        if not path.is_file():
            raise ConfigError(f"workload 'rt-app': file '{params['path']}' not found")
        params["path"] = str(path.resolve())
    return {"name": request.name, "params": params}


# ---- kernel and cpufreq ---------------------------------------------------------------------


def parse_kernel_version(version: str) -> tuple[int, int]:
    m = re.match(r"^(\d+)\.(\d+)$", str(version).strip())
    if not m:
        raise ConfigError(f"kernel '{version}': expected a version MAJOR.MINOR, e.g. 5.2 or 6.12")
    return int(m.group(1)), int(m.group(2))


def allowed_drivers(machine: Machine) -> tuple[str, ...]:
    """cpufreq drivers the simulator models on this machine."""
    if machine.arch == "x86":
        if machine.vendor == "intel":
            return ("intel_pstate", "intel_cpufreq", "acpi-cpufreq")
        return ("acpi-cpufreq",)
    own = machine.preset.machine.cpufreq_driver
    drivers = [own] if own else []
    if machine.arch == "arm64" and "cpufreq-dt" not in drivers:
        drivers.append("cpufreq-dt")
    return tuple(drivers)


def default_driver(machine: Machine, kernel: tuple[int, int]) -> str | None:
    """The driver the kernel picks (kernel.md §5.1: intel_pstate active with HWP from v5.8,
    passive (intel_cpufreq) without HWP; before v5.8 active everywhere). None on a POWER
    partition without one: a shared-processor LPAR runs at the frequency the firmware sets."""
    if machine.arch == "x86":
        if machine.vendor == "intel":
            if kernel < (5, 8) or machine.hwp:
                return "intel_pstate"
            return "intel_cpufreq"
        return "acpi-cpufreq"
    driver = machine.preset.machine.cpufreq_driver
    if not driver and machine.arch == "power":
        return None
    if not driver:
        raise ConfigError(
            f"machine '{machine.name}' names no cpufreq_driver; give --driver "
            f"({', '.join(allowed_drivers(machine)) or 'none modelled'})"
        )
    return driver


def kernel_default_governor(driver: str | None) -> str:
    """intel_pstate (active) defaults to its powersave policy; the generic drivers to schedutil
    (CONFIG_CPU_FREQ_DEFAULT_GOV_SCHEDUTIL, the Kconfig default on SMP x86 and arm64). Without
    a driver the frequency is fixed, which the core runs as `performance`."""
    if driver is None:
        return "performance"
    return "powersave" if driver == "intel_pstate" else "schedutil"


def default_governor(driver: str | None) -> str:
    """The governor the kernel starts with under this driver."""
    return kernel_default_governor(driver)


def default_invariance(machine: Machine, kernel: tuple[int, int]) -> str:
    """The frequency invariance the kernel uses on this machine."""
    return kernel_default_invariance(machine, kernel)


def kernel_default_invariance(machine: Machine, kernel: tuple[int, int]) -> str:
    """kernel.md §2.3: Intel APERF/MPERF invariance from v5.7 with the 4C turbo reference (1C when
    there are fewer than 4 turbo bins); AMD's midpoint from v5.11; Arm's cpufreq-based scale."""
    if machine.arch == "x86":
        if machine.vendor == "intel":
            if kernel < (5, 7):
                return "none"
            turbo = machine.spec.freq_domains[0].turbo_khz
            if not turbo:
                return "base"
            return "turbo:4" if len(turbo) >= 4 else "turbo:1"
        return "amd-midpoint" if kernel >= (5, 11) else "none"
    if machine.arch == "arm64":
        return "cpufreq"
    return "none"


def check_invariance(machine: Machine, invariance: str) -> str:
    inv = invariance.strip()
    bins = len(machine.spec.freq_domains[0].turbo_khz)
    m = re.match(r"^turbo:(\d+)$", inv)
    if m:
        n = int(m.group(1))
        if machine.arch != "x86" or not bins:
            raise ConfigError(f"invariance '{inv}': machine '{machine.name}' has no turbo table")
        if not 1 <= n <= bins:
            raise ConfigError(
                f"invariance '{inv}': machine '{machine.name}' has turbo bins 1..{bins}"
            )
        return inv
    if inv not in INVARIANCE_FORMS or inv == "turbo:N":
        raise ConfigError(f"unknown invariance '{inv}'; allowed: {', '.join(INVARIANCE_FORMS)}")
    if inv == "amd-midpoint" and machine.vendor != "amd":
        raise ConfigError(f"invariance 'amd-midpoint' is for AMD machines, not '{machine.name}'")
    if inv == "cpufreq" and machine.arch == "x86":
        raise ConfigError(
            f"invariance 'cpufreq' is Arm's cpufreq-based scale; on x86 '{machine.name}' use "
            "none, turbo:N, base or max"
        )
    return inv


@dataclass(frozen=True)
class CpufreqChoice:
    driver: str | None
    governor: str
    invariance: str


def resolve_cpufreq(
    machine: Machine,
    kernel: str,
    driver: str | None = None,
    governor: str | None = None,
    invariance: str | None = None,
) -> CpufreqChoice:
    """Fill in the kernel's defaults for this machine and check the explicit choices."""
    version = parse_kernel_version(kernel)
    drivers = allowed_drivers(machine)
    if driver is None:
        driver = default_driver(machine, version)
    elif driver not in drivers:
        raise ConfigError(
            f"unknown driver '{driver}' for machine '{machine.name}'; allowed: {', '.join(drivers)}"
        )
    if driver is None and governor not in (None, "performance"):
        raise ConfigError(
            f"governor '{governor}': machine '{machine.name}' has no cpufreq driver (its "
            "frequency is fixed); allowed: performance"
        )
    if governor is None:
        governor = default_governor(driver)
    else:
        allowed = INTEL_PSTATE_ACTIVE_GOVERNORS if driver == "intel_pstate" else GOVERNORS
        if governor not in allowed:
            raise ConfigError(
                f"unknown governor '{governor}' for driver {driver}; allowed: {', '.join(allowed)}"
            )
    if invariance is None:
        invariance = default_invariance(machine, version)
    else:
        invariance = check_invariance(machine, invariance)
    return CpufreqChoice(driver, governor, invariance)


# ---- --set ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Settings:
    tunables: dict[str, Any]
    features: dict[str, Any]
    hz: int | None


def parse_sets(sets: Iterable[str] | Mapping[str, Any] | None) -> Settings:
    """`key=value` pairs: `feature.NAME` / `features.NAME` go to kernel features, `CONFIG_HZ` to
    the tick rate, everything else to the named tunables (sysctl/sysfs names)."""
    tunables: dict[str, Any] = {}
    features: dict[str, Any] = {}
    hz: int | None = None
    if sets is None:
        items: list[tuple[str, Any]] = []
    elif isinstance(sets, Mapping):
        items = list(sets.items())
    else:
        items = []
        for text in sets:
            key, eq, value = str(text).partition("=")
            if not eq or not key.strip() or not value.strip():
                raise ConfigError(f"--set '{text}': expected key=value")
            items.append((key.strip(), parse_value(value)))
    for key, value in items:
        if not _NAME.match(key):
            raise ConfigError(f"--set '{key}': bad key name")
        if key.startswith(_FEATURE_PREFIXES):
            name = key.split(".", 1)[1]
            if not name:
                raise ConfigError(f"--set '{key}': expected features.NAME=value")
            features[name] = value
        elif key == _HZ_KEY:
            if value not in HZ_VALUES:
                raise ConfigError(
                    f"--set CONFIG_HZ={value}: allowed: {', '.join(map(str, HZ_VALUES))}"
                )
            hz = int(value)
        else:
            tunables[key] = value
    return Settings(tunables, features, hz)


# ---- the whole run --------------------------------------------------------------------------

_U64_MAX = 2**64 - 1


def build_config(
    machine: str | Machine,
    workload: str | Mapping[str, Any],
    kernel: str | None = None,
    driver: str | None = None,
    governor: str | None = None,
    invariance: str | None = None,
    sets: Iterable[str] | Mapping[str, Any] | None = None,
    seed: int = 1,
    duration: str | int | None = None,
    trace: bool = False,
    sample_interval: str | int | None = None,
) -> dict[str, Any]:
    """Validate user input and build the `SimConfig` dict for `_core.run`.

    `machine` is a preset name, a path to a preset TOML or a loaded Machine; `workload` the
    workload string (`periodic:tasks=4`) or a WorkloadSpec mapping (`{"name": "custom", ...}`);
    `sets` the `--set key=value` pairs; `duration`/`sample_interval` like `500ms` or ns.
    """
    duration_ns = None if duration is None else parse_duration(duration)
    if duration_ns == 0:
        raise ConfigError("duration 0: must be positive")
    sample_ns = 0 if sample_interval is None else parse_duration(sample_interval)
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= _U64_MAX:
        raise ConfigError(f"seed {seed!r}: expected an integer 0..2^64-1")
    m = machine if isinstance(machine, Machine) else load_machine(machine)
    kernel = DEFAULT_KERNEL if kernel is None else str(kernel).strip()
    cpufreq = resolve_cpufreq(m, kernel, driver, governor, invariance)
    settings = parse_sets(sets)
    spec = resolve_workload(workload)
    open_ended = spec["name"] != "custom" and workload_catalog()[spec["name"]].get("open_ended")
    if duration_ns is None and open_ended:
        raise ConfigError(
            f"workload '{spec['name']}' is open-ended: give a duration (--duration), e.g. 2s"
        )
    config = {
        "machine": m.spec.model_dump(mode="json"),
        "kernel": {
            "version": kernel,
            "hz": settings.hz if settings.hz is not None else DEFAULT_HZ,
            "features": settings.features,
        },
        "cpufreq": {
            "governor": cpufreq.governor,
            "driver": cpufreq.driver,
            "invariance": cpufreq.invariance,
        },
        "workload": spec,
        "seed": seed,
        "duration_ns": duration_ns,
        "trace": bool(trace),
        "sample_interval_ns": sample_ns,
        "tunables": settings.tunables,
    }
    try:
        return SimConfig.model_validate(config).to_json_dict()
    except ValidationError as err:
        raise ConfigError(f"config: {format_validation_error(err)}") from None
