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
from .native import REPLAY_OF
from .replay import FTRACE_INFO, replay_costs, trace_workload
from .spec import (
    CFS_PERIOD_US_RANGE,
    CFS_QUOTA_US_MIN,
    CPU_WEIGHT_RANGE,
    MAX_CFS_RUNTIME_US,
    CgroupSpec,
    CustomWorkload,
    SimConfig,
    WorkloadSpec,
    check_cgroup_path,
    check_cgroup_refs,
)
from .units import parse_duration

DEFAULT_KERNEL = "6.12"
DEFAULT_HZ = 250

GOVERNORS = ("performance", "powersave", "schedutil", "ondemand", "conservative")
INTEL_PSTATE_ACTIVE_GOVERNORS = ("performance", "powersave")
INVARIANCE_FORMS = ("none", "turbo:N", "base", "max", "amd-midpoint", "cpufreq")
HZ_VALUES = (100, 250, 300, 1000)

# --set keys that are not sysctl/sysfs tunables.
_FEATURE_PREFIXES = ("feature.", "features.")
# Other names a feature's value goes by: 41abdba9 draws each period timer's phase at random,
# so `random` is the interleaved phase.
_FEATURE_VALUE_ALIASES = {("cfs_bw_timer_phase", "random"): "interleaved"}
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


_RTAPP_ARGS = re.compile(r"^(.*?)((?:,\s*[A-Za-z_][A-Za-z0-9_]*\s*=[^,]*)*)$")
# Workloads named by a file: NAME:PATH.
_FILE_WORKLOADS = {"rt-app": "an rt-app JSON file", "ftrace": "an ftrace text trace"}


def parse_workload(text: str) -> WorkloadRequest:
    """Parse the workload grammar `NAME[:k=v,k=v]`; `rt-app:PATH[,k=v...]` names an rt-app JSON
    file and `ftrace:PATH[,k=v...]` an ftrace text trace, with their optional parameters.

    Values are parsed as int, float or string. Raises ConfigError on a malformed string.
    """
    if not isinstance(text, str) or not text.strip():
        raise ConfigError("workload: empty; expected NAME[:key=value,...], e.g. periodic:tasks=4")
    name, sep, rest = text.strip().partition(":")
    name = name.strip()
    if not _NAME.match(name):
        raise ConfigError(f"workload '{text}': bad name '{name}'; expected NAME[:key=value,...]")
    params: dict[str, Any] = {}
    if name in _FILE_WORKLOADS:
        # NAME:PATH[,key=value...]: the path is everything before the trailing key=value items
        m = _RTAPP_ARGS.match(rest.strip())
        if not m or not m.group(1).strip():
            raise ConfigError(
                f"workload '{text}': expected {name}:PATH[,key=value...] ({_FILE_WORKLOADS[name]})"
            )
        params["path"] = m.group(1).strip()
        rest, sep = m.group(2).lstrip(","), ""
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
    """The core's generators, plus `ftrace` (a recorded trace replayed: `replay.py`), which the
    front end turns into a custom workload."""
    catalog = {w["name"]: w for w in core_workloads()}
    catalog.setdefault(FTRACE_INFO["name"], FTRACE_INFO)
    return catalog


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


