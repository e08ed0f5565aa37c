"""Test helpers: a fake core for the Python plumbing, the trace-format regexes and the x86
presets' package power by the parametric formula."""

from __future__ import annotations

import json
import re
from typing import Any

from schedsim.machines import load_machine

# Line regexes of the two main ftrace-text consumers (spec/ecosystem.md §1.1).
PERFETTO_LINE = re.compile(
    r"-(\d+)\s+\(?\s*(\d+|-+)?\)?\s?\[(\d+)\]\s*[a-zA-Z0-9.]{0,4}\s+(\d+\.\d+):\s+(\S+):"
)
LISA_LINE = re.compile(
    r"\s*(?P<__comm>.+)-(?P<__pid>\d+)[^\[]*\[(?P<__cpu>\d*)\][^\d]+"
    r"(?P<__timestamp>\d+\.\d+): +(?P<__event>\w+):"
)

# The trace of spec/ecosystem.md §1.1 ("recommended emitter format"), checked there against
# Perfetto's and LISA's regexes.
FAKE_TRACE = """\
# tracer: nop
#
#           TASK-PID     CPU#     TIMESTAMP  FUNCTION
#              | |         |         |         |
          <idle>-0       [000]     0.001000: sched_switch: prev_comm=swapper/0 prev_pid=0 \
prev_prio=120 prev_state=R ==> next_comm=rtapp-small next_pid=1001 next_prio=120
     rtapp-small-1001    [000]     0.003000: sched_waking: comm=rtapp-big pid=1002 prio=120 \
target_cpu=001
     rtapp-small-1001    [000]     0.003000: cpu_frequency: state=1800000 cpu_id=0
          <idle>-0       [001]     0.003010: cpu_idle: state=4294967295 cpu_id=1
"""

FAKE_WORKLOADS = [
    {
        "name": "periodic",
        "description": "rt-app-like periodic tasks",
        "params": [
            {"name": "tasks", "default": 4, "description": "number of tasks"},
            {"name": "period_ms", "default": 16, "description": "period (ms)"},
            {"name": "duty_pct", "default": 50, "description": "busy share of a period (%)"},
        ],
        "metrics": ["slack_us_p50", "activations"],
        "primary": "slack_us_p50",
        "higher_is_better": True,
        "open_ended": True,
    },
    {
        "name": "hackbench",
        "description": "hackbench groups of senders and receivers",
        "params": [
            {"name": "groups", "default": 4, "description": "groups"},
            {"name": "loops", "default": 100, "description": "messages per sender"},
            {"name": "ratio", "default": 1.0, "description": "a float parameter"},
        ],
        "metrics": ["elapsed_s"],
        "primary": "elapsed_s",
        "higher_is_better": False,
        "open_ended": False,
    },
    {
        "name": "custom",
        "description": "Explicit task programs and channels",
        "params": [],
        "metrics": ["elapsed_s"],
        "primary": "elapsed_s",
        "higher_is_better": False,
        "open_ended": False,
    },
]


def fake_result(config: dict[str, Any]) -> dict[str, Any]:
    ncpus = len(config["machine"]["cpus"])
    duration_ns = config.get("duration_ns") or 1_000_000_000
    result: dict[str, Any] = {
        "schedsim_version": "0.1.0",
        "machine": config["machine"]["name"],
        "kernel": config["kernel"]["version"],
        "workload": {"name": config["workload"]["name"], "params": config["workload"]["params"]},
        "seed": config["seed"],
        "metrics": {"slack_us_p50": 1234.5, "activations": 40},
        "primary": {"name": "slack_us_p50", "value": 1234.5, "higher_is_better": True},
        "power": {"energy_j": 3.2, "avg_package_w": 16.0, "perf_per_watt": 77.2},
        "turbostat": {
            "avg_mhz": 812.0,
            "busy_pct": 20.3,
            "bzy_mhz": 4000.0,
            "tsc_mhz": 3500.0,
            "pkg_watt": 16.0,
            "cor_watt": 9.5,
            "cstates": {"C1": 5.0, "C6": 74.7},
        },
        "sched": {"context_switches": 80, "migrations": 3, "wakeups": 40, "forks": 2},
        "sim": {
            "simulated_s": duration_ns / 1e9,
            "events": 1000,
            "wall_s": 0.01,
            "events_per_s": 100000.0,
        },
        "cpus": [
            {
                "cpu": i,
                "busy_ns": duration_ns // 5,
                "idle_ns": duration_ns - duration_ns // 5,
                "context_switches": 10,
                "avg_khz": 800000,
            }
            for i in range(ncpus)
        ],
        "tasks": [
            {
                "pid": 1001,
                "ppid": 1,
                "comm": "periodic0",
                "cpu_ns": 1000,
                "wait_ns": 10,
                "nr_switches": 4,
                "nr_migrations": 0,
                "nr_wakeups": 3,
                "start_ns": 0,
                "exit_ns": None,
            }
        ],
        "samples": [],
    }
    if config.get("cgroups"):
        result["cgroups"] = fake_cpu_stats(config)
    if config.get("trace"):
        result["trace"] = FAKE_TRACE
    return result


