"""Python mirror of the core's input structures.

`SimConfig` and friends follow `crates/schedsim-core/src/config.rs`; the task-program types follow
`crates/schedsim-core/src/workload/spec.rs`. Field names, defaults and the refusal of unknown
fields (serde `deny_unknown_fields`, pydantic `extra="forbid"`) are the same, so a config that
validates here deserialises in the core. The core still runs its own cross-reference checks.
"""

import re
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    NonNegativeFloat,
    NonNegativeInt,
    PositiveInt,
    StrictFloat,
    StrictInt,
    StrictStr,
    model_validator,
)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


# ---- machine -------------------------------------------------------------------------------


class CpuSpec(_Strict):
    id: NonNegativeInt
    core: NonNegativeInt
    cluster: NonNegativeInt
    llc: NonNegativeInt
    node: NonNegativeInt
    package: NonNegativeInt
    core_type: NonNegativeInt
    freq_domain: NonNegativeInt


class CoreTypeSpec(_Strict):
    name: str
    capacity_dmips_mhz: PositiveInt
    smt_share: list[float] = []
    kernel_cycles: dict[str, float] = {}


class OppSpec(_Strict):
    khz: PositiveInt
    uv: NonNegativeInt = 0
    power_mw: float = 0.0


class FreqDomainSpec(_Strict):
    granularity: Literal["thread", "core", "cluster", "package"]
    coordination: Literal["max-active", "max"] = "max-active"
    opps: list[OppSpec]
    base_khz: PositiveInt
    turbo_khz: list[PositiveInt] = []
    turbo_grant: Literal["request", "range"] = "request"
    transition_latency_ns: NonNegativeInt = 0


class IdleStateSpec(_Strict):
    name: str
    exit_latency_us: NonNegativeInt
    target_residency_us: NonNegativeInt
    core_exit_latency_us: NonNegativeInt | None = None
    power_mw: float = 0.0
    turbo_active: bool = False
    holds_pstate_request: bool = False

    @model_validator(mode="after")
    def _core_exit_within_declared(self) -> "IdleStateSpec":
        core = self.core_exit_latency_us
        if core is not None and core > self.exit_latency_us:
            raise ValueError(
                f"idle state {self.name}: core_exit_latency_us {core} exceeds "
                f"the declared exit_latency_us {self.exit_latency_us} (the declared value is the "
                "worst case, package exit included)"
            )
        return self


class PowerSpec(_Strict):
    model: Literal["em", "parametric"]
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


class PackageIdleStateSpec(_Strict):
    name: str
    min_core_state: NonNegativeInt
    power_mw: float
    exit_latency_us: NonNegativeInt = 0


class HwpSpec(_Strict):
    highest_khz: PositiveInt
    guaranteed_khz: PositiveInt
    efficient_khz: PositiveInt
    lowest_khz: PositiveInt
    default_epp: Annotated[int, Field(ge=0, le=255)] = 0x80
    sample_ns: NonNegativeInt = 1_000_000
    headroom_epp0: float = 0.0
    headroom_epp255: float = 0.0
    activity_window_ns: NonNegativeInt = 0
    ramp_up_khz: NonNegativeInt = 0
    ramp_down_khz: NonNegativeInt = 0


class StorageSpec(_Strict):
    fsync_us: float = Field(ge=1.0, le=1e6, allow_inf_nan=False)


class MachineSpec(_Strict):
    name: str
    description: str = ""
    arch: Literal["x86", "arm64", "power"]
    cpus: list[CpuSpec]
    core_types: list[CoreTypeSpec]
    freq_domains: list[FreqDomainSpec]
    numa_distance: list[list[int]] = []
    idle_states: dict[str, list[IdleStateSpec]] = {}
    power: PowerSpec
    tsc_khz: PositiveInt
    package_idle_states: list[PackageIdleStateSpec] = []
    hwp: HwpSpec | None = None
    storage: StorageSpec | None = None


# ---- task programs (workload/spec.rs) -------------------------------------------------------


class RunOp(_Strict):
    op: Literal["run"] = "run"
    cycles: float
    stall_ns: float = 0.0


class RunForOp(_Strict):
    op: Literal["run_for"] = "run_for"
    ns: NonNegativeInt


class SleepOp(_Strict):
    op: Literal["sleep"] = "sleep"
    ns: NonNegativeInt


class TimerOp(_Strict):
    op: Literal["timer"] = "timer"
    period_ns: PositiveInt


class IoOp(_Strict):
    op: Literal["io"] = "io"
    ns: NonNegativeInt


class SendOp(_Strict):
    op: Literal["send"] = "send"
    chan: str


class RecvOp(_Strict):
    op: Literal["recv"] = "recv"
    chan: str


class RecvAnyOp(_Strict):
    op: Literal["recv_any"] = "recv_any"
    chans: list[str] = Field(min_length=1)