def resolve_workload(
    workload: str | Mapping[str, Any], machine: Machine | None = None
) -> dict[str, Any]:
    """A workload string or WorkloadSpec mapping → a validated WorkloadSpec dict.

    Named workloads are checked against `_core.workloads()`: an unknown workload or parameter is
    an error that lists the allowed ones. `custom` workloads carry explicit programs. `ftrace`
    becomes the custom workload that replays the trace on `machine` (`replay.py`).
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
    if request.name in _FILE_WORKLOADS:
        if params.get("path") is None:
            raise ConfigError(f"workload '{request.name}': give the file, {request.name}:PATH")
        path = Path(str(params["path"])).expanduser()
        if not path.is_file():
            raise ConfigError(f"workload '{request.name}': file '{params['path']}' not found")
        params["path"] = str(path.resolve())
    if request.name == "ftrace":
        spec = trace_workload(
            params["path"],
            khz=float(params.get("khz") or 0.0),
            causal=bool(params.get("causal")),
            costs=replay_costs(machine),
        )
        # results name the replayed trace, not the programs it became
        spec[REPLAY_OF] = {"name": "ftrace", "params": params}
        return spec
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


def _set_value(text: str) -> int | float | str | bool:
    """A `--set` value: `true` / `false` (any case) are booleans, as in the Python API and
    experiment files; otherwise `parse_value`."""
    if text.strip().lower() in ("true", "false"):
        return text.strip().lower() == "true"
    return parse_value(text)


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
            items.append((key.strip(), _set_value(value)))
    for key, value in items:
        if not _NAME.match(key):
            raise ConfigError(f"--set '{key}': bad key name")
        if key.startswith(_FEATURE_PREFIXES):
            name = key.split(".", 1)[1]
            if not name:
                raise ConfigError(f"--set '{key}': expected features.NAME=value")
            if isinstance(value, str):
                value = _FEATURE_VALUE_ALIASES.get((name, value), value)
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


# ---- cgroups --------------------------------------------------------------------------------

# The keys of a cgroup definition: the cgroup v2 cpu controller's files, as a user writes them.
CGROUP_KEYS = ("path", "weight", "max", "max_burst", "uclamp_min", "uclamp_max")
CPU_MAX_FORMS = (
    '"QUOTA PERIOD", "QUOTA", "max" or "max PERIOD" in µs (the cpu.max format; '
    '"QUOTA/PERIOD" also works), e.g. "50000 100000"'
)
_UINT = re.compile(r"^\d+$")
_PERCENT = re.compile(r"^\d+(?:\.\d*)?$|^\.\d+$")


def _cgroup_error(path: Any, key: str, value: Any, allowed: str) -> ConfigError:
    return ConfigError(f"cgroup '{path}': {key} = {value!r}: {allowed}")


def _uint(path: str, key: str, value: Any, allowed: str) -> int:
    """An unsigned integer as the kernel's files take it: an int, or a string of digits."""
    if isinstance(value, bool):
        raise _cgroup_error(path, key, value, allowed)
    if isinstance(value, int):
        if value < 0:
            raise _cgroup_error(path, key, value, allowed)
        return value
    if isinstance(value, str) and _UINT.match(value.strip()):
        return int(value.strip())
    raise _cgroup_error(path, key, value, allowed)


def parse_cpu_max(value: Any, path: str = "?") -> tuple[int | None, int]:
    """cpu.max → (quota_us or None for max, period_us).

    The forms of the file: "QUOTA PERIOD", "QUOTA" (the period keeps its default, 100000),
    "max" and "max PERIOD"; "QUOTA/PERIOD" is accepted too, and an integer is a quota.
    """
    quota_text: str
    period_text: str | None = None
    if isinstance(value, bool):
        raise _cgroup_error(path, "max", value, f"expected {CPU_MAX_FORMS}")
    if isinstance(value, int):
        quota_text = str(value)
    elif isinstance(value, str):
        parts = value.replace("/", " ").split()
        if "/" in value and (value.count("/") != 1 or len(parts) != 2):
            raise _cgroup_error(path, "max", value, f"expected {CPU_MAX_FORMS}")
        if not 1 <= len(parts) <= 2:
            raise _cgroup_error(path, "max", value, f"expected {CPU_MAX_FORMS}")
        quota_text = parts[0]
        period_text = parts[1] if len(parts) == 2 else None
    else:
        raise _cgroup_error(path, "max", value, f"expected {CPU_MAX_FORMS}")
    if quota_text == "max":
        quota = None
    elif _UINT.match(quota_text):
        quota = int(quota_text)
    else:
        raise _cgroup_error(
            path, "max", value, f"the quota '{quota_text}' is not a number; {CPU_MAX_FORMS}"
        )
    period = 100_000
    if period_text is not None:
        if not _UINT.match(period_text):
            raise _cgroup_error(
                path, "max", value, f"the period '{period_text}' is not a number; {CPU_MAX_FORMS}"
            )
        period = int(period_text)
    lo, hi = CFS_PERIOD_US_RANGE
    if not lo <= period <= hi:
        raise _cgroup_error(path, "max", value, f"the period must be {lo}..{hi} µs")
    if quota is not None and not CFS_QUOTA_US_MIN <= quota <= MAX_CFS_RUNTIME_US:
        raise _cgroup_error(
            path,
            "max",
            value,
            f"the quota must be {CFS_QUOTA_US_MIN}..{MAX_CFS_RUNTIME_US} µs or max",
        )
    return quota, period


