"""The human summary of one run, printed by `schedsim run` (rich tables)."""

from __future__ import annotations

import math
from typing import Any

from rich.console import Console
from rich.table import Table

from ..results import CPU_STAT_FIELDS, RunResult


def format_value(value: Any) -> str:
    """Numbers for people: thousands separators for integers, 4 significant digits for floats."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return str(value)
        if value == 0:
            return "0"
        if abs(value) < 1e-3:
            return f"{value:.3e}"
        if abs(value) >= 1e6:
            return f"{value:,.0f}"
        if abs(value) >= 1e3:
            return f"{value:,.1f}"
        digits = max(0, 3 - int(math.floor(math.log10(abs(value)))))
        return f"{value:,.{min(digits, 6)}f}"
    return str(value)


def _kv_table(title: str, rows: list[tuple[str, Any]]) -> Table:
    table = Table(title=title, title_justify="left", show_header=False, box=None, pad_edge=False)
    table.add_column(style="bold")
    table.add_column(justify="right")
    for key, value in rows:
        table.add_row(key, format_value(value))
    return table


def _params(params: dict[str, Any]) -> str:
    return ",".join(f"{k}={v}" for k, v in params.items())


def _idle_state_order(config: dict[str, Any]) -> dict[str, int]:
    """Idle-state names, shallowest first, as the machine lists them."""
    order: dict[str, int] = {}
    for states in (config.get("machine", {}).get("idle_states") or {}).values():
        for state in states:
            order.setdefault(state["name"], len(order))
    return order


def cpu_max_text(group: dict[str, Any]) -> str:
    """A CgroupSpec's cpu.max as the file reads: `QUOTA PERIOD` or `max PERIOD`."""
    quota = group.get("quota_us")
    return f"{'max' if quota is None else quota} {group.get('period_us', 100000)}"


def print_cgroups(console: Console, result: RunResult, config: dict[str, Any] | None) -> None:
    """One column per cgroup: its cpu.weight and cpu.max, then its cpu.stat, one row per field
    as the files read, then any other per-group value the core reports (`period_phase_us`).
    A group the workload created itself (rt-app's `taskgroup`) has the default settings."""
    stats = result.json.get("cgroups") or {}
    if not stats:
        return
    defined = {g["path"]: g for g in (config or {}).get("cgroups") or []}
    paths = [p for p in defined if p in stats] + [p for p in stats if p not in defined]
    table = Table(title="cgroups: cpu.weight, cpu.max, cpu.stat", title_justify="left")
    table.add_column("")
    for path in paths:
        table.add_column(path, justify="right")
    default = {"weight": 100, "quota_us": None, "period_us": 100_000}
    table.add_row(
        "cpu.weight", *(format_value(defined.get(p, default).get("weight")) for p in paths)
    )
    table.add_row("cpu.max", *(cpu_max_text(defined.get(p, default)) for p in paths))
    extra = [k for p in paths for k in (stats[p] or {}) if k not in CPU_STAT_FIELDS]
    for key in [*CPU_STAT_FIELDS, *dict.fromkeys(extra)]:
        table.add_row(key, *(format_value((stats[p] or {}).get(key)) for p in paths))
    console.print(table)


def print_summary(console: Console, result: RunResult, config: dict[str, Any] | None) -> None:
    data = result.json
    cfg = config or {}
    kernel = cfg.get("kernel", {})
    cpufreq = cfg.get("cpufreq", {})
    machine = cfg.get("machine", {}).get("name", data.get("machine"))
    workload = data.get("workload") or cfg.get("workload", {})
    sim = result.sim

    console.print(
        f"[bold]schedsim {data.get('schedsim_version', '')}[/bold]  machine [bold]{machine}[/bold]"
        f"  kernel {kernel.get('version', data.get('kernel', '-'))} (HZ={kernel.get('hz', '-')})"
        f"  cpufreq {cpufreq.get('driver') or 'none'}/{cpufreq.get('governor', '-')}"
        f"  invariance {cpufreq.get('invariance', '-')}  seed {data.get('seed', '-')}"
    )
    params = workload.get("params") or {}
    wl = workload.get("name", "-") + (f":{_params(params)}" if params else "")
    wall = sim.get("wall_s")
    simulated = sim.get("simulated_s")
    speed = simulated / wall if isinstance(wall, int | float) and wall and simulated else None
    console.print(
        f"workload [bold]{wl}[/bold]  simulated {format_value(simulated)} s  "
        f"{format_value(sim.get('events'))} events in {format_value(wall)} s wall  "
        f"({format_value(sim.get('events_per_s'))} events/s, {format_value(speed)}x real time)"
    )
    measured_from = sim.get("measured_from_s")
    if measured_from:
        console.print(
            f"power, turbostat and per-CPU figures after the {format_value(measured_from)} s "
            "warm-up, like the metrics"
        )

    primary = result.primary
    if primary:
        better = "higher" if primary.get("higher_is_better") else "lower"
        console.print(
            f"\n[bold]{primary.get('name')}[/bold] = {format_value(primary.get('value'))}"
            f"  ({better} is better)"
        )

    if result.metrics:
        console.print()
        console.print(_kv_table("Metrics", list(result.metrics.items())))

    power = result.power
    sched = result.sched
    console.print()
    grid = Table.grid(padding=(0, 6))
    grid.add_row(
        _kv_table(
            "Power",
            [
                ("energy (J)", power.get("energy_j")),
                ("avg package (W)", power.get("avg_package_w")),
                ("perf per watt", power.get("perf_per_watt")),
            ],
        ),
        _kv_table(
            "Scheduler",
            [
                ("context switches", sched.get("context_switches")),
                ("migrations", sched.get("migrations")),
                ("wakeups", sched.get("wakeups")),
                ("forks", sched.get("forks")),
            ],
        ),
    )
    console.print(grid)

    if result.json.get("cgroups"):
        console.print()
        print_cgroups(console, result, cfg)

    ts = result.turbostat
    if ts:
        console.print()
        table = Table(title="Turbostat summary", title_justify="left")
        columns = [
            ("Avg_MHz", "avg_mhz"),
            ("Busy%", "busy_pct"),
            ("Bzy_MHz", "bzy_mhz"),
            ("TSC_MHz", "tsc_mhz"),
            ("PkgWatt", "pkg_watt"),
            ("CorWatt", "cor_watt"),
        ]
        for label, _ in columns:
            table.add_column(label, justify="right")
        table.add_row(*(format_value(ts.get(key)) for _, key in columns))
        console.print(table)
        cstates = ts.get("cstates") or {}
        if cstates:
            order = _idle_state_order(cfg)
            names = sorted(cstates, key=lambda n: (order.get(n, len(order)), n))
            table = Table(title="Idle-state residency (% of CPU time)", title_justify="left")
            for name in names:
                table.add_column(name, justify="right")
            table.add_row(*(format_value(cstates[n]) for n in names))
            console.print(table)

    cpus = data.get("cpus") or []
    if cpus:
        console.print()
        table = Table(title="Per CPU", title_justify="left")
        for label in ("CPU", "Busy%", "Avg MHz", "Ctx switches"):
            table.add_column(label, justify="right")
        for c in cpus:
            busy, idle = c.get("busy_ns"), c.get("idle_ns")
            total = (busy or 0) + (idle or 0)
            pct = 100.0 * busy / total if busy is not None and total > 0 else None
            khz = c.get("avg_khz")
            table.add_row(
                str(c.get("cpu")),
                format_value(pct),
                format_value(khz / 1000.0 if isinstance(khz, int | float) else None),
                format_value(c.get("context_switches")),
            )
        console.print(table)
