"""Experiment files (TOML): configs × benchmarks × parameter values × repeats on one or more
machines, compared MMTests-style (docs/compare.md).

    >>> exp = schedsim.Experiment.from_toml("experiments/quick.toml")
    >>> res = exp.run(jobs=2, out="out/quick")
    >>> res.runs            # pandas, one row per run
    >>> print(res.text())   # the MMTests tables
    >>> res.report("out/quick")

Everything is checked when the file is loaded, before anything runs: unknown keys and bad values
are errors naming the file, the key and the allowed values, every run's SimConfig is built, and
the compiled core checks them as it would before a run (docs/compare.md).
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
import re
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import UnionType
from typing import TYPE_CHECKING, Any, Literal, Union, get_args, get_origin

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    ValidationError,
    field_validator,
)

from .config import (
    DEFAULT_KERNEL,
    HZ_VALUES,
    build_config,
    check_run_in,
    parse_cgroup,
    parse_cgroups,
    parse_kernel_version,
    parse_sets,
    resolve_cpufreq,
    resolve_workload,
    workload_catalog,
)
from .errors import ConfigError
from .machines import Machine, list_machines, load_machine
from .native import check_config, core_check, model_fingerprint
from .report import stats as st
from .report.stats import SUMMARY_TYPES
from .results import cgroup_metric
from .sweep.stride import PATTERNS, Topology, stride_range
from .units import DURATION_FORMS, parse_duration

if TYPE_CHECKING:
    from .compare import ExperimentResult

FORMAT_VERSION = 1  # part of every run key: bump when the meaning of a stored run changes

Scalar = StrictBool | StrictInt | StrictFloat | StrictStr

# MMTests' summary type and decimal places per benchmark (shellpack_src/src/*/shellpack.yaml);
# anything else is Multiops with 2 decimals.
MMTESTS_SUMMARY = {
    "dbench": ("NormalisedLeftSkewops", 4),
    "tbench": ("NormalisedLeftSkewops", 4),
    "hackbench": ("Multiops", 4),
    "schbench": ("Normalisedops", 2),
}
# Before fa1c230f (2026-04) dbench and tbench were summarised as Normalisedops.
MMTESTS_SUMMARY_LEGACY = {"dbench": "Normalisedops", "tbench": "Normalisedops"}

_PLACEHOLDER = re.compile(r"<[A-Z]+>")

# Higher-is-better metrics that may be zero or negative, summarised with Amean (an Hmean of
# them is undefined): the workloads' mean slack.
SIGNED_METRICS = frozenset({"slack_us_mean"})


def _reported_pattern(metric: str, reported: list[str]) -> str | None:
    """The templated name among a workload's metrics (`task.<TASK>.<METRIC>`) that `metric`
    instantiates: `<METRIC>` stands for one of the workload's plain metric names, any other
    `<...>` for one non-empty dot-free name (a task, a phase). None if none does."""
    plain = "|".join(re.escape(n) for n in reported if n and "<" not in n)
    for name in reported:
        if not name or "<" not in name:
            continue
        texts = _PLACEHOLDER.split(name)
        holes = [
            f"(?:{plain})" if h == "<METRIC>" else r"[^.]+" for h in _PLACEHOLDER.findall(name)
        ]
        regex = re.escape(texts[0]) + "".join(
            h + re.escape(t) for h, t in zip(holes, texts[1:], strict=True)
        )
        if re.fullmatch(regex, metric):
            return name
    return None


_CPUS_EXPR = re.compile(r"^cpus(?:\s*\*\s*(\d+))?$")


# ---- the file's schema ---------------------------------------------------------------------


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ExperimentSection(_Strict):
    name: str = Field(min_length=1)
    description: str = ""
    repeats: int = Field(3, ge=1, le=10_000)
    seed: int = Field(1, ge=0, le=2**63 - 1)
    significance: Literal["ci", "ttest"] = "ci"
    labels: Literal["current", "legacy"] = "current"
    sample_interval: str = "100ms"


class MachineEntry(_Strict):
    preset: str
    name: str | None = None
    overrides: dict[str, Any] = {}


class CgroupEntry(_Strict):
    """A cgroup v2 group in the files' syntax (config.parse_cgroup checks the values)."""

    path: str
    weight: Any = None
    max: Any = None
    max_burst: Any = None
    uclamp_min: Any = None
    uclamp_max: Any = None

    def definition(self) -> dict[str, Any]:
        """The keys the file gave, for `config.parse_cgroup`."""
        return self.model_dump(exclude_unset=True)