def parse_uclamp(value: Any, path: str = "?", key: str = "uclamp_min") -> float:
    """cpu.uclamp.min / cpu.uclamp.max: "max" or a percentage 0..100, kept to two decimals as
    the kernel does (cgroup_parse_float with UCLAMP_PERCENT_SHIFT)."""
    allowed = 'expected "max" or a percentage 0..100 (e.g. 20 or 12.5)'
    if isinstance(value, bool):
        raise _cgroup_error(path, key, value, allowed)
    if isinstance(value, str):
        text = value.strip()
        if text == "max":
            return 100.0
        if not _PERCENT.match(text):
            raise _cgroup_error(path, key, value, allowed)
        pct = float(text)
    elif isinstance(value, int | float):
        pct = float(value)
    else:
        raise _cgroup_error(path, key, value, allowed)
    if not (math.isfinite(pct) and 0.0 <= pct <= 100.0):
        raise _cgroup_error(path, key, value, allowed)
    return round(pct, 2)


def parse_cgroup(entry: Mapping[str, Any], path: str | None = None) -> dict[str, Any]:
    """One cgroup definition in the cgroup v2 file syntax → the core's CgroupSpec dict.

    Keys (all optional but `path`): `weight` (cpu.weight, 1..10000), `max` (cpu.max, see
    `parse_cpu_max`), `max_burst` (cpu.max.burst, µs), `uclamp_min` and `uclamp_max`
    (cpu.uclamp.*, "max" or percent). `path` may instead come from a mapping's key.
    """
    if not isinstance(entry, Mapping):
        name = "" if path is None else f" '{path}'"
        raise ConfigError(
            f"cgroup{name}: expected a table with keys {', '.join(CGROUP_KEYS)}, got {entry!r}"
        )
    given = entry.get("path", path)
    if path is not None and "path" in entry and entry["path"] != path:
        raise ConfigError(f"cgroup '{path}': path = {entry['path']!r} differs from its name")
    if given is None:
        raise ConfigError(f'cgroup {dict(entry)!r}: missing path (e.g. path = "cg1")')
    why = check_cgroup_path(given)
    if why is not None:
        raise ConfigError(f"cgroup path {given!r}: {why}")
    p: str = given
    for key in entry:
        if key not in CGROUP_KEYS:
            raise ConfigError(
                f"cgroup '{p}': unknown key '{key}'; allowed: {', '.join(CGROUP_KEYS)}"
            )
    spec: dict[str, Any] = {"path": p}
    if "weight" in entry:
        lo, hi = CPU_WEIGHT_RANGE
        weight = _uint(p, "weight", entry["weight"], f"cpu.weight allows {lo}..{hi}")
        if not lo <= weight <= hi:
            raise _cgroup_error(p, "weight", entry["weight"], f"cpu.weight allows {lo}..{hi}")
        spec["weight"] = weight
    quota: int | None = None
    if "max" in entry:
        quota, period = parse_cpu_max(entry["max"], p)
        spec["quota_us"] = quota
        spec["period_us"] = period
    if "max_burst" in entry:
        burst_allowed = (
            "cpu.max.burst needs a quota (max is unlimited); allowed: 0"
            if quota is None
            else f"allowed 0..{quota} µs (at most the quota)"
        )
        burst = _uint(p, "max_burst", entry["max_burst"], burst_allowed)
        if burst > 0 and (quota is None or burst > quota):
            raise _cgroup_error(p, "max_burst", entry["max_burst"], burst_allowed)
        if quota is not None and quota + burst > MAX_CFS_RUNTIME_US:
            raise _cgroup_error(
                p, "max_burst", entry["max_burst"], f"quota + burst above {MAX_CFS_RUNTIME_US} µs"
            )
        spec["burst_us"] = burst
    for key in ("uclamp_min", "uclamp_max"):
        if key in entry:
            spec[key] = parse_uclamp(entry[key], p, key)
    lo_pct, hi_pct = spec.get("uclamp_min", 0.0), spec.get("uclamp_max", 100.0)
    if lo_pct > hi_pct:
        raise ConfigError(
            f"cgroup '{p}': uclamp_min = {lo_pct:g} is above uclamp_max = {hi_pct:g}; "
            "allowed: uclamp_min <= uclamp_max"
        )
    try:
        return CgroupSpec.model_validate(spec).model_dump(mode="json")
    except ValidationError as err:
        raise ConfigError(format_validation_error(err)) from None


