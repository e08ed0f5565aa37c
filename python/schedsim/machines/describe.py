"""`schedsim machines --describe NAME`: a preset's expansion and the source of every value."""

from __future__ import annotations

from collections.abc import Iterable

from rich.console import Console
from rich.table import Table

from ..report import format_value
from . import Machine

# Above this many CPUs the per-CPU table is left out (the topology table says it all).
CPU_TABLE_MAX = 64


def _mhz(khz: int) -> str:
    return f"{khz / 1000:g}"


def cpu_ranges(cpus: Iterable[int]) -> str:
    """`[0, 1, 2, 5, 7, 8]` -> `0-2,5,7-8`."""
    ids = sorted(set(cpus))
    parts: list[str] = []
    i = 0
    while i < len(ids):
        j = i
        while j + 1 < len(ids) and ids[j + 1] == ids[j] + 1:
            j += 1
        parts.append(str(ids[i]) if i == j else f"{ids[i]}-{ids[j]}")
        i = j + 1
    return ",".join(parts)


def _driver(m: Machine) -> str:
    if m.preset.machine.cpufreq_driver:
        return m.preset.machine.cpufreq_driver
    if m.arch == "x86":
        if m.vendor == "intel":
            return "intel_pstate / intel_cpufreq (by kernel version and HWP)"
        return "acpi-cpufreq"
    return "none (fixed frequency)"