class SendPolledOp(_Strict):
    op: Literal["send_polled"] = "send_polled"
    chans: list[str] = Field(min_length=1)


class ForkOp(_Strict):
    op: Literal["fork"] = "fork"
    task: str


class ExecOp(_Strict):
    op: Literal["exec"] = "exec"
    comm: str


class WaitOp(_Strict):
    op: Literal["wait"] = "wait"


class ExitOp(_Strict):
    op: Literal["exit"] = "exit"


class MarkOp(_Strict):
    op: Literal["mark"] = "mark"
    name: str


class LoopOp(_Strict):
    op: Literal["loop"] = "loop"
    count: int
    body: list["OpSpec"]


class ConstDist(_Strict):
    kind: Literal["const"] = "const"
    value: NonNegativeFloat


class UniformDist(_Strict):
    kind: Literal["uniform"] = "uniform"
    lo: NonNegativeFloat
    hi: NonNegativeFloat


class ExponentialDist(_Strict):
    kind: Literal["exponential"] = "exponential"
    mean: NonNegativeFloat


class LogNormalDist(_Strict):
    kind: Literal["log_normal"] = "log_normal"
    mu: float
    sigma: NonNegativeFloat
    scale: NonNegativeFloat


Dist = Annotated[
    ConstDist | UniformDist | ExponentialDist | LogNormalDist, Field(discriminator="kind")
]


class RunDistOp(_Strict):
    op: Literal["run_dist"] = "run_dist"
    dist: Dist
    stall_ns: NonNegativeFloat = 0.0


class LockOp(_Strict):
    op: Literal["lock"] = "lock"
    mutex: str


class UnlockOp(_Strict):
    op: Literal["unlock"] = "unlock"
    mutex: str


class LockRowOp(_Strict):
    op: Literal["lock_row"] = "lock_row"
    table: str
    rows: int = Field(ge=1, le=2**32 - 1)


class UnlockRowsOp(_Strict):
    op: Literal["unlock_rows"] = "unlock_rows"
    table: str


class GroupCommitOp(_Strict):
    op: Literal["group_commit"] = "group_commit"
    log: str
    ns: int = Field(ge=0)


class JournalCommitOp(_Strict):
    op: Literal["journal_commit"] = "journal_commit"
    journal: str


class JournalWaitOp(_Strict):
    op: Literal["journal_wait"] = "journal_wait"
    journal: str


class JournalDoneOp(_Strict):
    op: Literal["journal_done"] = "journal_done"
    journal: str


class BarrierOp(_Strict):
    op: Literal["barrier"] = "barrier"
    name: str


class CondWaitOp(_Strict):
    op: Literal["cond_wait"] = "cond_wait"
    cond: str
    mutex: str


class SignalOp(_Strict):
    op: Literal["signal"] = "signal"
    cond: str


class BroadcastOp(_Strict):
    op: Literal["broadcast"] = "broadcast"
    cond: str


class SuspendOp(_Strict):
    op: Literal["suspend"] = "suspend"


class ResumeOp(_Strict):
    op: Literal["resume"] = "resume"
    task: str


class YieldOp(_Strict):
    op: Literal["yield"] = "yield"


class ClockOp(_Strict):
    op: Literal["clock"] = "clock"
    name: str
    period_ns: NonNegativeInt
    unique: bool = False
    relative: bool = True
    origin_ns: NonNegativeInt = 0


class SetAffinityOp(_Strict):
    op: Literal["set_affinity"] = "set_affinity"
    cpus: list[NonNegativeInt]


class SetUclampOp(_Strict):
    op: Literal["set_uclamp"] = "set_uclamp"
    # the upper bound (1024) is the core's check, whose message names the task
    min: NonNegativeInt | None = None
    max: NonNegativeInt | None = None


OpSpec = Annotated[
    RunOp
    | RunForOp
    | SleepOp
    | TimerOp
    | IoOp
    | SendOp
    | RecvOp
    | RecvAnyOp
    | SendPolledOp
    | ForkOp
    | ExecOp
    | WaitOp
    | ExitOp
    | LoopOp
    | MarkOp
    | RunDistOp
    | LockOp
    | UnlockOp
    | LockRowOp
    | UnlockRowsOp
    | GroupCommitOp
    | JournalCommitOp
    | JournalWaitOp
    | JournalDoneOp
    | BarrierOp
    | CondWaitOp
    | SignalOp
    | BroadcastOp
    | SuspendOp
    | ResumeOp
    | YieldOp
    | ClockOp
    | SetAffinityOp
    | SetUclampOp,
    Field(discriminator="op"),
]
LoopOp.model_rebuild()


