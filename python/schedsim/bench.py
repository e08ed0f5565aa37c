"""`schedsim bench`: engine throughput on fixed scenarios (DESIGN "Interfaces").

Each scenario is a `custom` workload run under the performance governor for a fixed simulated
duration; the figures come from the result's `sim` section: events per wall second and
simulated seconds per wall second.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from . import programs as p
from .errors import ConfigError
from .machines import Machine, list_machines, load_machine
from .runner import run

SIMSO_PERIODS_MS = (5, 10, 20, 25, 40, 50, 100)
UTIL_CAP = 0.9


def uunifast_discard(
    rng: random.Random, n: int, total: float, cap: float = UTIL_CAP
) -> list[float]:
    """UUniFast (Bini & Buttazzo 2005) with discard (Davis & Burns 2009): draw `n` utilisations
    summing to `total`, redrawing the whole set while any exceeds `cap`."""
    if total > n * cap:
        raise ConfigError(f"UUniFast: {n} tasks of at most {cap} cannot sum to {total}")
    while True:
        utils = []
        remaining = total
        for i in range(1, n):
            next_remaining = remaining * rng.random() ** (1.0 / (n - i))
            utils.append(remaining - next_remaining)
            remaining = next_remaining
        utils.append(remaining)
        if all(u <= cap for u in utils):
            return utils


def periodic_taskset(n: int, total: float, seed: int = 1) -> list[tuple[float, int]]:
    """The SimSo-style task set: (utilisation, period in ms) per task. Utilisations come first
    (UUniFast-discard), then one period per task drawn from SIMSO_PERIODS_MS, all from
    `random.Random(seed)`."""
    rng = random.Random(seed)
    utils = uunifast_discard(rng, n, total)
    periods = [rng.choice(SIMSO_PERIODS_MS) for _ in range(n)]
    return list(zip(utils, periods, strict=True))


def periodic_workload(machine: Machine, n: int, total: float, seed: int = 1) -> dict[str, Any]:
    """n periodic tasks: loop forever { run u·period·f_max cycles; timer period }."""
    f_max_khz = machine.max_khz
    tasks = []
    for i, (u, period_ms) in enumerate(periodic_taskset(n, total, seed)):
        period_ns = period_ms * 1_000_000
        cycles = u * period_ns * f_max_khz / 1e6  # kHz x ns = 1e-6 cycles
        tasks.append(p.task(f"periodic{i}", p.loop(p.run(round(cycles)), p.timer(period_ns))))
    return p.custom_workload(tasks)


def pingpong_workload(pairs: int, cycles: int = 20_000) -> dict[str, Any]:
    """`pairs` pairs of tasks waking each other through two channels per pair."""
    tasks, channels = [], []
    for i in range(pairs):
        a2b, b2a = f"a2b{i}", f"b2a{i}"
        channels += [p.channel(a2b), p.channel(b2a)]
        tasks.append(p.task(f"ping{i}", p.loop(p.run(cycles), p.send(a2b), p.recv(b2a))))
        tasks.append(p.task(f"pong{i}", p.loop(p.recv(a2b), p.run(cycles), p.send(b2a))))
    return p.custom_workload(tasks, channels)


@dataclass(frozen=True)
class Scenario:
    name: str
    machine: str
    description: str
    build: Callable[[Machine], dict[str, Any]]


SCENARIOS: dict[str, Scenario] = {
    s.name: s
    for s in (
        Scenario(
            "pingpong-8cpu-64",
            "skylake-8x",
            "32 pairs of tasks waking each other (run 20000 cycles, send, recv)",
            lambda m: pingpong_workload(32),
        ),
        Scenario(
            "simso-8cpu-40",
            "skylake-8x",
            "40 periodic tasks, UUniFast utilisations summing to 6.0 (each <= 0.9), seed 1",
            lambda m: periodic_workload(m, 40, 6.0, seed=1),
        ),
        Scenario(
            "periodic-256cpu-1280",
            "epyc7742-2s",
            "1280 periodic tasks, UUniFast utilisations summing to 192 (each <= 0.9), seed 1",
            lambda m: periodic_workload(m, 1280, 192.0, seed=1),
        ),
    )
}


def run_scenario(scenario: Scenario, duration_ns: int) -> dict[str, float]:
    machine = load_machine(scenario.machine)
    result = run(machine, scenario.build(machine), governor="performance", duration=duration_ns)
    sim = result.sim
    wall = float(sim["wall_s"])
    return {
        "events_per_s": float(sim["events_per_s"]),
        "sim_speed": float(sim["simulated_s"]) / wall if wall > 0 else None,
        "events": int(sim["events"]),
        "wall_s": wall,
    }


def run_bench(
    duration_ns: int,
    names: Iterable[str] | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Run the scenarios; `{"scenarios": {NAME: {...}}, "skipped": {NAME: reason}}`."""
    selected = list(names) if names else list(SCENARIOS)
    for name in selected:
        if name not in SCENARIOS:
            raise ConfigError(f"unknown scenario '{name}'; allowed: {', '.join(SCENARIOS)}")
    presets = set(list_machines())
    out: dict[str, Any] = {"scenarios": {}, "skipped": {}}
    for name in selected:
        scenario = SCENARIOS[name]
        if scenario.machine not in presets:
            out["skipped"][name] = f"machine preset '{scenario.machine}' is not available"
            continue
        if progress:
            progress(name)
        out["scenarios"][name] = run_scenario(scenario, duration_ns)
    return out