def parse_cgroup_option(text: str) -> dict[str, Any]:
    """The CLI form `PATH[:key=value[,key=value...]]`, e.g. `cg1:max=50000/100000,weight=200`,
    → a cgroup definition in file syntax (for `parse_cgroup`)."""
    forms = "expected PATH[:key=value,...], e.g. cg1:max=50000/100000,weight=200"
    if not isinstance(text, str) or not text.strip():
        raise ConfigError(f"--cgroup: empty; {forms}")
    path, sep, rest = text.strip().partition(":")
    path = path.strip()
    entry: dict[str, Any] = {"path": path}
    if sep and not rest.strip():
        raise ConfigError(f"--cgroup '{text}': nothing after ':'; {forms}")
    if rest.strip():
        for item in rest.split(","):
            key, eq, value = item.partition("=")
            key = key.strip()
            if not eq or not key or not value.strip():
                raise ConfigError(f"--cgroup '{text}': bad setting '{item.strip()}'; {forms}")
            if key == "path" or key not in CGROUP_KEYS:
                allowed = ", ".join(k for k in CGROUP_KEYS if k != "path")
                raise ConfigError(f"--cgroup '{text}': unknown key '{key}'; allowed: {allowed}")
            if key in entry:
                raise ConfigError(f"--cgroup '{text}': '{key}' given twice")
            entry[key] = value.strip()
    return entry


def parse_cgroups(
    cgroups: Iterable[Mapping[str, Any] | str] | Mapping[str, Mapping[str, Any]] | None,
) -> list[dict[str, Any]]:
    """Cgroup definitions → the core's CgroupSpec dicts, in order.

    `cgroups` is a list of definitions (tables with `path`, or CLI strings
    `PATH[:key=value,...]`), or a mapping of path → definition. Parents must come before their
    children; a path defined twice is an error.
    """
    if cgroups is None:
        return []
    items: list[tuple[str | None, Any]]
    if isinstance(cgroups, Mapping):
        items = [(str(k), v) for k, v in cgroups.items()]
    elif isinstance(cgroups, str):
        items = [(None, parse_cgroup_option(cgroups))]
    else:
        items = [(None, parse_cgroup_option(c) if isinstance(c, str) else c) for c in cgroups]
    out: list[dict[str, Any]] = []
    known: list[str] = []
    for path, entry in items:
        spec = parse_cgroup(entry, path)
        p = spec["path"]
        if p in known:
            raise ConfigError(f"cgroup '{p}' is defined twice")
        parent, sep, _ = p.rpartition("/")
        if sep and parent not in known:
            later = any(
                (k if k is not None else (e.get("path") if isinstance(e, Mapping) else None))
                == parent
                for k, e in items
            )
            raise ConfigError(
                f"cgroup '{p}': its parent '{parent}' "
                + ("must be defined before it" if later else "is not defined; define it first")
            )
        known.append(p)
        out.append(spec)
    return out