def _kernel_string(value: Any) -> Any:
    if isinstance(value, int | float) and not isinstance(value, bool):
        raise ValueError(
            f'{value} is a TOML number: write the version as a string, e.g. kernel = "5.10" '
            "(a number loses trailing zeros: 5.10 reads as 5.1)"
        )
    return value


class ConfigEntry(_Strict):
    name: str = Field(min_length=1)
    description: str = ""
    kernel: str | None = None
    driver: str | None = None
    governor: str | None = None
    invariance: str | None = None
    hz: int | None = None
    tunables: dict[str, Scalar] = {}
    features: dict[str, Scalar] = {}
    machine: dict[str, Any] = {}
    cgroups: list[CgroupEntry] = []

    _kernel = field_validator("kernel", mode="before")(_kernel_string)


class StrideEntry(_Strict):
    pattern: Literal["topology", "large", "powertwo", "huge", "dbench-classic"]
    min: int = Field(1, ge=1)
    max: int | str
    cutoff: int | None = Field(None, ge=1)
    align: Literal["nodes"] | None = None


class BenchmarkEntry(_Strict):
    workload: str
    name: str | None = None
    param: str | None = None
    values: list[Scalar] | None = None
    stride: StrideEntry | None = None
    params: dict[str, Scalar] = {}
    duration: str | None = None
    repeats: int | None = Field(None, ge=1, le=10_000)
    metrics: list[str] | None = None
    prefer: dict[str, Literal["higher", "lower"]] = {}
    summarise: Literal[SUMMARY_TYPES] | None = None  # type: ignore[valid-type]
    decimals: int | None = Field(None, ge=0, le=10)
    label: str | None = None
    cgroups: list[CgroupEntry] = []
    run_in: list[StrictStr] = []


class ExperimentFile(_Strict):
    experiment: ExperimentSection
    machine: list[MachineEntry] = Field(min_length=1)
    config: list[ConfigEntry] = Field(min_length=1)
    benchmark: list[BenchmarkEntry] = Field(min_length=1)


# ---- error messages ------------------------------------------------------------------------


def _model_at(loc: tuple[Any, ...]) -> type[BaseModel] | None:
    """The model class that holds the key at `loc` (for listing the allowed keys)."""
    model: Any = ExperimentFile
    for part in loc:
        if isinstance(part, int):
            continue
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            return None
        info = model.model_fields.get(part)
        if info is None:
            return None
        model = _unwrap(info.annotation)
    return model if isinstance(model, type) and issubclass(model, BaseModel) else None


def _unwrap(annotation: Any) -> Any:
    origin = get_origin(annotation)
    if origin in (list, Union, UnionType):
        for arg in get_args(annotation):
            inner = _unwrap(arg)
            if isinstance(inner, type) and issubclass(inner, BaseModel):
                return inner
    return annotation


def _where(data: Any, loc: tuple[Any, ...]) -> str:
    """`config[2] (pstate-hwp).governor` for loc ("config", 1, "governor"): array entries are
    counted from 1, as they appear in the file, and named when they have a name."""
    out = ""
    node = data
    for part in loc:
        if isinstance(part, int):
            name = None
            if isinstance(node, list) and 0 <= part < len(node) and isinstance(node[part], dict):
                name = node[part].get("name") or node[part].get("preset") or node[part].get("path")
                if name is None and "workload" in node[part]:
                    name = node[part]["workload"]
            out += f"[{part + 1}]" + (f" ({name})" if isinstance(name, str) else "")
            node = node[part] if isinstance(node, list) and 0 <= part < len(node) else None
        else:
            out += ("." if out else "") + str(part)
            node = node.get(part) if isinstance(node, dict) else None
    return out


def _pydantic_message(data: Any, err: ValidationError) -> str:
    parts = []
    for e in err.errors():
        loc = tuple(e["loc"])
        kind = e["type"]
        if kind == "extra_forbidden":
            parent = _model_at(loc[:-1])
            allowed = ", ".join(parent.model_fields) if parent else "?"
            where = _where(data, loc[:-1])
            prefix = f"{where}: " if where else ""
            parts.append(f"{prefix}unknown key '{loc[-1]}'; allowed: {allowed}")
            continue
        where = _where(data, loc)
        if kind == "missing":
            parts.append(f"{where}: missing (required)")
        elif kind == "literal_error":
            expected = e.get("ctx", {}).get("expected", "")
            allowed = ", ".join(re.findall(r"'([^']*)'", expected)) or expected
            parts.append(f"{where}: {e['input']!r} is not allowed; allowed: {allowed}")
        else:
            msg = e["msg"].removeprefix("Value error, ")
            parts.append(f"{where}: {msg} (got {e['input']!r})")
    return "; ".join(parts)


# ---- resolved definitions ------------------------------------------------------------------