def fake_cpu_stats(config: dict[str, Any]) -> dict[str, dict[str, int]]:
    """cpu.stat per defined cgroup, as the core reports it (numbers made up from the limits)."""
    duration_us = (config.get("duration_ns") or 1_000_000_000) // 1000
    out = {}
    for i, g in enumerate(config["cgroups"]):
        periods = duration_us // g["period_us"] if g.get("quota_us") is not None else 0
        throttled = periods // 2
        out[g["path"]] = {
            "usage_usec": 1000 * (i + 1) + g["weight"],
            "nr_periods": periods,
            "nr_throttled": throttled,
            "throttled_usec": 500 * throttled + (config["seed"] % 7),
            "nr_bursts": 1 if g.get("burst_us") else 0,
            "burst_usec": g.get("burst_us", 0) // 2,
        }
    return out


class FakeCore:
    """Stands in for schedsim._core: records the configs it was given."""

    def __init__(self) -> None:
        self.configs: list[dict[str, Any]] = []
        self.checked: list[dict[str, Any]] = []
        self.extra_workloads: list[dict[str, Any]] = []

    def run(self, config_json: str) -> str:
        config = json.loads(config_json)
        if config["workload"]["name"] == "reject-me":
            raise ValueError("workload 'reject-me': rejected by the core")
        self.configs.append(config)
        return json.dumps(fake_result(config))

    def check(self, config_json: str) -> None:
        """The core's checks before a run: this fake rejects only the tunable `bogus`."""
        config = json.loads(config_json)
        self.checked.append(config)
        if "bogus" in config.get("tunables", {}):
            raise ValueError("unknown tunable 'bogus'; known tunables: sched_latency_ns")

    def workloads(self) -> str:
        return json.dumps(FAKE_WORKLOADS + self.extra_workloads)

    def version(self) -> str:
        return "0.1.0"


class VaryingCore(FakeCore):
    """A fake core whose results depend on the config and the seed (deterministically), with
    per-interval turbostat samples, for the comparison machinery. `fail_at` raises
    KeyboardInterrupt on that call (1-based) to simulate an interrupted sweep."""

    GOVERNOR_SLACK = {"schedutil": 0.0, "powersave": 150.0, "performance": 400.0}
    GOVERNOR_WATTS = {"schedutil": 0.0, "powersave": -1.5, "performance": 6.0}

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0
        self.fail_at: int | None = None

    def run(self, config_json: str) -> str:
        self.calls += 1
        if self.fail_at is not None and self.calls == self.fail_at:
            raise KeyboardInterrupt
        config = json.loads(config_json)
        self.configs.append(config)
        result = fake_result(config)
        params = config["workload"]["params"]
        governor = config["cpufreq"]["governor"]
        invariance = config["cpufreq"]["invariance"]
        n = int(params.get("tasks", params.get("groups", 1)))
        noise = (config["seed"] % 97) / 97.0  # 0..1, from the run's seed
        slack = 1000.0 + 25.0 * n + self.GOVERNOR_SLACK.get(governor, 0.0) + 40.0 * noise
        if invariance != "none":
            slack += 60.0
        watts = 5.0 + 2.0 * n + self.GOVERNOR_WATTS.get(governor, 0.0) + 0.5 * noise
        result["metrics"] = {
            "slack_us_p50": slack,
            "activations": 40 * n,
            "elapsed_s": 2.0 + 0.1 * n + 0.05 * noise,
        }
        result["primary"]["value"] = slack
        result["power"]["avg_package_w"] = watts
        duration_s = (config.get("duration_ns") or 1_000_000_000) / 1e9
        result["power"]["energy_j"] = watts * duration_s
        interval = config.get("sample_interval_ns") or 0
        samples = []
        if interval:
            for i in range(int(duration_s * 1e9 // interval)):
                wobble = ((config["seed"] >> (i % 16)) % 5) / 10.0
                samples.append(
                    {
                        "t_s": (i + 1) * interval / 1e9,
                        "avg_mhz": 400.0 * n + 10.0 * i + wobble,
                        "busy_pct": 10.0 * n + wobble,
                        "bzy_mhz": 2000.0 + 100.0 * n + wobble,
                        "pkg_watt": watts + wobble - 0.2,
                        "cor_watt": watts * 0.6 + wobble,
                    }
                )
        result["samples"] = samples
        result["turbostat"]["cstates"] = {"C1": 5.0, "C6": 80.0 - 5.0 * n}
        return json.dumps(result)


def x86_package_power_mw(name: str, khz: int, threads: int, activity: float = 1.0) -> float:
    """Package power with every core busy (`threads` per core) at `khz`, by the core's formula
    (crates/schedsim-core/src/hw/power.rs): activity x c_eff x V^2 x f x (1 + smt x (k-1)) +
    leakage per core, plus package_idle + uncore_active x f / f_max. `activity` 1 is the
    workload c_eff was calibrated on."""
    m = load_machine(name)
    p = m.spec.power
    fd = m.spec.freq_domains[0]
    opp = next(o for o in fd.opps if o.khz == khz)
    volts, ghz = opp.uv / 1e6, khz / 1e6
    dynamic = activity * p.c_eff * volts**2 * ghz
    core = dynamic * (1 + p.smt_power_factor * (threads - 1)) + p.core_leakage_mw
    cores = m.ncores // m.packages
    return p.package_idle_mw + p.uncore_active_mw * khz / fd.opps[-1].khz + cores * core