def check_run_in(run_in: Iterable[str] | None, cgroups: list[dict[str, Any]]) -> list[str]:
    """The cgroups to run one copy of the workload in: each must be a defined path."""
    if run_in is None:
        return []
    if isinstance(run_in, str):
        run_in = [run_in]
    known = [g["path"] for g in cgroups]
    defined = ", ".join(known) if known else "none (define them with --cgroup / cgroups)"
    out: list[str] = []
    for name in run_in:
        if not isinstance(name, str) or name not in known:
            raise ConfigError(
                f"--in-cgroup/run_in {name!r}: not a defined cgroup; defined: {defined}"
            )
        if name in out:
            raise ConfigError(f"--in-cgroup/run_in '{name}': listed twice")
        out.append(name)
    return out


# ---- the whole run --------------------------------------------------------------------------

_U64_MAX = 2**64 - 1


TRACE_FORMATS = ("ftrace", "perfetto", "chrome")


def parse_trace_format(trace: bool | str | None) -> str | None:
    """`trace` as `build_config` takes it → the trace format, None for no trace."""
    if trace is None or trace is False:
        return None
    if trace is True:
        return "ftrace"
    if isinstance(trace, str) and trace in TRACE_FORMATS:
        return trace
    raise ConfigError(
        f"trace {trace!r}: expected True, False or a trace format ({', '.join(TRACE_FORMATS)})"
    )


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
    trace: bool | str = False,
    sample_interval: str | int | None = None,
    cgroups: Iterable[Mapping[str, Any] | str] | Mapping[str, Mapping[str, Any]] | None = None,
    run_in: Iterable[str] | None = None,
) -> dict[str, Any]:
    """Validate user input and build the `SimConfig` dict for `_core.run`.

    `machine` is a preset name, a path to a preset TOML or a loaded Machine; `workload` the
    workload string (`periodic:tasks=4`) or a WorkloadSpec mapping (`{"name": "custom", ...}`);
    `sets` the `--set key=value` pairs; `duration`/`sample_interval` like `500ms` or ns.
    `trace`: record a trace, as ftrace text (`True` or `"ftrace"`), Perfetto protobuf
    (`"perfetto"`) or Chrome JSON (`"chrome"`).
    `cgroups` defines cgroup v2 groups in the files' syntax (`parse_cgroups`:
    `[{"path": "cg1", "max": "50000 100000", "weight": 200}]`) and `run_in` lists the groups
    to run one copy of the workload in (none: one copy in the root group).
    """
    trace_format = parse_trace_format(trace)
    duration_ns = None if duration is None else parse_duration(duration)
    if duration_ns == 0:
        raise ConfigError("duration 0: must be positive")
    sample_ns = 0 if sample_interval is None else parse_duration(sample_interval)
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= _U64_MAX:
        raise ConfigError(f"seed {seed!r}: expected an integer 0..2^64-1")
    examples = {"driver": "intel_cpufreq", "governor": "schedutil", "invariance": "turbo:4"}
    for key, value in (("driver", driver), ("governor", governor), ("invariance", invariance)):
        if value is not None and not isinstance(value, str):
            raise ConfigError(f"{key} {value!r}: expected a string (for example '{examples[key]}')")
    m = machine if isinstance(machine, Machine) else load_machine(machine)
    kernel = DEFAULT_KERNEL if kernel is None else str(kernel).strip()
    cpufreq = resolve_cpufreq(m, kernel, driver, governor, invariance)
    settings = parse_sets(sets)
    spec = resolve_workload(workload, m)
    cgroup_specs = parse_cgroups(cgroups)
    groups = check_run_in(run_in, cgroup_specs)
    if groups:
        spec["cgroups"] = groups
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
        "trace": trace_format is not None,
        "trace_format": trace_format or "ftrace",  # the default is left out of the core's JSON
        "sample_interval_ns": sample_ns,
        "tunables": settings.tunables,
        "cgroups": cgroup_specs,
    }
    if spec.get("custom") is not None:
        try:
            why = check_cgroup_refs(
                [CgroupSpec.model_validate(g) for g in cgroup_specs],
                WorkloadSpec.model_validate(spec),
            )
        except ValidationError as err:
            raise ConfigError(f"config: {format_validation_error(err)}") from None
        if why is not None:
            raise ConfigError(why)
    try:
        return SimConfig.model_validate(config).to_json_dict()
    except ValidationError as err:
        raise ConfigError(f"config: {format_validation_error(err)}") from None