@dataclass(frozen=True)
class MachineDef:
    name: str
    preset: str
    overrides: dict[str, Any]
    machine: Machine


@dataclass(frozen=True)
class ConfigDef:
    name: str
    entry: ConfigEntry
    cgroups: tuple[dict[str, Any], ...] = ()  # the file-syntax definitions, checked

    @property
    def sets(self) -> dict[str, Any]:
        """The `--set` mapping: tunables, `features.NAME` and CONFIG_HZ."""
        out: dict[str, Any] = dict(self.entry.tunables)
        out.update({f"features.{k}": v for k, v in self.entry.features.items()})
        if self.entry.hz is not None:
            out["CONFIG_HZ"] = self.entry.hz
        return out


@dataclass(frozen=True)
class MetricDef:
    name: str
    higher_is_better: bool

    @property
    def signed(self) -> bool:
        """A slack (rt-app's, periodic's, and their per-task forms) is negative when late."""
        return self.name.rsplit(".", 1)[-1] in SIGNED_METRICS

    @property
    def mean_kind(self) -> st.MeanKind:
        return st.mean_kind(self.higher_is_better, self.signed)


@dataclass(frozen=True)
class BenchmarkDef:
    name: str
    workload: str
    param: str | None
    params: dict[str, Any]
    duration_ns: int | None
    metrics: tuple[MetricDef, ...]
    summarise: str
    decimals: int
    label: str | None
    entry: BenchmarkEntry
    values_by_machine: dict[str, list[Any]] = field(default_factory=dict)
    cgroups: tuple[dict[str, Any], ...] = ()  # the file-syntax definitions, checked
    run_in: tuple[str, ...] = ()

    def op(self, value: Any) -> str:
        """The op label: `<label>-<value>` (label defaults to the swept parameter); without a
        swept parameter, the label or the metric name."""
        if self.param is None:
            return self.label or self.metrics[0].name
        return f"{self.label or self.param}-{format_value(value)}"

    def values(self, machine: str) -> list[Any]:
        return self.values_by_machine[machine]

    def repeats(self, experiment_repeats: int) -> int:
        """The benchmark's own `repeats` if it gives one, else the experiment's."""
        return self.entry.repeats or experiment_repeats


def _point(bdef: BenchmarkDef, value: Any) -> str:
    """`clients = 8, ` for a swept benchmark's point, empty otherwise (an error's context)."""
    return "" if bdef.param is None else f"{bdef.param} = {format_value(value)}, "


def format_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


@dataclass(frozen=True, eq=False)
class RunSpec:
    """One simulation of the sweep. `key` names its result file; `sim_config` is the complete
    SimConfig handed to the core."""

    key: str
    machine: str
    config: str
    benchmark: str
    workload: str
    param: str | None
    value: Any
    op: str
    repeat: int
    seed: int
    sim_config: dict[str, Any]

    def task(self) -> dict[str, Any]:
        """What a worker needs (plain data, picklable)."""
        return {"key": self.key, "config": self.sim_config}

    def describe(self) -> str:
        return (
            f"machine {self.machine}, config {self.config}, benchmark {self.benchmark} "
            f"{self.op}, repeat {self.repeat}"
        )


def _digest(payload: Any) -> bytes:
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode()).digest()


def run_seed(experiment_seed: int, machine: str, benchmark: str, value: Any, repeat: int) -> int:
    """The seed of one run: a hash of the experiment seed and the run's (machine, benchmark,
    parameter value, repeat). Every config gets the same seed for the same point and repeat
    (common random numbers), so config differences are not seed noise; the backend and job
    count play no part."""
    digest = _digest(["schedsim-seed", experiment_seed, machine, benchmark, value, repeat])
    return int.from_bytes(digest[:8], "big") >> 1


def run_key(spec_fields: Mapping[str, Any], sim_config: Mapping[str, Any]) -> str:
    """The key of a run's result file: a hash of (machine, config, benchmark, parameter value,
    repeat, experiment seed), the complete SimConfig (so editing a config reruns it) and the
    core's model fingerprint (so a rebuilt, changed model reruns it too)."""
    payload = ["schedsim-run", FORMAT_VERSION, dict(spec_fields), sim_config]
    fingerprint = model_fingerprint()
    if fingerprint is not None:
        payload.append(fingerprint)
    return _digest(payload).hex()[:32]


def _deep_merge(base: dict[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), dict):
            out[key] = _deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def machine_topology(machine: Machine) -> Topology:
    cpus = machine.spec.cpus
    return Topology(
        cpus=len(cpus),
        smt=machine.smt,
        llcs=len({c.llc for c in cpus}),
        nodes=len({c.node for c in cpus}),
    )


# ---- the experiment ------------------------------------------------------------------------