class TaskSpec(_Strict):
    name: str
    instances: PositiveInt = 1
    nice: int = 0
    policy: str = "SCHED_OTHER"
    priority: int = 0
    cpus: list[NonNegativeInt] = []
    start: bool = True
    delay_ns: NonNegativeInt = 0
    start_cpu: NonNegativeInt | None = None
    cgroup: str | None = None
    # the upper bound (1024) is the core's check, whose message names the task
    uclamp_min: NonNegativeInt | None = None
    uclamp_max: NonNegativeInt | None = None
    program: list[OpSpec]


class ChannelSpec(_Strict):
    name: str
    capacity: PositiveInt = 1024
    tcp: bool = False
    # blocked senders all wake once a receive leaves at most this many messages
    write_space: NonNegativeInt | None = None
    # a pipe of capacity / pipe_page pages of pipe_page messages
    pipe_page: PositiveInt | None = None

    @model_validator(mode="after")
    def _space_fits_capacity(self) -> "ChannelSpec":
        if self.write_space is not None and self.write_space >= self.capacity:
            raise ValueError(
                f"channel '{self.name}': write_space must be below its capacity "
                f"({self.capacity}), got {self.write_space}"
            )
        if self.pipe_page is not None and (
            self.capacity % self.pipe_page or self.write_space is not None
        ):
            raise ValueError(
                f"channel '{self.name}': pipe_page must divide the capacity ({self.capacity}), "
                f"without a write_space; got {self.pipe_page}"
            )
        return self


class CustomWorkload(_Strict):
    tasks: list[TaskSpec]
    channels: list[ChannelSpec] = []


# ---- the run --------------------------------------------------------------------------------


class KernelSpec(_Strict):
    version: str = "6.12"
    hz: int = 250
    features: dict[str, Any] = {}


class CpufreqSpec(_Strict):
    governor: str = "performance"
    driver: str | None = None
    invariance: str = "none"


class WorkloadSpec(_Strict):
    name: str
    params: dict[str, Any] = {}
    custom: CustomWorkload | None = None
    cgroups: list[str] = []
    # the workload a replay's programs stand for, named in results (never sent to the core)
    replay_of: dict[str, Any] | None = None


# ---- cgroups --------------------------------------------------------------------------------

# The cpu controller's ranges (kernel/sched/core.c): cpu.weight, and the cpu.max limits of
# tg_set_cfs_bandwidth() (min_cfs_quota_period = 1 ms, max_cfs_quota_period = 1 s,
# max_cfs_runtime = MAX_BW = 2^44 - 1 µs for quota + burst).
CPU_WEIGHT_RANGE = (1, 10_000)
CFS_PERIOD_US_RANGE = (1_000, 1_000_000)
CFS_QUOTA_US_MIN = 1_000
MAX_CFS_RUNTIME_US = (1 << 44) - 1
UCLAMP_PCT_RANGE = (0.0, 100.0)

# One path component: cgroupfs allows almost any name; these characters keep the CLI form
# `PATH:key=value` and the per-cgroup metric names unambiguous.
_CGROUP_NAME = re.compile(r"^[A-Za-z0-9_.@+\-]+$")
CGROUP_NAME_CHARS = "letters, digits and _ . @ + -"


def check_cgroup_path(path: Any) -> str | None:
    """Why `path` is not a cgroup path below the root (`cg1`, `a/b`), or None when it is."""
    if not isinstance(path, str) or not path:
        return "expected a path like 'cg1' or 'a/b'"
    if path == "/" or path.startswith("/"):
        return (
            "expected a path relative to the root group, like 'cg1' or 'a/b' (no leading '/'; "
            "the root group itself cannot be configured)"
        )
    for part in path.split("/"):
        if not part:
            return "expected a path like 'cg1' or 'a/b' (an empty component)"
        if part in (".", ".."):
            return f"'{part}' is not allowed as a component"
        if not _CGROUP_NAME.match(part):
            return f"component '{part}': allowed characters are {CGROUP_NAME_CHARS}"
    return None


def _range(path: str, key: str, value: Any, lo: float, hi: float, unit: str = "") -> None:
    if not lo <= value <= hi:
        raise ValueError(f"cgroup '{path}': {key} = {value}: allowed {lo}..{hi}{unit}")


