"""Python mirror of the core's input structures.

`SimConfig` and friends follow `crates/schedsim-core/src/config.rs`; the task-program types follow
`crates/schedsim-core/src/workload/spec.rs`. Field names, defaults and the refusal of unknown
fields (serde `deny_unknown_fields`, pydantic `extra="forbid"`) are the same, so a config that
validates here deserialises in the core. The core still runs its own cross-reference checks.
"""

from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    NonNegativeFloat,
    NonNegativeInt,
    PositiveInt,
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
    transition_latency_ns: NonNegativeInt = 0


class IdleStateSpec(_Strict):
    name: str
    exit_latency_us: NonNegativeInt
    target_residency_us: NonNegativeInt
    power_mw: float = 0.0
    turbo_active: bool = False


class PowerSpec(_Strict):
    model: Literal["em", "parametric"]
    package_idle_mw: float = 0.0
    uncore_active_mw: float = 0.0
    core_leakage_mw: float = 0.0
    c_eff: float = 0.0
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
    ramp_up_khz: NonNegativeInt = 0
    ramp_down_khz: NonNegativeInt = 0


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


OpSpec = Annotated[
    RunOp
    | RunForOp
    | SleepOp
    | TimerOp
    | IoOp
    | SendOp
    | RecvOp
    | ForkOp
    | ExecOp
    | WaitOp
    | ExitOp
    | LoopOp
    | MarkOp
    | RunDistOp
    | LockOp
    | UnlockOp
    | BarrierOp
    | CondWaitOp
    | SignalOp
    | BroadcastOp
    | SuspendOp
    | ResumeOp
    | YieldOp,
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
    program: list[OpSpec]


class ChannelSpec(_Strict):
    name: str
    capacity: PositiveInt = 1024


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


class SimConfig(_Strict):
    machine: MachineSpec
    kernel: KernelSpec = KernelSpec()
    cpufreq: CpufreqSpec = CpufreqSpec()
    workload: WorkloadSpec
    seed: NonNegativeInt = 1
    duration_ns: NonNegativeInt | None = None
    trace: bool = False
    sample_interval_ns: NonNegativeInt = 0
    tunables: dict[str, Any] = {}

    def to_json_dict(self) -> dict[str, Any]:
        """The JSON-ready dict handed to `_core.run` (unset optional programs left out)."""
        data = self.model_dump(mode="json")
        if data["workload"]["custom"] is None:
            del data["workload"]["custom"]
        return data