class Experiment:
    """A validated experiment file and its plan of runs."""

    def __init__(self, model: ExperimentFile, origin: str, base_dir: Path, text: str = "") -> None:
        self.model = model
        self.origin = origin
        self.base_dir = base_dir
        self.text = text
        self._machine_cache: dict[tuple[int, int], Machine] = {}
        self.machines = self._resolve_machines()
        self.configs = self._resolve_configs()
        self.benchmarks = self._resolve_benchmarks()
        self._cgroup_cache: dict[tuple[int, int], list[dict[str, Any]]] = {}
        self.specs = self._plan()

    # ---- construction ----------------------------------------------------------------------

    @classmethod
    def from_toml(cls, path: str | Path) -> Experiment:
        """Load and check an experiment file; raises ConfigError naming the file and key."""
        p = Path(path)
        try:
            text = p.read_text(encoding="utf-8")
        except OSError as err:
            raise ConfigError(f"experiment file {p}: cannot read: {err.strerror}") from None
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as err:
            raise ConfigError(f"{p}: invalid TOML: {err}") from None
        return cls.from_dict(data, origin=str(p), base_dir=p.resolve().parent, text=text)

    @classmethod
    def from_dict(
        cls,
        data: Mapping[str, Any],
        origin: str = "<experiment>",
        base_dir: Path | None = None,
        text: str = "",
    ) -> Experiment:
        """Build from the parsed TOML (a dict of the same shape)."""
        try:
            model = ExperimentFile.model_validate(data)
        except ValidationError as err:
            raise ConfigError(f"{origin}: {_pydantic_message(data, err)}") from None
        return cls(model, origin, base_dir or Path.cwd(), text)

    def _fail(self, where: str, message: str) -> ConfigError:
        return ConfigError(f"{self.origin}: {where}: {message}")

    def _where(self, section: str, index: int, key: str | None = None) -> str:
        return _where(self.model.model_dump(), (section, index) + ((key,) if key else ()))

    def _resolve_machines(self) -> list[MachineDef]:
        out: list[MachineDef] = []
        seen: set[str] = set()
        for i, entry in enumerate(self.model.machine):
            if entry.preset not in list_machines() and not (
                entry.preset.endswith(".toml") and (self.base_dir / entry.preset).is_file()
            ):
                raise self._fail(
                    self._where("machine", i, "preset"),
                    f"unknown machine '{entry.preset}'; allowed: {', '.join(list_machines())}",
                )
            preset = entry.preset
            if preset.endswith(".toml"):
                preset = str((self.base_dir / preset).resolve())
            try:
                machine = load_machine(preset, entry.overrides or None)
            except ConfigError as err:
                raise self._fail(self._where("machine", i, "overrides"), str(err)) from None
            name = entry.name or machine.name
            if name in seen:
                raise self._fail(
                    self._where("machine", i, "name"),
                    f"machine name '{name}' used twice; give each [[machine]] its own name",
                )
            seen.add(name)
            out.append(MachineDef(name, preset, dict(entry.overrides), machine))
        return out

    def _machine_for(self, mi: int, ci: int) -> Machine:
        key = (mi, ci)
        if key not in self._machine_cache:
            mdef = self.machines[mi]
            over = self.model.config[ci].machine
            if not over:
                self._machine_cache[key] = mdef.machine
            else:
                merged = _deep_merge(mdef.overrides, over)
                try:
                    self._machine_cache[key] = load_machine(mdef.preset, merged)
                except ConfigError as err:
                    raise self._fail(self._where("config", ci, "machine"), str(err)) from None
        return self._machine_cache[key]

    def _resolve_configs(self) -> list[ConfigDef]:
        out: list[ConfigDef] = []
        seen: set[str] = set()
        for ci, entry in enumerate(self.model.config):
            if entry.name in seen:
                raise self._fail(
                    self._where("config", ci, "name"),
                    f"config name '{entry.name}' used twice; each [[config]] needs its own name",
                )
            seen.add(entry.name)
            if entry.kernel is not None:
                try:
                    parse_kernel_version(entry.kernel)
                except ConfigError as err:
                    raise self._fail(self._where("config", ci, "kernel"), str(err)) from None
            if entry.hz is not None and entry.hz not in HZ_VALUES:
                raise self._fail(
                    self._where("config", ci, "hz"),
                    f"{entry.hz} is not allowed; allowed: {', '.join(map(str, HZ_VALUES))}",
                )
            for key in ("tunables", "features"):
                for name in getattr(entry, key):
                    if key == "tunables" and (
                        name.startswith(("feature.", "features.")) or name == "CONFIG_HZ"
                    ):
                        raise self._fail(
                            self._where("config", ci, "tunables"),
                            f"'{name}' is not a tunable: use the config's "
                            f"{'hz' if name == 'CONFIG_HZ' else 'features'} key",
                        )
            cdef = ConfigDef(
                entry.name, entry, self._check_cgroup_list("config", ci, entry.cgroups)
            )
            try:
                parse_sets(cdef.sets)
            except ConfigError as err:
                raise self._fail(self._where("config", ci, "tunables"), str(err)) from None
            for mi, mdef in enumerate(self.machines):
                machine = self._machine_for(mi, ci)
                self._check_cpufreq(ci, entry, machine, mdef.name)
            out.append(cdef)
        return out

    def _check_cpufreq(self, ci: int, entry: ConfigEntry, machine: Machine, mname: str) -> None:
        """Blame the first key (driver, governor, invariance) the kernel's rules reject."""
        kernel = entry.kernel or DEFAULT_KERNEL
        steps = (
            ("driver", {"driver": entry.driver}),
            ("governor", {"driver": entry.driver, "governor": entry.governor}),
            (
                "invariance",
                {
                    "driver": entry.driver,
                    "governor": entry.governor,
                    "invariance": entry.invariance,
                },
            ),
        )
        for key, kwargs in steps:
            try:
                resolve_cpufreq(machine, kernel, **kwargs)
            except ConfigError as err:
                on = f" (on machine '{mname}')" if len(self.machines) > 1 else ""
                raise self._fail(self._where("config", ci, key), f"{err}{on}") from None

    def _check_cgroup_list(
        self, section: str, index: int, entries: list[CgroupEntry]
    ) -> tuple[dict[str, Any], ...]:
        """Check one entry's `cgroups` on their own: each definition's keys and values, and no
        path twice. Parents may come from the config when the list is a benchmark's, so they
        are checked on the merged lists (`_cgroups_for`)."""
        out: list[dict[str, Any]] = []
        seen: set[str] = set()
        for gi, g in enumerate(entries):
            where = f"{self._where(section, index, 'cgroups')}[{gi + 1}] ({g.path})"
            definition = g.definition()
            try:
                parse_cgroup(definition)
            except ConfigError as err:
                raise self._fail(where, str(err)) from None
            if g.path in seen:
                raise self._fail(where, f"cgroup '{g.path}' is defined twice")
            seen.add(g.path)
            out.append(definition)
        return tuple(out)

    def _cgroups_for(self, ci: int, bi: int) -> list[dict[str, Any]]:
        """The cgroups of config `ci` running benchmark `bi`: the config's, then the
        benchmark's (a path in both is an error), checked with the benchmark's `run_in` and
        its per-cgroup metrics."""
        key = (ci, bi)
        if key in self._cgroup_cache:
            return self._cgroup_cache[key]
        cdef, bdef = self.configs[ci], self.benchmarks[bi]
        cwhere = self._where("config", ci, "cgroups")
        bwhere = self._where("benchmark", bi, "cgroups")
        in_config = {g["path"] for g in cdef.cgroups}
        for g in bdef.cgroups:
            if g["path"] in in_config:
                raise self._fail(
                    f"{cwhere} and {bwhere}",
                    f"both define cgroup '{g['path']}'; define it in one of them",
                )
        merged = [*cdef.cgroups, *bdef.cgroups]
        try:
            specs = parse_cgroups(merged)
        except ConfigError as err:
            raise self._fail(f"{self._where('config', ci)} × {bwhere}", str(err)) from None
        try:
            check_run_in(bdef.run_in, specs)
        except ConfigError as err:
            on = f" (with {self._where('config', ci)})" if cdef.cgroups else ""
            message = str(err).replace("--in-cgroup/run_in ", "")
            raise self._fail(self._where("benchmark", bi, "run_in"), message + on) from None
        paths = [g["path"] for g in specs]
        for metric in bdef.metrics:
            stat = cgroup_metric(metric.name)
            if stat is not None and stat[0] not in paths:
                raise self._fail(
                    self._where("benchmark", bi, "metrics"),
                    f"metric '{metric.name}': cgroup '{stat[0]}' is not defined for "
                    f"{self._where('config', ci)}; defined: {', '.join(paths) or 'none'}",
                )
        self._cgroup_cache[key] = merged
        return merged

    def _resolve_benchmarks(self) -> list[BenchmarkDef]:
        catalog = workload_catalog()
        named = sorted(n for n in catalog if n != "custom")
        out: list[BenchmarkDef] = []
        seen: set[str] = set()
        for bi, entry in enumerate(self.model.benchmark):

            def where(key: str | None = None, bi: int = bi) -> str:
                return self._where("benchmark", bi, key)

            if entry.workload not in catalog or entry.workload == "custom":
                raise self._fail(
                    where("workload"),
                    f"unknown workload '{entry.workload}'; allowed: {', '.join(named)}",
                )
            info = catalog[entry.workload]
            declared = [p["name"] for p in info.get("params", [])]
            name = entry.name or entry.workload
            if name in seen:
                raise self._fail(
                    where("name"),
                    f"benchmark name '{name}' used twice; give each [[benchmark]] a name",
                )
            seen.add(name)
            for key in entry.params:
                if key not in declared:
                    raise self._fail(
                        where("params"),
                        f"unknown parameter '{key}' of workload '{entry.workload}'; allowed: "
                        f"{', '.join(declared) or 'none'}",
                    )
            params = dict(entry.params)
            if entry.workload in ("rt-app", "ftrace") and isinstance(params.get("path"), str):
                params["path"] = str((self.base_dir / params["path"]).expanduser())
            param = entry.param
            if param is not None:
                if param not in declared:
                    raise self._fail(
                        where("param"),
                        f"'{param}' is not a parameter of workload '{entry.workload}'; "
                        f"allowed: {', '.join(declared) or 'none'}",
                    )
                if param in params:
                    raise self._fail(
                        where("params"),
                        f"'{param}' is the swept parameter (param); remove it from params",
                    )
                if (entry.values is None) == (entry.stride is None):
                    raise self._fail(
                        where("values"),
                        "give either values = [...] or stride = {pattern, min, max} for "
                        f"param '{param}'",
                    )
                if entry.values is not None and not entry.values:
                    raise self._fail(where("values"), "empty; list at least one value")
            elif entry.values is not None or entry.stride is not None:
                raise self._fail(
                    where("param"), "values/stride given without param = NAME (the swept one)"
                )
            duration_ns = None
            if entry.duration is not None:
                try:
                    duration_ns = parse_duration(entry.duration)
                except ConfigError:
                    raise self._fail(
                        where("duration"), f"'{entry.duration}': expected {DURATION_FORMS}"
                    ) from None
                if duration_ns == 0:
                    raise self._fail(where("duration"), "must be positive")
            elif info.get("open_ended"):
                raise self._fail(
                    where("duration"),
                    f"workload '{entry.workload}' is open-ended: give a duration, e.g. "
                    'duration = "2s"',
                )
            metrics = self._resolve_metrics(entry, info, where)
            cgroups = self._check_cgroup_list("benchmark", bi, entry.cgroups)
            summarise, decimals = MMTESTS_SUMMARY.get(entry.workload, ("Multiops", 2))
            if self.model.experiment.labels == "legacy":
                summarise = MMTESTS_SUMMARY_LEGACY.get(entry.workload, summarise)
            bdef = BenchmarkDef(
                name=name,
                workload=entry.workload,
                param=param,
                params=params,
                duration_ns=duration_ns,
                metrics=metrics,
                summarise=entry.summarise or summarise,
                decimals=decimals if entry.decimals is None else entry.decimals,
                label=entry.label,
                entry=entry,
                cgroups=cgroups,
                run_in=tuple(entry.run_in),
            )
            for mdef in self.machines:
                bdef.values_by_machine[mdef.name] = self._values(bdef, mdef, where)
            out.append(bdef)
        return out

    def _resolve_metrics(
        self, entry: BenchmarkEntry, info: Mapping[str, Any], where: Callable[..., str]
    ) -> tuple[MetricDef, ...]:
        reported = [m if isinstance(m, str) else m.get("name") for m in info.get("metrics", [])]
        directions: dict[str, bool] = {}
        for m in info.get("metrics", []):
            if isinstance(m, Mapping) and "higher_is_better" in m:
                directions[m["name"]] = bool(m["higher_is_better"])
        primary = info.get("primary")
        primary_name = primary if isinstance(primary, str) else (primary or {}).get("name")
        if primary_name and "higher_is_better" in info:
            directions.setdefault(primary_name, bool(info["higher_is_better"]))
        if entry.metrics is not None and not entry.metrics:
            raise self._fail(
                where("metrics"),
                "empty; list at least one metric, or leave the key out for the workload's "
                f"primary ({primary_name})",
            )
        names = entry.metrics if entry.metrics is not None else [primary_name]
        if not names or names[0] is None:
            raise self._fail(where("metrics"), "the workload names no primary metric; list some")
        for key in entry.prefer:
            if key not in names:
                raise self._fail(
                    where("prefer"),
                    f"'{key}' is not one of this benchmark's metrics ({', '.join(names)})",
                )
        out = []
        for metric in names:
            stat = cgroup_metric(metric)
            if stat is not None and metric not in reported:
                # a cgroup's cpu.stat field: `cg_<path>_<field>`; the path is checked against
                # each config's cgroups when the plan is made
                if metric in entry.prefer:
                    higher = entry.prefer[metric] == "higher"
                elif stat[1] in ("nr_throttled", "throttled_usec"):
                    higher = False
                else:
                    raise self._fail(
                        where("prefer"),
                        f"metric '{metric}': say whether higher or lower is better, "
                        f'prefer = {{ "{metric}" = "lower" }}; allowed: higher, lower',
                    )
                out.append(MetricDef(metric, higher))
                continue
            pattern = _reported_pattern(metric, reported)
            if metric not in reported and metric != primary_name and pattern is None:
                raise self._fail(
                    where("metrics"),
                    f"workload '{entry.workload}' reports no metric '{metric}'; allowed: "
                    f"{', '.join(reported)}, or a cgroup's cpu.stat field as "
                    "cg_<path>_<field> (cg_cg1_throttled_usec)",
                )
            base = metric.rsplit(".", 1)[-1] if pattern is not None else metric
            if metric in entry.prefer:
                higher = entry.prefer[metric] == "higher"
            elif base in directions:
                higher = directions[base]
            else:
                raise self._fail(
                    where("prefer"),
                    f"metric '{metric}': say whether higher or lower is better, "
                    f'prefer = {{ "{metric}" = "lower" }}; allowed: higher, lower',
                )
            out.append(MetricDef(metric, higher))
        return tuple(out)

    def _values(self, bdef: BenchmarkDef, mdef: MachineDef, where: Callable[..., str]) -> list:
        entry = bdef.entry
        if bdef.param is None:
            return [None]
        if entry.values is not None:
            values = list(entry.values)
        else:
            stride = entry.stride
            assert stride is not None
            topo = machine_topology(mdef.machine)
            maximum = stride.max
            if isinstance(maximum, str):
                m = _CPUS_EXPR.match(maximum.strip())
                if not m:
                    raise self._fail(
                        where("stride") + ".max",
                        f"'{maximum}': expected an integer or cpus, cpus*N (N an integer)",
                    )
                maximum = topo.cpus * int(m.group(1) or 1)
            if maximum < 1:
                raise self._fail(where("stride") + ".max", "must be at least 1")
            values = stride_range(
                stride.pattern, stride.min, maximum, topo, stride.cutoff, stride.align
            )
            if not values:
                raise self._fail(
                    where("stride"),
                    f"pattern '{stride.pattern}' from {stride.min} to {maximum} gives no values "
                    f"({', '.join(PATTERNS)} need min <= max)",
                )
        resolved = []
        for value in values:
            try:
                spec = resolve_workload(
                    {"name": bdef.workload, "params": {**bdef.params, bdef.param: value}}
                )
            except ConfigError as err:
                raise self._fail(where("values"), str(err)) from None
            # (a trace replay becomes a custom workload, without parameters)
            resolved.append(spec["params"].get(bdef.param, value))
        ops = [bdef.op(v) for v in resolved]
        if len(set(ops)) != len(ops):
            raise self._fail(where("values"), f"values repeat: {', '.join(ops)}")
        return resolved

    def _plan(self) -> list[RunSpec]:
        exp = self.model.experiment
        try:
            sample_ns = parse_duration(exp.sample_interval)
        except ConfigError:
            raise self._fail(
                "experiment.sample_interval", f"'{exp.sample_interval}': expected {DURATION_FORMS}"
            ) from None
        first_checks = self._adopt_core_primaries(sample_ns)
        specs: list[RunSpec] = []
        for mi, mdef in enumerate(self.machines):
            for ci, cdef in enumerate(self.configs):
                for bi, bdef in enumerate(self.benchmarks):
                    for vi, value in enumerate(bdef.values(mdef.name)):
                        base = self._base_config(mi, ci, bi, value, sample_ns)
                        # the core's own checks, without running: every config at each
                        # benchmark's first point, every point with the first config (the
                        # repeats differ only in their seed)
                        if (mi, ci, vi) == (0, 0, 0) and bi in first_checks:
                            problem = first_checks[bi]
                        else:
                            problem = check_config(base) if vi == 0 or ci == 0 else None
                        if problem is not None:
                            raise self._fail(
                                f"{self._where('config', ci)} × {self._where('benchmark', bi)}"
                                f" ({_point(bdef, value)}machine {mdef.name})",
                                problem,
                            )
                        for repeat in range(1, bdef.repeats(exp.repeats) + 1):
                            seed = run_seed(exp.seed, mdef.name, bdef.name, value, repeat)
                            sim = dict(base)
                            sim["seed"] = seed
                            fields = {
                                "machine": mdef.name,
                                "config": cdef.name,
                                "benchmark": bdef.name,
                                "param": bdef.param,
                                "value": value,
                                "repeat": repeat,
                                "experiment_seed": exp.seed,
                            }
                            specs.append(
                                RunSpec(
                                    key=run_key(fields, sim),
                                    machine=mdef.name,
                                    config=cdef.name,
                                    benchmark=bdef.name,
                                    workload=bdef.workload,
                                    param=bdef.param,
                                    value=value,
                                    op=bdef.op(value),
                                    repeat=repeat,
                                    seed=seed,
                                    sim_config=sim,
                                )
                            )
        return specs

    def _base_config(self, mi: int, ci: int, bi: int, value: Any, sample_ns: int) -> dict[str, Any]:
        """The SimConfig of one point (seed 0; each repeat sets its own)."""
        cdef, bdef = self.configs[ci], self.benchmarks[bi]
        cgroups = self._cgroups_for(ci, bi)  # its own errors name the benchmark's key
        params = dict(bdef.params)
        if bdef.param is not None:
            params[bdef.param] = value
        try:
            return build_config(
                self._machine_for(mi, ci),
                {"name": bdef.workload, "params": params},
                kernel=cdef.entry.kernel,
                driver=cdef.entry.driver,
                governor=cdef.entry.governor,
                invariance=cdef.entry.invariance,
                sets=cdef.sets,
                seed=0,
                duration=bdef.duration_ns,
                sample_interval=sample_ns,
                cgroups=cgroups,
                run_in=bdef.run_in,
            )
        except ConfigError as err:
            raise self._fail(
                f"{self._where('config', ci)} × {self._where('benchmark', bi)}", str(err)
            ) from None

    def _adopt_core_primaries(self, sample_ns: int) -> dict[int, str | None]:
        """A benchmark that lists no metrics is judged by its workload's primary metric. The
        catalogue names the generator's usual one; the configured workload may report another
        (schbench's `version = "old"`, an rt-app file without timers), so the core is asked,
        with the first machine, config and point. Returns the core's objection (or None) to
        each benchmark's config checked here, so that the plan does not check it twice."""
        checked: dict[int, str | None] = {}
        if not self.machines or not self.configs:
            return checked
        for bi, bdef in enumerate(self.benchmarks):
            values = bdef.values(self.machines[0].name)
            if bdef.entry.metrics is not None or not values:
                continue
            problem, out = core_check(self._base_config(0, 0, bi, values[0], sample_ns))
            checked[bi] = problem
            primary = (out or {}).get("primary")
            if problem is not None or not primary:
                continue
            metric = MetricDef(str(primary["name"]), bool(primary["higher_is_better"]))
            if metric != bdef.metrics[0]:
                self.benchmarks[bi] = dataclasses.replace(bdef, metrics=(metric,))
        return checked

    # ---- accessors -------------------------------------------------------------------------

    @property
    def name(self) -> str:
        return self.model.experiment.name

    @property
    def description(self) -> str:
        return self.model.experiment.description

    @property
    def repeats(self) -> int:
        return self.model.experiment.repeats

    @property
    def seed(self) -> int:
        return self.model.experiment.seed

    @property
    def significance(self) -> Literal["ci", "ttest"]:
        return self.model.experiment.significance

    @property
    def labels(self) -> Literal["current", "legacy"]:
        return self.model.experiment.labels

    @property
    def config_names(self) -> list[str]:
        return [c.name for c in self.configs]

    def benchmark(self, name: str) -> BenchmarkDef:
        for b in self.benchmarks:
            if b.name == name:
                return b
        raise KeyError(name)

    def __repr__(self) -> str:
        return (
            f"Experiment({self.name!r}: {len(self.machines)} machine(s), {len(self.configs)} "
            f"config(s), {len(self.benchmarks)} benchmark(s), {len(self.specs)} runs)"
        )

    # ---- running ---------------------------------------------------------------------------

    def run(
        self,
        backend: str = "local",
        jobs: int | None = None,
        out: str | Path | None = None,
        *,
        address: str | None = None,
        progress: bool | Callable[[int, int, int], None] = False,
    ) -> ExperimentResult:
        """Run every run of the plan (those already stored under `out` are loaded instead) and
        return the result. `backend` is local (a process pool of `jobs` workers, default the
        CPU count; jobs=1 runs in this process), dask or ray (`address` of a running cluster,
        else a local one). `progress` shows a rich progress bar (True) or is called as
        progress(done, total, loaded) after every run."""
        from .compare import run_experiment

        return run_experiment(
            self, backend=backend, jobs=jobs, out=out, address=address, progress=progress
        )