def describe_machine(console: Console, m: Machine) -> None:
    spec = m.spec
    preset = m.preset
    console.print(f"[bold]{m.name}[/bold]: {preset.machine.description}")
    console.print(
        f"arch {m.arch}, vendor {m.vendor}, model {preset.machine.model}; {m.packages} "
        f"package(s), {m.nodes} NUMA node(s), {m.ncores} cores x {m.smt} threads = {m.ncpus} "
        f"CPUs ({preset.topology.cpu_numbering} numbering); TSC {_mhz(spec.tsc_khz)} MHz; "
        f"cpufreq driver {_driver(m)}"
    )

    # ---- topology
    topo = Table(title="Topology", title_justify="left")
    for col in ("package", "node", "llc", "cluster", "core type", "cores", "CPUs"):
        topo.add_column(col, justify="left" if col in ("core type", "CPUs") else "right")
    groups: dict[tuple[int, int, int, int, int], list[int]] = {}
    for c in spec.cpus:
        groups.setdefault((c.package, c.node, c.llc, c.cluster, c.core_type), []).append(c.id)
    for (pkg, node, llc, cluster, ct), ids in sorted(groups.items()):
        cores = len({spec.cpus[i].core for i in ids})
        topo.add_row(
            str(pkg),
            str(node),
            str(llc),
            str(cluster),
            spec.core_types[ct].name,
            str(cores),
            cpu_ranges(ids),
        )
    console.print(topo)
    if spec.numa_distance:
        console.print(f"NUMA distance: {spec.numa_distance}")
    if m.ncpus <= CPU_TABLE_MAX:
        cpus = Table(title="CPUs (Linux numbering)", title_justify="left")
        for col in ("cpu", "core", "cluster", "llc", "node", "package", "core type", "freq domain"):
            cpus.add_column(col, justify="right")
        for c in spec.cpus:
            cpus.add_row(
                *map(str, (c.id, c.core, c.cluster, c.llc, c.node, c.package)),
                spec.core_types[c.core_type].name,
                str(c.freq_domain),
            )
        console.print(cpus)
    else:
        console.print(f"(per-CPU table left out for {m.ncpus} CPUs: see load_machine().spec.cpus)")

    types = Table(title="Core types", title_justify="left")
    for col in ("name", "capacity-dmips-mhz", "smt_share", "kernel cycles"):
        types.add_column(col)
    for ct in spec.core_types:
        types.add_row(
            ct.name,
            str(ct.capacity_dmips_mhz),
            ", ".join(f"{s:g}" for s in ct.smt_share) or "-",
            ", ".join(f"{k} {v:g}" for k, v in ct.kernel_cycles.items()) or "-",
        )
    console.print(types)

    # ---- frequency domains, grouped when identical (per-core domains on servers)
    derived = spec.power.model != "em"
    seen: dict[str, list[int]] = {}
    for i, fd in enumerate(spec.freq_domains):
        seen.setdefault(fd.model_dump_json(), []).append(i)
    for domains in seen.values():
        fd = spec.freq_domains[domains[0]]
        members = [c.id for c in spec.cpus if c.freq_domain in domains]
        label = f"domain {domains[0]}" if len(domains) == 1 else f"{len(domains)} domains"
        console.print(
            f"[bold]Frequency {label}[/bold] ({fd.granularity}, coordination "
            f"{fd.coordination}): CPUs {cpu_ranges(members)}; base {_mhz(fd.base_khz)} MHz, "
            f"transition latency {fd.transition_latency_ns} ns"
        )
        table = Table()
        for col in ("MHz", "mV", "power mW"):
            table.add_column(col, justify="right")
        for o in fd.opps:
            power = "model" if derived and not o.power_mw else format_value(o.power_mw)
            table.add_row(_mhz(o.khz), f"{o.uv / 1000:g}" if o.uv else "-", power)
        console.print(table)
        if fd.turbo_khz:
            console.print(
                f"turbo (1C, 2C, ...) {', '.join(_mhz(t) for t in fd.turbo_khz)} MHz "
                "(MSR_TURBO_RATIO_LIMIT: the highest frequency with k active cores)"
            )
        else:
            console.print("turbo: no per-active-core table")

    # ---- HWP and power limits
    if preset.hwp is not None:
        h = preset.hwp
        state = "enabled" if spec.hwp is not None else "present but disabled (machine.hwp = false)"
        console.print(
            f"[bold]HWP[/bold] {state}: highest {_mhz(h.highest_khz)}, guaranteed "
            f"{_mhz(h.guaranteed_khz)}, most efficient {_mhz(h.efficient_khz)}, lowest "
            f"{_mhz(h.lowest_khz)} MHz; default EPP {h.default_epp:#04x}; stand-in: sample "
            f"{h.sample_ns} ns, headroom {h.headroom_epp0:g} (EPP 0) .. {h.headroom_epp255:g} "
            f"(EPP 255), activity window {h.activity_window_ns} ns, ramp up {h.ramp_up_khz} / "
            f"down {h.ramp_down_khz} kHz per sample"
        )
    else:
        console.print("[bold]HWP[/bold]: no")
    p = spec.power
    if p.power_limit_mw or p.power_limit2_mw:
        console.print(
            f"[bold]Power limits[/bold] per package: PL1 {p.power_limit_mw / 1000:g} W over "
            f"{p.power_limit_tau_ms:g} ms"
            + (f", PL2 {p.power_limit2_mw / 1000:g} W" if p.power_limit2_mw else ", no PL2")
        )
    else:
        console.print("[bold]Power limits[/bold]: none")
    if spec.storage is not None:
        console.print(
            f"[bold]Storage[/bold]: fsync {spec.storage.fsync_us:g} us "
            "(the default of dbench's flush_io_us and pgbench's wal_flush_us)"
        )
    else:
        console.print("[bold]Storage[/bold]: not described (the benchmarks' measured defaults)")

    # ---- idle states
    for tname, states in spec.idle_states.items():
        table = Table(title=f"Core idle states ({tname})", title_justify="left")
        table.add_column("#", justify="right")
        table.add_column("state", no_wrap=True)
        for col in (
            "exit latency us",
            "target residency us",
            "power mW",
            "turbo active",
            "holds P-state",
        ):
            table.add_column(col, justify="right")
        for i, s in enumerate(states):
            table.add_row(
                str(i),
                s.name,
                str(s.exit_latency_us),
                str(s.target_residency_us),
                format_value(s.power_mw),
                "yes" if s.turbo_active else "no",
                "yes" if s.holds_pstate_request else "no",
            )
        console.print(table)
    if spec.package_idle_states:
        table = Table(title="Package idle states", title_justify="left")
        table.add_column("state", no_wrap=True)
        for col in ("needs every core in", "power mW", "extra exit latency us"):
            table.add_column(col, justify="right")
        for ps in spec.package_idle_states:
            names = dict.fromkeys(
                states[ps.min_core_state].name
                for states in spec.idle_states.values()
                if ps.min_core_state < len(states)
            )
            core_state = " / ".join(names) or "?"
            table.add_row(
                ps.name,
                f"{ps.min_core_state} ({core_state}) or deeper",
                format_value(ps.power_mw),
                str(ps.exit_latency_us),
            )
        console.print(table)
    else:
        console.print("package idle states: none")

    power = p.model_dump(exclude={"power_limit_mw", "power_limit_tau_ms", "power_limit2_mw"})
    tdp = f"TDP {preset.power.tdp_w:g} W; " if preset.power.tdp_w else ""
    console.print(
        "[bold]Power model[/bold]: "
        + tdp
        + ", ".join(f"{k} {format_value(v)}" for k, v in power.items())
    )

    # ---- sources
    console.print(f"\n[bold]Sources[/bold] ({m.path}):")
    console.print(m.header_comment(), markup=False, highlight=False)
    sources = Table(title="Every value and its source", title_justify="left")
    sources.add_column("key", no_wrap=True)
    sources.add_column("value")
    sources.add_column("source")
    for v in m.sources():
        sources.add_row(v.key, v.value, v.source or "(none)")
    console.print(sources, markup=False)
