"""The compact machine preset format (TOML) and its expansion into the core's MachineSpec.

The format is described in docs/machines.md and at the top of every preset file. In short:
`[topology]` says how many packages, NUMA nodes per package and SMT threads there are, lists the
clusters of each node (`[[topology.clusters]]`: core type, number of cores, which LLC of the node
they share), how Linux numbers the CPUs and how wide a frequency domain is; `[core_types.NAME]`,
`[opp_tables.NAME]` and `[[idle_states.NAME]]` describe the parts; `[[package_idle_states]]` the
package (Intel PC-states) or cluster-wide (Arm cluster-off) idle states; `[hwp]` the HWP
capabilities and the parameters of the autonomous-selection stand-in; `[storage]` the storage
device's fsync time; `[power]` the power model and the package power limits. Expansion lists
every CPU with its global core, cluster, LLC, node, package, core-type and frequency-domain
indices.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    NonNegativeFloat,
    NonNegativeInt,
    PositiveFloat,
    PositiveInt,
    ValidationError,
    model_validator,
)

from ..errors import ConfigError
from ..spec import (
    CoreTypeSpec,
    CpuSpec,
    FreqDomainSpec,
    HwpSpec,
    IdleStateSpec,
    MachineSpec,
    OppSpec,
    PackageIdleStateSpec,
    PowerSpec,
    StorageSpec,
)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PresetMachine(_Strict):
    name: str
    description: str = ""
    arch: Literal["x86", "arm64", "power"]
    vendor: str
    model: str
    hwp: bool = False
    cpufreq_driver: str | None = None
    tsc_khz: PositiveInt


class PresetCluster(_Strict):
    core_type: str
    cores: PositiveInt
    llc: NonNegativeInt = 0


class PresetTopology(_Strict):
    packages: PositiveInt = 1
    nodes_per_package: PositiveInt = 1
    smt: PositiveInt = 1
    cpu_numbering: Literal["thread-major", "core-major", "explicit"]
    # With cpu_numbering = "explicit": the Linux CPU number of every hardware thread, listed in
    # core-major order (package, node, cluster entry, core, thread).
    cpu_ids: list[NonNegativeInt] | None = None
    freq_domain: Literal["thread", "core", "cluster", "package"]
    freq_coordination: Literal["max-active", "max"] = "max-active"
    clusters: list[PresetCluster]
    numa_distance: list[list[NonNegativeInt]] = []

    @model_validator(mode="after")
    def _check(self) -> PresetTopology:
        if not self.clusters:
            raise ValueError("at least one [[topology.clusters]] entry is required")
        if self.cpu_numbering == "explicit":
            nodes = self.packages * self.nodes_per_package
            ncpus = nodes * sum(c.cores for c in self.clusters) * self.smt
            if self.cpu_ids is None:
                raise ValueError("topology.cpu_numbering = 'explicit' needs topology.cpu_ids")
            if sorted(self.cpu_ids) != list(range(ncpus)):
                raise ValueError(
                    f"topology.cpu_ids must list each of the {ncpus} CPU numbers 0..{ncpus - 1} "
                    "exactly once"
                )
        elif self.cpu_ids is not None:
            raise ValueError("topology.cpu_ids needs topology.cpu_numbering = 'explicit'")
        nodes = self.packages * self.nodes_per_package
        if nodes > 1:
            if len(self.numa_distance) != nodes or any(len(r) != nodes for r in self.numa_distance):
                raise ValueError(f"numa_distance must be a {nodes}x{nodes} matrix ({nodes} nodes)")
        elif self.numa_distance not in ([], [[10]]):
            raise ValueError("numa_distance must be empty or [[10]] on a single-node machine")
        return self


class PresetCoreType(_Strict):
    description: str = ""
    capacity_dmips_mhz: PositiveInt
    dynamic_power_coefficient: PositiveFloat | None = None
    smt_share: list[PositiveFloat] = []
    kernel_cycles: dict[str, float] = {}
    opp_table: str
    idle_states: str


class PresetOppTable(_Strict):
    base_khz: PositiveInt
    turbo_khz: list[PositiveInt] = []
    turbo_grant: Literal["request", "range"] = "request"
    transition_latency_ns: NonNegativeInt = 0
    # Range form (x86 P-states).
    min_khz: PositiveInt | None = None
    max_khz: PositiveInt | None = None
    step_khz: PositiveInt | None = None
    voltage: Literal["linear"] | None = None
    min_uv: PositiveInt | None = None
    max_uv: PositiveInt | None = None
    # Explicit form: [kHz, uV] or [kHz, uV, mW].
    opps: list[list[float]] | None = None

    @model_validator(mode="after")
    def _check(self) -> PresetOppTable:
        ranged = (self.min_khz, self.max_khz, self.step_khz)
        if self.opps is not None:
            if any(v is not None for v in (*ranged, self.voltage, self.min_uv, self.max_uv)):
                raise ValueError("give either 'opps' or min_khz/max_khz/step_khz, not both")
            if not self.opps:
                raise ValueError("'opps' is empty")
            for row in self.opps:
                if len(row) not in (2, 3):
                    raise ValueError(f"opps entry {row}: expected [kHz, uV] or [kHz, uV, mW]")
            khz = [row[0] for row in self.opps]
        else:
            if any(v is None for v in ranged):
                raise ValueError("give 'opps', or all of min_khz, max_khz and step_khz")
            assert self.min_khz is not None and self.max_khz is not None
            if self.max_khz < self.min_khz or (self.max_khz - self.min_khz) % self.step_khz:
                raise ValueError("max_khz - min_khz must be a non-negative multiple of step_khz")
            if self.voltage == "linear" and (self.min_uv is None or self.max_uv is None):
                raise ValueError("voltage = 'linear' needs min_uv and max_uv")
            if self.voltage is None and (self.min_uv is not None or self.max_uv is not None):
                raise ValueError("min_uv/max_uv need voltage = 'linear'")
            khz = [self.min_khz, self.max_khz]
        if any(b <= a for a, b in zip(khz, khz[1:], strict=False)):
            raise ValueError("OPP frequencies must be strictly ascending")
        if not khz[0] <= self.base_khz <= khz[-1]:
            raise ValueError(f"base_khz {self.base_khz} outside the table {khz[0]}..{khz[-1]}")
        if self.turbo_khz:
            if any(b > a for a, b in zip(self.turbo_khz, self.turbo_khz[1:], strict=False)):
                raise ValueError("turbo_khz (1C, 2C, ...) must not increase with active cores")
            if self.turbo_khz[0] > khz[-1]:
                raise ValueError("turbo_khz[0] (1C turbo) is above the highest OPP")
        return self

    def expand(self, power_model: str, dpc: float | None) -> list[OppSpec]:
        """The OPP list in kHz/µV/mW. EM power is dpc·V²·f when the table gives none."""
        rows: list[tuple[int, int, float | None]] = []
        if self.opps is not None:
            for row in self.opps:
                rows.append((int(row[0]), int(row[1]), float(row[2]) if len(row) == 3 else None))
        else:
            assert self.min_khz is not None and self.max_khz is not None
            assert self.step_khz is not None
            span = self.max_khz - self.min_khz
            for khz in range(self.min_khz, self.max_khz + 1, self.step_khz):
                uv = 0
                if self.voltage == "linear":
                    assert self.min_uv is not None and self.max_uv is not None
                    frac = (khz - self.min_khz) / span if span else 0.0
                    uv = round(self.min_uv + frac * (self.max_uv - self.min_uv))
                rows.append((khz, uv, None))
        out = []
        for khz, uv, mw in rows:
            if mw is None:
                mw = em_power_mw(dpc, uv, khz) if power_model == "em" and dpc else 0.0
            out.append(OppSpec(khz=khz, uv=uv, power_mw=mw))
        return out


def em_power_mw(dpc: float, uv: int, khz: int) -> float:
    """Energy-model power of one CPU at an OPP: dpc [µW/MHz/V²] · V² · f, in mW.

    The kernel's `_get_power` (drivers/opp/of.c) computes µW = dpc · mV² · MHz / 10⁶ in integers;
    this is the same formula without the truncation, rounded to 1 µW.
    """
    volts = uv / 1e6
    mhz = khz / 1e3
    return round(dpc * volts * volts * mhz / 1e3, 6)


class PresetIdleState(_Strict):
    name: str
    exit_latency_us: NonNegativeInt
    target_residency_us: NonNegativeInt
    # the hardware's wake from this state with the package in no package state (<= the
    # declared exit_latency_us, which the governors read); default: exit_latency_us
    core_exit_latency_us: NonNegativeInt | None = None
    power_mw: float = 0.0
    turbo_active: bool = False
    holds_pstate_request: bool = False


class PresetPower(_Strict):
    model: Literal["em", "parametric"]
    tdp_w: PositiveFloat | None = None
    package_idle_mw: float = 0.0
    uncore_active_mw: float = 0.0
    core_leakage_mw: float = 0.0
    c_eff: float = 0.0
    # switching activity of the simulated code relative to the workload c_eff was calibrated on
    activity_factor: float = Field(default=1.0, gt=0.0, le=2.0)
    smt_power_factor: float = 0.0
    power_limit_mw: NonNegativeFloat = 0.0
    power_limit_tau_ms: NonNegativeFloat = 0.0
    power_limit2_mw: NonNegativeFloat = 0.0

    @model_validator(mode="after")
    def _check(self) -> PresetPower:
        if self.power_limit_mw > 0 and self.power_limit_tau_ms <= 0:
            raise ValueError("power.power_limit_mw needs a power.power_limit_tau_ms > 0")
        if self.power_limit_tau_ms > 0 and self.power_limit_mw <= 0:
            raise ValueError("power.power_limit_tau_ms given without power.power_limit_mw")
        if 0 < self.power_limit2_mw < self.power_limit_mw:
            raise ValueError(
                f"power.power_limit2_mw {self.power_limit2_mw:g} is below power.power_limit_mw "
                f"{self.power_limit_mw:g} (PL2 is the short-term, higher limit)"
            )
        return self


class PresetPackageIdleState(_Strict):
    name: str
    # The core idle state every core of the package must be in (or deeper): its name, the same
    # index in every core type's list, or the index itself.
    min_core_state: str | NonNegativeInt
    power_mw: NonNegativeFloat
    exit_latency_us: NonNegativeInt = 0


class PresetHwp(_Strict):
    highest_khz: PositiveInt
    guaranteed_khz: PositiveInt
    efficient_khz: PositiveInt
    lowest_khz: PositiveInt
    default_epp: int = Field(default=0x80, ge=0, le=255)
    sample_ns: PositiveInt = 1_000_000
    headroom_epp0: float = 0.0
    headroom_epp255: float = 0.0
    activity_window_ns: NonNegativeInt = 0
    ramp_up_khz: NonNegativeInt = 0
    ramp_down_khz: NonNegativeInt = 0

    @model_validator(mode="after")
    def _check(self) -> PresetHwp:
        order = (self.lowest_khz, self.efficient_khz, self.guaranteed_khz, self.highest_khz)
        if list(order) != sorted(order):
            raise ValueError(
                "hwp: expected lowest_khz <= efficient_khz <= guaranteed_khz <= highest_khz, got "
                + ", ".join(str(k) for k in order)
            )
        for key in ("headroom_epp0", "headroom_epp255"):
            if getattr(self, key) <= -1.0:
                raise ValueError(f"hwp.{key} must be > -1 (target = busy x highest x (1 + it))")
        return self


class Preset(_Strict):
    machine: PresetMachine
    topology: PresetTopology
    core_types: dict[str, PresetCoreType]
    opp_tables: dict[str, PresetOppTable]
    idle_states: dict[str, list[PresetIdleState]]
    package_idle_states: list[PresetPackageIdleState] = []
    hwp: PresetHwp | None = None
    storage: StorageSpec | None = None  # `[storage]`, passed through as it is
    power: PresetPower

    @model_validator(mode="after")
    def _check(self) -> Preset:
        topo = self.topology
        for i, cl in enumerate(topo.clusters):
            if cl.core_type not in self.core_types:
                raise ValueError(
                    f"topology.clusters[{i}].core_type '{cl.core_type}' is not defined; "
                    f"defined: {', '.join(self.core_types)}"
                )
        for name, ct in self.core_types.items():
            if ct.opp_table not in self.opp_tables:
                raise ValueError(
                    f"core_types.{name}.opp_table '{ct.opp_table}' is not defined; "
                    f"defined: {', '.join(self.opp_tables)}"
                )
            if ct.idle_states not in self.idle_states:
                raise ValueError(
                    f"core_types.{name}.idle_states '{ct.idle_states}' is not defined; "
                    f"defined: {', '.join(self.idle_states)}"
                )
            if topo.smt > 1:
                if len(ct.smt_share) != topo.smt or abs(ct.smt_share[0] - 1.0) > 1e-9:
                    raise ValueError(
                        f"core_types.{name}.smt_share must list {topo.smt} values starting at 1.0"
                    )
            elif ct.smt_share:
                raise ValueError(f"core_types.{name}.smt_share given but topology.smt = 1")
            if self.power.model == "em":
                table = self.opp_tables[ct.opp_table]
                explicit = table.opps is not None and all(len(r) == 3 for r in table.opps)
                if ct.dynamic_power_coefficient is None and not explicit:
                    raise ValueError(
                        f"core_types.{name}: power model 'em' needs dynamic_power_coefficient "
                        "or [kHz, uV, mW] OPPs"
                    )
        for name, states in self.idle_states.items():
            if not states:
                raise ValueError(f"idle_states.{name} is empty")
        if topo.freq_domain == "package":
            tables = {self.core_types[c.core_type].opp_table for c in topo.clusters}
            if len(tables) > 1:
                raise ValueError(
                    "topology.freq_domain = 'package' needs one OPP table for all clusters"
                )
        if self.power.model == "em" and topo.freq_domain == "package":
            types = {c.core_type for c in topo.clusters}
            if len(types) > 1:
                raise ValueError("power model 'em' needs one core type per frequency domain")
        self._check_package_idle_states()
        self._check_hwp()
        return self

    def _used_idle_lists(self) -> dict[str, list[PresetIdleState]]:
        """The idle-state lists of the core types that some cluster uses, by list name."""
        used = {self.core_types[c.core_type].idle_states for c in self.topology.clusters}
        return {name: self.idle_states[name] for name in sorted(used)}

    def package_state_index(self, i: int) -> int:
        """`package_idle_states[i].min_core_state` as an index into the core idle-state lists."""
        ps = self.package_idle_states[i]
        key = f"package_idle_states[{i}].min_core_state"
        lists = self._used_idle_lists()
        if isinstance(ps.min_core_state, int):
            index = ps.min_core_state
        else:
            found = {
                name: [s.name for s in states].index(ps.min_core_state)
                for name, states in lists.items()
                if ps.min_core_state in [s.name for s in states]
            }
            missing = [name for name in lists if name not in found]
            if missing:
                raise ValueError(
                    f"{key} '{ps.min_core_state}' is not a state of idle_states."
                    f"{missing[0]}; its states: " + ", ".join(s.name for s in lists[missing[0]])
                )
            if len(set(found.values())) > 1:
                raise ValueError(
                    f"{key} '{ps.min_core_state}' sits at different positions in the idle-state "
                    f"lists ({', '.join(f'{k}: {v}' for k, v in found.items())}); the core "
                    "needs one index for every core type"
                )
            index = next(iter(found.values()))
        for name, states in lists.items():
            if index >= len(states):
                raise ValueError(
                    f"{key} {index} is out of range for idle_states.{name} ({len(states)} states)"
                )
        return index

    def _check_package_idle_states(self) -> None:
        previous = -1
        for i, ps in enumerate(self.package_idle_states):
            index = self.package_state_index(i)
            if index <= previous:
                raise ValueError(
                    f"package_idle_states[{i}] ('{ps.name}'): list package states shallowest "
                    "first, each needing a deeper core state than the one before"
                )
            if index == 0:
                raise ValueError(
                    f"package_idle_states[{i}].min_core_state: state 0 is the polling/WFI state; "
                    "a package state needs a core idle state deeper than it"
                )
            previous = index

    def _check_hwp(self) -> None:
        if self.machine.hwp and self.hwp is None:
            raise ValueError("machine.hwp = true needs an [hwp] table (HWP_CAPABILITIES)")
        if self.hwp is None:
            return
        if self.machine.arch != "x86":
            raise ValueError(f"[hwp] is Intel's; machine.arch is '{self.machine.arch}'")
        for name, ct in self.core_types.items():
            table = self.opp_tables[ct.opp_table]
            khz = [o.khz for o in table.expand("parametric", None)]
            if self.hwp.highest_khz != khz[-1]:
                raise ValueError(
                    f"hwp.highest_khz {self.hwp.highest_khz} differs from the highest OPP "
                    f"{khz[-1]} of opp_tables.{ct.opp_table} (core type {name})"
                )
            if self.hwp.guaranteed_khz != table.base_khz:
                raise ValueError(
                    f"hwp.guaranteed_khz {self.hwp.guaranteed_khz} differs from "
                    f"opp_tables.{ct.opp_table}.base_khz {table.base_khz}"
                )
            if self.hwp.lowest_khz < khz[0]:
                raise ValueError(
                    f"hwp.lowest_khz {self.hwp.lowest_khz} is below the lowest OPP {khz[0]} of "
                    f"opp_tables.{ct.opp_table}"
                )

    # ---- expansion ---------------------------------------------------------------------------

    def expand(self) -> MachineSpec:
        """The explicit MachineSpec: every CPU listed in Linux numbering order."""
        topo = self.topology
        type_names = list(self.core_types)
        cores_per_node = sum(c.cores for c in topo.clusters)
        total_cores = topo.packages * topo.nodes_per_package * cores_per_node
        llc_ids = sorted({c.llc for c in topo.clusters})

        # One record per core, in core order (package, node, cluster, core).
        cores: list[dict[str, int]] = []
        for pkg in range(topo.packages):
            for local_node in range(topo.nodes_per_package):
                node = pkg * topo.nodes_per_package + local_node
                for ci, cl in enumerate(topo.clusters):
                    cluster = node * len(topo.clusters) + ci
                    llc = node * len(llc_ids) + llc_ids.index(cl.llc)
                    for _ in range(cl.cores):
                        cores.append(
                            {
                                "core": len(cores),
                                "cluster": cluster,
                                "llc": llc,
                                "node": node,
                                "package": pkg,
                                "core_type": type_names.index(cl.core_type),
                            }
                        )

        cpus: dict[int, dict[str, int]] = {}
        for core in cores:
            for thread in range(topo.smt):
                if topo.cpu_numbering == "thread-major":
                    cpu = thread * total_cores + core["core"]
                elif topo.cpu_numbering == "explicit":
                    assert topo.cpu_ids is not None
                    cpu = topo.cpu_ids[core["core"] * topo.smt + thread]
                else:
                    cpu = core["core"] * topo.smt + thread
                cpus[cpu] = {**core, "thread": thread}

        domain_keys: dict[tuple[int, ...], int] = {}
        domain_type: list[str] = []
        cpu_specs: list[CpuSpec] = []
        for cpu in range(len(cpus)):
            c = cpus[cpu]
            key = {
                "package": (c["package"],),
                "cluster": (c["cluster"],),
                "core": (c["core"],),
                "thread": (c["core"], c["thread"]),
            }[topo.freq_domain]
            if key not in domain_keys:
                domain_keys[key] = len(domain_keys)
                domain_type.append(type_names[c["core_type"]])
            cpu_specs.append(
                CpuSpec(
                    id=cpu,
                    core=c["core"],
                    cluster=c["cluster"],
                    llc=c["llc"],
                    node=c["node"],
                    package=c["package"],
                    core_type=c["core_type"],
                    freq_domain=domain_keys[key],
                )
            )

        freq_domains = []
        for tname in domain_type:
            ct = self.core_types[tname]
            table = self.opp_tables[ct.opp_table]
            freq_domains.append(
                FreqDomainSpec(
                    granularity=topo.freq_domain,
                    coordination=topo.freq_coordination,
                    opps=table.expand(self.power.model, ct.dynamic_power_coefficient),
                    base_khz=table.base_khz,
                    turbo_khz=table.turbo_khz,
                    turbo_grant=table.turbo_grant,
                    transition_latency_ns=table.transition_latency_ns,
                )
            )

        core_types = [
            CoreTypeSpec(
                name=name,
                capacity_dmips_mhz=ct.capacity_dmips_mhz,
                smt_share=ct.smt_share,
                kernel_cycles=ct.kernel_cycles,
            )
            for name, ct in self.core_types.items()
        ]
        idle = {
            name: [IdleStateSpec(**s.model_dump()) for s in self.idle_states[ct.idle_states]]
            for name, ct in self.core_types.items()
        }
        nodes = topo.packages * topo.nodes_per_package
        power = self.power.model_dump(exclude={"tdp_w"})
        package_states = [
            PackageIdleStateSpec(
                name=ps.name,
                min_core_state=self.package_state_index(i),
                power_mw=ps.power_mw,
                exit_latency_us=ps.exit_latency_us,
            )
            for i, ps in enumerate(self.package_idle_states)
        ]
        # `machine.hwp = false` with an [hwp] table: the part has HWP but it is off (firmware
        # setting, or an override); the core then sees no HWP.
        hwp = HwpSpec(**self.hwp.model_dump()) if self.hwp and self.machine.hwp else None
        return MachineSpec(
            name=self.machine.name,
            description=self.machine.description,
            arch=self.machine.arch,
            cpus=cpu_specs,
            core_types=core_types,
            freq_domains=freq_domains,
            numa_distance=topo.numa_distance if nodes > 1 else [],
            idle_states=idle,
            power=PowerSpec(**power),
            tsc_khz=self.machine.tsc_khz,
            package_idle_states=package_states,
            hwp=hwp,
            storage=self.storage,
        )


def format_validation_error(err: ValidationError) -> str:
    """A pydantic error on one line: `loc: message; loc: message`."""
    parts = []
    for e in err.errors():
        loc = ".".join(str(p) for p in e["loc"])
        msg = e["msg"].removeprefix("Value error, ")
        parts.append(f"{loc}: {msg}" if loc else msg)
    return "; ".join(parts)


def parse_preset(data: dict[str, Any], origin: str) -> Preset:
    """Validate raw TOML data; errors name the file and the key."""
    try:
        return Preset.model_validate(data)
    except ValidationError as err:
        raise ConfigError(f"machine preset {origin}: {format_validation_error(err)}") from None