class CgroupSpec(_Strict):
    """One cgroup v2 directory's cpu controller files, in the core's units."""

    path: StrictStr
    weight: StrictInt = 100
    quota_us: StrictInt | None = None
    period_us: StrictInt = 100_000
    burst_us: StrictInt = 0
    uclamp_min: StrictFloat = 0.0
    uclamp_max: StrictFloat = 100.0

    @model_validator(mode="after")
    def _check(self) -> "CgroupSpec":
        p = self.path
        why = check_cgroup_path(p)
        if why is not None:
            raise ValueError(f"cgroup path {p!r}: {why}")
        _range(p, "weight", self.weight, *CPU_WEIGHT_RANGE)
        _range(p, "period_us", self.period_us, *CFS_PERIOD_US_RANGE, " µs")
        if self.quota_us is not None:
            _range(p, "quota_us", self.quota_us, CFS_QUOTA_US_MIN, MAX_CFS_RUNTIME_US, " µs")
        if self.burst_us < 0:
            raise ValueError(f"cgroup '{p}': burst_us = {self.burst_us}: must be >= 0")
        if self.burst_us > 0:
            if self.quota_us is None:
                raise ValueError(
                    f"cgroup '{p}': burst_us = {self.burst_us}: cpu.max.burst needs a quota "
                    "(quota_us is max)"
                )
            if self.burst_us > self.quota_us:
                raise ValueError(
                    f"cgroup '{p}': burst_us = {self.burst_us}: allowed 0..{self.quota_us} µs "
                    "(at most the quota)"
                )
            if self.quota_us + self.burst_us > MAX_CFS_RUNTIME_US:
                raise ValueError(
                    f"cgroup '{p}': quota_us + burst_us = {self.quota_us + self.burst_us}: "
                    f"allowed at most {MAX_CFS_RUNTIME_US} µs"
                )
        _range(p, "uclamp_min", self.uclamp_min, *UCLAMP_PCT_RANGE, " %")
        _range(p, "uclamp_max", self.uclamp_max, *UCLAMP_PCT_RANGE, " %")
        if self.uclamp_min > self.uclamp_max:
            raise ValueError(
                f"cgroup '{p}': uclamp_min = {self.uclamp_min} is above uclamp_max = "
                f"{self.uclamp_max}: allowed uclamp_min <= uclamp_max"
            )
        return self


def check_cgroup_refs(cgroups: list[CgroupSpec], workload: WorkloadSpec) -> str | None:
    """Why a list of cgroups and the workload's references to them do not fit together (a path
    defined twice, a parent missing or listed after its child, an undefined cgroup named by
    the workload or a task), or None when they do."""
    known: list[str] = []
    for g in cgroups:
        if g.path in known:
            return f"cgroups: '{g.path}' is defined twice"
        parent, sep, _ = g.path.rpartition("/")
        if sep and parent not in known:
            if any(other.path == parent for other in cgroups):
                return f"cgroups: '{g.path}': its parent '{parent}' must be listed before it"
            return f"cgroups: '{g.path}': its parent '{parent}' is not defined"
        known.append(g.path)
    defined = ", ".join(known) if known else "none"
    seen: set[str] = set()
    for name in workload.cgroups:
        if name not in known:
            return f"workload.cgroups: '{name}' is not a defined cgroup; defined: {defined}"
        if name in seen:
            return f"workload.cgroups: '{name}' is listed twice"
        seen.add(name)
    if workload.custom is not None:
        for t in workload.custom.tasks:
            if t.cgroup is not None and t.cgroup not in known:
                return (
                    f"task '{t.name}': cgroup '{t.cgroup}' is not a defined cgroup; "
                    f"defined: {defined}"
                )
    return None


class SimConfig(_Strict):
    machine: MachineSpec
    kernel: KernelSpec = KernelSpec()
    cpufreq: CpufreqSpec = CpufreqSpec()
    workload: WorkloadSpec
    seed: NonNegativeInt = 1
    duration_ns: NonNegativeInt | None = None
    trace: bool = False
    trace_format: Literal["ftrace", "perfetto", "chrome"] = "ftrace"
    sample_interval_ns: NonNegativeInt = 0
    tunables: dict[str, Any] = {}
    cgroups: list[CgroupSpec] = []

    @model_validator(mode="after")
    def _check_cgroups(self) -> "SimConfig":
        why = check_cgroup_refs(self.cgroups, self.workload)
        if why is not None:
            raise ValueError(why)
        return self

    def to_json_dict(self) -> dict[str, Any]:
        """The JSON-ready dict handed to `_core.run`. Optional parts the core defaults are left
        out when unset (no custom programs; no cgroups, no workload cgroups, no task cgroup or
        clamps, no replay note),
        so a config without cgroups serialises, and hashes, as it did before they existed; the
        trace format likewise when it is the default ftrace."""
        data = self.model_dump(mode="json")
        workload = data["workload"]
        if workload["replay_of"] is None:
            del workload["replay_of"]
        if workload["custom"] is None:
            del workload["custom"]
        else:
            for t in workload["custom"]["tasks"]:
                for key in ("cgroup", "uclamp_min", "uclamp_max"):
                    if t.get(key) is None:
                        t.pop(key, None)
        if not workload["cgroups"]:
            del workload["cgroups"]
        if not data["cgroups"]:
            del data["cgroups"]
        if data["trace_format"] == "ftrace":
            del data["trace_format"]
        return data
