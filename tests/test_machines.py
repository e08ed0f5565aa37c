"""Preset expansion, checked against the source data: seed 000's turbo tables, the Arm
device-tree energy models of shared/data/machines, intel_idle's tables, the TDP calibrations and
seed 001's socket power; and the preset validation."""

import csv
import math
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import schedsim
from schedsim import programs
from schedsim.errors import ConfigError
from schedsim.machines import list_machines, load_machine, preset_dir
from schedsim.machines.preset import em_power_mw
from schedsim.machines.sources import split_comment, value_sources
from schedsim.spec import MachineSpec
from support import x86_package_power_mw

# Copies of the reference data (tests/reference/README.md says where each file comes from).
SHARED = Path(__file__).parent / "reference"
REPO = preset_dir().parents[2]

DESIGN_NAMES = [
    "skylake-8x",
    "broadwell-80x",
    "haswell-48x",
    "skylake-sp-104",
    "epyc7742-2s",
    "sdm845",
    "power10-smt8",
    "juno-r0",
    "hikey960",
    "rk3399",
    "rk3588",
    "sm8250",
]

# name: (CPUs, packages, NUMA nodes, SMT, domain granularity, domains, LLCs) per DESIGN
# "Hardware": one frequency domain per package on the Skylake client part, per core on the
# server parts, per cluster on the Arm SoCs.
EXPECTED = {
    "skylake-8x": (8, 1, 1, 2, "package", 1, 1),
    "broadwell-80x": (80, 2, 2, 2, "core", 40, 2),
    "haswell-48x": (48, 2, 2, 2, "core", 24, 2),
    "skylake-sp-104": (104, 2, 2, 2, "core", 52, 2),
    "epyc7742-2s": (256, 2, 2, 2, "core", 128, 32),
    "power10-smt8": (64, 1, 1, 8, "package", 1, 8),
    "sdm845": (8, 1, 1, 1, "cluster", 2, 1),
    "sm8250": (8, 1, 1, 1, "cluster", 3, 1),
    "juno-r0": (6, 1, 1, 1, "cluster", 2, 2),
    "hikey960": (8, 1, 1, 1, "cluster", 2, 2),
    "rk3399": (6, 1, 1, 1, "cluster", 2, 2),
    "rk3588": (8, 1, 1, 1, "cluster", 3, 1),
}


def test_presets_listed() -> None:
    assert sorted(list_machines()) == sorted(DESIGN_NAMES)
    assert set(EXPECTED) == set(DESIGN_NAMES)


@pytest.mark.parametrize("name", list_machines())
def test_every_preset_expands_to_a_valid_machine_spec(name: str) -> None:
    m = load_machine(name)
    spec = MachineSpec.model_validate(m.spec.model_dump(mode="json"))
    assert spec.name == name
    assert [c.id for c in spec.cpus] == list(range(len(spec.cpus)))
    for c in spec.cpus:
        assert c.core_type < len(spec.core_types)
        assert c.freq_domain < len(spec.freq_domains)
    for fd in spec.freq_domains:
        khz = [o.khz for o in fd.opps]
        assert khz == sorted(set(khz))
        assert khz[0] <= fd.base_khz <= khz[-1]
    for ct in spec.core_types:
        assert ct.name in spec.idle_states
        if ct.smt_share:
            assert ct.smt_share[0] == 1.0
    for ps in spec.package_idle_states:
        for states in spec.idle_states.values():
            assert 0 < ps.min_core_state < len(states)


@pytest.mark.parametrize("name", list_machines())
def test_topology_and_domain_granularity(name: str) -> None:
    ncpus, packages, nodes, smt, granularity, ndomains, nllc = EXPECTED[name]
    m = load_machine(name)
    spec = m.spec
    assert (m.ncpus, m.packages, m.nodes, m.smt) == (ncpus, packages, nodes, smt)
    assert len({c.package for c in spec.cpus}) == packages
    assert len({c.node for c in spec.cpus}) == nodes
    assert len({c.llc for c in spec.cpus}) == nllc
    assert {fd.granularity for fd in spec.freq_domains} == {granularity}
    assert len(spec.freq_domains) == ndomains
    # SMT siblings: every core has `smt` threads, in one package, node, LLC and domain.
    cores: dict[int, list] = {}
    for c in spec.cpus:
        cores.setdefault(c.core, []).append(c)
    assert len(cores) * smt == ncpus
    for threads in cores.values():
        assert len(threads) == smt
        assert len({(t.package, t.node, t.llc, t.cluster, t.freq_domain) for t in threads}) == 1
    # a frequency domain never spans packages or core types
    for d in range(ndomains):
        members = [c for c in spec.cpus if c.freq_domain == d]
        assert len({c.package for c in members}) == 1
        assert len({c.core_type for c in members}) == 1
    coordination = {fd.coordination for fd in spec.freq_domains}
    assert coordination == ({"max-active"} if spec.arch == "x86" else {"max"})
    # in a max-active domain a halted core (POLL, C1) keeps its request and is an active
    # core for turbo as well; C1E and deeper states make none
    for states in spec.idle_states.values():
        holding = [s.name for s in states if s.holds_pstate_request]
        assert holding == (["POLL", "C1"] if spec.arch == "x86" else [])
        assert all(s.turbo_active for s in states if s.holds_pstate_request)


@pytest.mark.parametrize("name", list_machines())
def test_every_value_line_carries_a_source_comment(name: str) -> None:
    text = (preset_dir() / f"{name}.toml").read_text()
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith(("#", "[")) or stripped in ("]", "opps = ["):
            continue
        assert "#" in stripped, f"{name}: no source comment on: {line}"
    sources = value_sources(text)
    assert sources
    for v in sources:
        assert v.source, f"{name}:{v.line}: {v.key} has no source comment"
    # estimates say why on their line (more than the bare tag)
    for v in sources:
        if "[est]" in v.source:
            assert len(v.source.replace("[est]", "").strip()) > 10, f"{name}: {v.key}"


def test_value_sources_paths() -> None:
    sources = {v.key: v for v in value_sources((preset_dir() / "skylake-8x.toml").read_text())}
    assert sources["power.c_eff"].value == "2740"
    assert "calibrated" in sources["power.c_eff"].source
    assert sources["idle_states.skl[2].name"].value == '"C1E"'
    assert sources["idle_states.skl[2].exit_latency_us"].source == "[idle]"
    assert sources["package_idle_states[1].min_core_state"].value == '"C6"'
    big = {v.key: v for v in value_sources((preset_dir() / "sdm845.toml").read_text())}
    assert big["opp_tables.big.opps[9]"].value == "[1056000, 648000]"
    assert "[rb3]" in big["opp_tables.big.opps[9]"].source
    assert split_comment('name = "a # b"  # src') == ('name = "a # b"', "src")


# ---- x86: seed 000's turbo tables, intel_idle, TDP calibration ------------------------------

# seed 000 section 5.1, transcribed: EFFIC, BASE and the 1C, 2C, ... turbo frequencies (MHz).
SEED000 = {
    "skylake-8x": (800, 3500, [3900, 3900, 3800, 3700]),
    "broadwell-80x": (1200, 2200, [3600, 3600, 3400, 3300, 3200, 3100, 3000, 2900]),
    "haswell-48x": (1200, 2300, [3100, 3100, 2900, 2800, 2700] + [2600] * 7),
}
SEED000_NAMES = {
    "skylake-8x": "8x-SKYLAKE-UMA",
    "broadwell-80x": "80x-BROADWELL-NUMA",
    "haswell-48x": "48x-HASWELL-NUMA",
}


def seed000_tables() -> dict[str, tuple[int, int, list[int]]]:
    """EFFIC, BASE and the turbo bins of each machine, read from the seed file."""
    path = SHARED / "seeds" / "000_d24d9f93e0dce4f2.txt"
    if not path.is_file():
        pytest.skip("tests/reference data not present")
    out: dict[str, tuple[int, int, list[int]]] = {}
    current = None
    bins: dict[int, int] = {}
    effic = base = 0
    for line in path.read_text().splitlines():
        m = re.match(r"^\* (\S+?):?$", line.strip())
        if m and m.group(1) in SEED000_NAMES.values():
            current, bins, effic, base = m.group(1), {}, 0, 0
            continue
        if current is None:
            continue
        m = re.match(r"^\s+(EFFIC|BASE|(\d+)C)\s+(\d+) \|", line)
        if m:
            if m.group(1) == "EFFIC":
                effic = int(m.group(3))
            elif m.group(1) == "BASE":
                base = int(m.group(3))
            else:
                bins[int(m.group(2))] = int(m.group(3))
            out[current] = (effic, base, [bins[k] for k in sorted(bins)])
        elif line.strip().startswith("5.2 SETUP"):
            break
    return out


@pytest.mark.parametrize("name", list(SEED000))
def test_intel_turbo_tables_equal_seed_000(name: str) -> None:
    effic, base, turbo = SEED000[name]
    assert seed000_tables()[SEED000_NAMES[name]] == (effic, base, turbo)
    fd = load_machine(name).spec.freq_domains[0]
    assert fd.opps[0].khz == effic * 1000
    assert fd.opps[-1].khz == turbo[0] * 1000
    assert fd.base_khz == base * 1000
    assert [o.khz for o in fd.opps] == list(range(effic * 1000, turbo[0] * 1000 + 1, 100_000))
    assert fd.turbo_khz[: len(turbo)] == [t * 1000 for t in turbo]
    cores = len({c.core for c in load_machine(name).spec.cpus}) // load_machine(name).packages
    assert len(fd.turbo_khz) == cores  # one bin per core of the package
    # Broadwell: 9C..20C is the all-core turbo, below the 8C bin
    assert all(t <= turbo[-1] * 1000 for t in fd.turbo_khz[len(turbo) :])


def test_skylake_topology() -> None:
    m = load_machine("skylake-8x")
    spec = m.spec
    # x86 numbering: SMT siblings are cpu and cpu + 4.
    for cpu in range(4):
        assert spec.cpus[cpu].core == spec.cpus[cpu + 4].core == cpu
    assert spec.core_types[0].smt_share == [1.0, 0.62]
    assert spec.arch == "x86"
    assert spec.tsc_khz == spec.freq_domains[0].base_khz


def test_thread_major_numbering_on_the_two_socket_servers() -> None:
    spec = load_machine("broadwell-80x").spec
    assert [c.package for c in spec.cpus] == [0] * 20 + [1] * 20 + [0] * 20 + [1] * 20
    assert spec.cpus[0].core == spec.cpus[40].core
    assert spec.cpus[20].core == spec.cpus[60].core
    assert spec.numa_distance == [[10, 21], [21, 10]]
    epyc = load_machine("epyc7742-2s").spec
    assert [c.package for c in epyc.cpus[:128]] == [0] * 64 + [1] * 64
    # 16 CCXs of 4 cores per package, each its own LLC
    per_llc: dict[int, set[int]] = {}
    for c in epyc.cpus:
        per_llc.setdefault(c.llc, set()).add(c.core)
    assert len(per_llc) == 32
    assert all(len(cores) == 4 for cores in per_llc.values())
    assert epyc.freq_domains[0].turbo_khz == []
    assert [o.khz for o in epyc.freq_domains[0].opps] == [
        1_500_000,
        2_000_000,
        2_250_000,
        3_400_000,
    ]
    assert epyc.power.power_limit_mw == 225_000
    assert epyc.tsc_khz == 2_250_000


def test_skylake_idle_states_from_intel_idle() -> None:
    states = load_machine("skylake-8x").spec.idle_states["skylake"]
    table = {s.name: (s.exit_latency_us, s.target_residency_us, s.turbo_active) for s in states}
    assert [s.name for s in states] == ["POLL", "C1", "C1E", "C3", "C6", "C7s", "C8", "C9", "C10"]
    assert table["C1"] == (2, 2, True)
    assert table["C1E"] == (10, 20, True)
    assert table["C3"] == (70, 100, False)
    assert table["C6"] == (85, 200, False)
    assert table["C10"] == (890, 5000, False)


INTEL_IDLE_TABLES = {
    "skylake-8x": "skl_cstates",
    "broadwell-80x": "bdw_cstates",
    "haswell-48x": "hsw_cstates",
    "skylake-sp-104": "skx_cstates",
}


@pytest.mark.parametrize("name", list(INTEL_IDLE_TABLES))
def test_intel_idle_states_equal_the_intel_idle_tables(name: str) -> None:
    path = SHARED / "data" / "x86" / "intel_idle_cstate_tables.csv"
    if not path.is_file():
        pytest.skip("tests/reference data not present")
    rows = {
        r["state"]: (int(r["exit_latency_us"]), int(r["target_residency_us"]))
        for r in csv.DictReader(path.open())
        if r["table"] == INTEL_IDLE_TABLES[name]
    }
    (states,) = load_machine(name).spec.idle_states.values()
    assert states[0].name == "POLL"
    for s in states[1:]:
        assert (s.exit_latency_us, s.target_residency_us) == rows[s.name], s.name
    # the server dies offer the states their CPUID MWAIT leaf reports: no C7s-C10
    names = [s.name for s in states[1:]]
    expected = {
        "skylake-8x": list(rows),
        "broadwell-80x": ["C1", "C1E", "C3", "C6"],
        "haswell-48x": ["C1", "C1E", "C3", "C6"],
        "skylake-sp-104": ["C1", "C1E", "C6"],
    }[name]
    assert names == expected


@pytest.mark.parametrize(
    "name", ["skylake-8x", "broadwell-80x", "haswell-48x", "skylake-sp-104", "epyc7742-2s"]
)
def test_x86_power_models_reach_tdp_at_base(name: str) -> None:
    """c_eff was calibrated so that every thread busy at base draws the TDP."""
    m = load_machine(name)
    base = m.spec.freq_domains[0].base_khz
    tdp_w = m.preset.power.tdp_w
    assert tdp_w is not None
    assert x86_package_power_mw(name, base, m.smt) / 1000 == pytest.approx(tdp_w, rel=0.005)
    # and the power limit (PL1 / PPT) is the TDP: all-core turbo is above it
    assert m.spec.power.power_limit_mw == tdp_w * 1000
    top = m.spec.freq_domains[0].opps[-1].khz
    assert x86_package_power_mw(name, top, m.smt) > m.spec.power.power_limit_mw


INTEL_PRESETS = ["skylake-8x", "broadwell-80x", "haswell-48x", "skylake-sp-104"]


@pytest.mark.parametrize("name", INTEL_PRESETS)
def test_ordinary_code_switches_less_than_the_tdp_workload(name: str) -> None:
    """The Intel presets run the simulated code at 0.64 of the TDP workload's switching
    activity; the machine's own model gives the busy package that power (performance governor
    held at base, every thread busy)."""
    m = load_machine(name)
    assert m.spec.power.activity_factor == 0.64
    base = m.spec.freq_domains[0].base_khz
    loop = programs.loop(programs.run(1_000_000))
    hogs = programs.custom_workload(
        [programs.task(f"hog{i}", loop, cpus=[i], start_cpu=i) for i in range(m.ncpus)]
    )
    r = schedsim.run(
        m,
        hogs,
        kernel="5.2",
        driver="intel_cpufreq",
        governor="performance",
        sets=[f"scaling_max_freq={base}"],
        duration="50ms",
    )
    per_package = x86_package_power_mw(name, base, m.smt, activity=0.64)
    measured_mw = float(r.json["turbostat"]["pkg_watt"]) * 1000 / m.packages
    assert measured_mw == pytest.approx(per_package, rel=0.01)
    # and it is well below the TDP that the calibration workload draws at base
    assert per_package < 0.85 * m.preset.power.tdp_w * 1000


def test_the_activity_factor_is_the_broadwell_all_core_turbo_bound() -> None:
    """The value's derivation: an E5-2698 v4 sustains its all-core turbo (2.7 GHz) within the
    135 W TDP on ordinary code; with the preset's c_eff, V(f) and static terms that holds up to
    an activity of 0.64, which the presets use."""
    name = "broadwell-80x"
    m = load_machine(name)
    all_core = m.spec.freq_domains[0].turbo_khz[-1]
    assert all_core == 2_700_000
    tdp_mw = m.preset.power.tdp_w * 1000
    static = x86_package_power_mw(name, all_core, m.smt, activity=0.0)
    dynamic = x86_package_power_mw(name, all_core, m.smt, activity=1.0) - static
    bound = (tdp_mw - static) / dynamic
    assert bound == pytest.approx(0.643, abs=0.001)
    assert m.spec.power.activity_factor <= bound
    assert x86_package_power_mw(name, all_core, m.smt, m.spec.power.activity_factor) <= tdp_mw


def test_an_activity_factor_out_of_range_names_the_key() -> None:
    for bad in (0, -1, 3):
        with pytest.raises(ConfigError, match=r"power\.activity_factor"):
            load_machine("broadwell-80x", {"power": {"activity_factor": bad}})


def test_intel_power_limits() -> None:
    skl = load_machine("skylake-8x").spec.power
    assert (skl.power_limit_mw, skl.power_limit2_mw, skl.power_limit_tau_ms) == (
        80_000,
        100_000,
        28_000,
    )
    for name in ("broadwell-80x", "haswell-48x", "skylake-sp-104"):
        p = load_machine(name).spec.power
        assert p.power_limit2_mw == pytest.approx(1.2 * p.power_limit_mw)


def test_hwp_capabilities() -> None:
    hwp = load_machine("skylake-8x").spec.hwp
    assert hwp is not None
    assert (hwp.highest_khz, hwp.guaranteed_khz, hwp.efficient_khz, hwp.lowest_khz) == (
        3_900_000,
        3_500_000,
        800_000,
        800_000,
    )
    assert hwp.default_epp == 0x80
    sp = load_machine("skylake-sp-104").spec.hwp
    assert sp is not None
    assert (sp.highest_khz, sp.guaranteed_khz, sp.default_epp) == (3_700_000, 2_100_000, 0x80)
    # both Skylake presets average busy time over 3 ms (a measured Skylake core with HWP reaches
    # its top in just over 5 ms; tests/hardware.rs checks the fifth sample)
    assert hwp.activity_window_ns == sp.activity_window_ns == 3_000_000
    for name in ("broadwell-80x", "haswell-48x", "epyc7742-2s", "sdm845"):
        assert load_machine(name).spec.hwp is None
    # HWP switched off (firmware / override): the capabilities stay in the preset, not the spec
    off = load_machine("skylake-8x", {"machine": {"hwp": False}})
    assert off.spec.hwp is None and not off.hwp
    assert off.preset.hwp is not None


def test_package_idle_states_resolve_to_core_state_indices() -> None:
    skl = load_machine("skylake-8x").spec
    names = [s.name for s in skl.idle_states["skylake"]]
    assert [(p.name, names[p.min_core_state]) for p in skl.package_idle_states] == [
        ("PC3", "C3"),
        ("PC6", "C6"),
        ("PC7", "C7s"),
        ("PC8", "C8"),
    ]
    powers = [p.power_mw for p in skl.package_idle_states]
    assert powers == sorted(powers, reverse=True)
    assert skl.power.package_idle_mw > powers[0]
    (pc6,) = load_machine("broadwell-80x").spec.package_idle_states
    assert pc6.min_core_state == 4
    sdm = load_machine("sdm845").spec
    (cluster,) = sdm.package_idle_states
    assert cluster.min_core_state == 3
    assert all(s[3].name == "cluster-power-down" for s in sdm.idle_states.values())
    (sm,) = load_machine("sm8250").spec.package_idle_states
    assert (sm.min_core_state, sm.exit_latency_us) == (1, 6562)
    assert load_machine("rk3588").spec.package_idle_states == []


# ---- POWER10 (seed 001) ------------------------------------------------------------------------


def test_power10_smt8_folding() -> None:
    m = load_machine("power10-smt8")
    spec = m.spec
    assert spec.arch == "power"
    # core-major numbering: cpus 0-7 are core 0's threads
    assert [c.core for c in spec.cpus[:16]] == [0] * 8 + [1] * 8
    (ct,) = spec.core_types
    share = ct.smt_share
    assert len(share) == 8 and share[0] == 1.0
    assert share == sorted(share, reverse=True)  # a lone thread runs fastest
    total = [k * s for k, s in enumerate(share, start=1)]
    assert total == sorted(total)  # the core's throughput still grows with threads
    assert total[-1] == pytest.approx(2.3)
    # smooth: T(k) = k^b with T(8) = 2.3
    b = math.log(2.3) / math.log(8)
    assert share == pytest.approx([k ** (b - 1) for k in range(1, 9)], abs=6e-4)
    ((opp,),) = [fd.opps for fd in spec.freq_domains]
    assert opp.khz == 3_000_000
    assert [s.name for s in spec.idle_states["power10"]] == ["snooze", "Shared Cede"]


def test_power10_socket_power_lands_in_seed_001() -> None:
    """1CG: 4 busy threads per core for half of every period; RFC v2: one such core; aligned
    2CG: 8 busy threads per core for half of every period (a prediction, not calibrated)."""
    m = load_machine("power10-smt8")
    p = m.spec.power
    (opp,) = m.spec.freq_domains[0].opps
    cede = m.spec.idle_states["power10"][1].power_mw

    def busy(k: int) -> float:
        dyn = p.c_eff * (opp.uv / 1e6) ** 2 * opp.khz / 1e6
        return dyn * (1 + p.smt_power_factor * (k - 1)) + p.core_leakage_mw

    def socket_w(cores_busy: int, k: int) -> float:
        idle = 8 - cores_busy
        active = cores_busy * (0.5 * busy(k) + 0.5 * cede)
        return (p.package_idle_mw + idle * cede + active) / 1000

    assert socket_w(8, 4) == pytest.approx(80.0, abs=0.5)  # seed 001: 80-82 W
    assert socket_w(1, 4) == pytest.approx(44.0, abs=0.5)  # RFC v2: 44 W
    assert 89 <= socket_w(8, 8) <= 94  # seed 001 aligned 2CG: 89-94 W


# ---- Arm: the device-tree energy models of shared/data/machines ------------------------------

ARM_DATA = {
    "juno-r0": "juno_r0",
    "hikey960": "hikey960_hi3660",
    "rk3399": "rk3399",
    "rk3588": "rk3588",
    "sm8250": "sm8250",
    "sdm845": "sdm845",
}


def arm_rows(name: str) -> list[dict[str, str]]:
    path = SHARED / "data" / "machines" / f"{ARM_DATA[name]}_opp_em.csv"
    if not path.is_file():
        pytest.skip("tests/reference data not present")
    return list(csv.DictReader(path.open()))


def cluster_domains(name: str) -> dict[str, int]:
    """CSV cluster name -> frequency domain, through the CSV's first CPU of the cluster."""
    spec = load_machine(name).spec
    out = {}
    for r in arm_rows(name):
        first = int(re.split(r"[,-]", r["cpus"])[0])
        out[r["cluster"]] = spec.cpus[first].freq_domain
    return out


@pytest.mark.parametrize("name", list(ARM_DATA))
def test_arm_opps_and_em_power_match_the_data(name: str) -> None:
    """Frequencies and voltages are the data's; EM power is dpc * V^2 * f (kernel formula)."""
    spec = load_machine(name).spec
    rows = arm_rows(name)
    domains = cluster_domains(name)
    for cluster, d in domains.items():
        expected = [r for r in rows if r["cluster"] == cluster]
        opps = spec.freq_domains[d].opps
        assert [o.khz for o in opps] == [int(r["freq_khz"]) for r in expected]
        ct = spec.core_types[next(c.core_type for c in spec.cpus if c.freq_domain == d)]
        assert ct.capacity_dmips_mhz == int(expected[0]["capacity_dmips_mhz"])
        dpc = float(expected[0]["dynamic_power_coefficient"])
        for o, r in zip(opps, expected, strict=True):
            # kernel formula: uW = dpc * mV^2 * MHz / 1e6
            uw = dpc * (o.uv / 1000) ** 2 * (o.khz / 1000) / 1e6
            assert o.power_mw == pytest.approx(uw / 1000, abs=1e-6)
            if r["voltage_uv"]:  # sdm845's voltages are estimates (the DT has none)
                assert o.uv == int(r["voltage_uv"])
                assert o.power_mw == pytest.approx(float(r["em_power_mw"]), abs=1e-3)


@pytest.mark.parametrize("name", list(ARM_DATA))
def test_arm_capacities_follow_the_kernel_formula(name: str) -> None:
    """cpu_capacity = 1024 * dmips * f_max / max(dmips * f_max) equals the data's."""
    spec = load_machine(name).spec
    rows = arm_rows(name)
    perf = {
        c.id: spec.core_types[c.core_type].capacity_dmips_mhz
        * spec.freq_domains[c.freq_domain].opps[-1].khz
        for c in spec.cpus
    }
    top = max(perf.values())
    for cluster, d in cluster_domains(name).items():
        cpu = next(c.id for c in spec.cpus if c.freq_domain == d)
        expected = max(int(r["opp_capacity"]) for r in rows if r["cluster"] == cluster)
        assert 1024 * perf[cpu] // top == expected


def test_juno_cpu_numbering_is_the_boot_order() -> None:
    spec = load_machine("juno-r0").spec
    big = spec.cpus[1].core_type
    assert [c.id for c in spec.cpus if c.core_type == big] == [1, 2]
    assert [c.freq_domain for c in spec.cpus] == [0, 1, 1, 0, 0, 0]
    assert [c.cluster for c in spec.cpus] == [0, 1, 1, 0, 0, 0]


@pytest.mark.parametrize("name", ["juno-r0", "hikey960", "rk3399", "rk3588", "sm8250", "sdm845"])
def test_arm_idle_states_use_entry_plus_exit_latency(name: str) -> None:
    path = SHARED / "data" / "machines" / f"{ARM_DATA[name]}.json"
    if not path.is_file():
        pytest.skip("tests/reference data not present")
    import json

    data = json.loads(path.read_text())
    dt = {
        (s["entry_us"] + s["exit_us"], s["min_residency_us"]) for s in data.get("idle_states", [])
    }
    spec = load_machine(name).spec
    for states in spec.idle_states.values():
        assert (states[0].name, states[0].exit_latency_us) == ("WFI", 1)
        for s in states[1:]:
            if dt:
                assert (s.exit_latency_us, s.target_residency_us) in dt, s.name
            assert s.power_mw == 0  # the EM has no idle power


def test_sdm845_topology() -> None:
    m = load_machine("sdm845")
    spec = m.spec
    assert len(spec.cpus) == 8
    assert len(spec.freq_domains) == 2
    assert [c.freq_domain for c in spec.cpus] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert {c.llc for c in spec.cpus} == {0}  # one DynamIQ L3
    assert len({c.core for c in spec.cpus}) == 8  # no SMT
    little, big = (spec.core_types[spec.cpus[i].core_type] for i in (0, 4))
    assert little.capacity_dmips_mhz < big.capacity_dmips_mhz
    assert (little.capacity_dmips_mhz, big.capacity_dmips_mhz) == (611, 1024)
    assert not little.smt_share and not big.smt_share
    assert spec.power.model == "em"


def test_sdm845_opps_match_the_device_tree_table() -> None:
    import csv

    spec = load_machine("sdm845").spec
    path = SHARED / "data" / "machines" / "sdm845_opp_em.csv"
    if not path.is_file():
        pytest.skip("tests/reference data not present")
    rows = list(csv.DictReader(path.open()))
    for domain, cluster in ((0, "little"), (1, "big")):
        expected = [int(r["freq_khz"]) for r in rows if r["cluster"] == cluster]
        assert [o.khz for o in spec.freq_domains[domain].opps] == expected


def test_sdm845_capacities_follow_the_kernel_formula() -> None:
    """cpu_capacity = 1024 * dmips * f_max / max(dmips * f_max): LITTLE 385 with every DT OPP."""
    spec = load_machine("sdm845").spec
    perf = [
        spec.core_types[spec.cpus[i].core_type].capacity_dmips_mhz
        * spec.freq_domains[spec.cpus[i].freq_domain].opps[-1].khz
        for i in (0, 4)
    ]
    assert [1024 * p // max(perf) for p in perf] == [385, 1024]


def test_sdm845_em_power_is_dpc_v2_f() -> None:
    spec = load_machine("sdm845").spec
    dpc = {0: 154, 1: 442}
    for domain, fd in enumerate(spec.freq_domains):
        for o in fd.opps:
            # kernel formula: uW = dpc * mV^2 * MHz / 1e6
            uw = dpc[domain] * (o.uv / 1000) ** 2 * (o.khz / 1000) / 1e6
            assert o.power_mw == pytest.approx(uw / 1000, abs=1e-6)
        powers = [o.power_mw for o in fd.opps]
        assert powers == sorted(powers)


def test_sdm845_voltage_anchors_from_rb3() -> None:
    """The two LUT voltages back-computed from RB3 EM debugfs values are reproduced exactly."""
    spec = load_machine("sdm845").spec
    little = {o.khz: o for o in spec.freq_domains[0].opps}
    big = {o.khz: o for o in spec.freq_domains[1].opps}
    assert little[1_766_400].uv == 828_000
    assert big[1_056_000].uv == 648_000
    # RB3 debugfs: big 1056 MHz -> 195991 uW with dpc 442.
    assert big[1_056_000].power_mw == pytest.approx(195.991, abs=1e-3)


def test_sdm845_idle_states_use_entry_plus_exit_latency() -> None:
    states = load_machine("sdm845").spec.idle_states
    little = {s.name: s for s in states["little"]}
    big = {s.name: s for s in states["big"]}
    assert states["little"][0].name == "WFI"
    assert little["little-power-down"].exit_latency_us == 350 + 461
    assert little["little-power-down"].target_residency_us == 1890
    assert big["big-rail-power-down"].exit_latency_us == 702 + 1061
    assert big["cluster-power-down"].target_residency_us == 9987


def test_em_power_formula() -> None:
    assert em_power_mw(110, 700_000, 533_000) == pytest.approx(28.7287, abs=1e-4)  # HiKey960


def test_unknown_machine_lists_presets() -> None:
    with pytest.raises(ConfigError) as err:
        load_machine("nosuch")
    assert "nosuch" in str(err.value)
    for name in list_machines():
        assert name in str(err.value)


def test_overrides_change_the_frequency_domains() -> None:
    m = load_machine("skylake-8x", {"topology": {"freq_domain": "core"}})
    assert len(m.spec.freq_domains) == 4
    assert [c.freq_domain for c in m.spec.cpus] == [0, 1, 2, 3, 0, 1, 2, 3]


def test_thread_major_numbering_on_two_packages() -> None:
    m = load_machine(
        "skylake-8x",
        {"topology": {"packages": 2, "numa_distance": [[10, 21], [21, 10]]}},
    )
    spec = m.spec
    assert len(spec.cpus) == 16
    # cpus 0-3 package 0 first threads, 4-7 package 1 first threads, then the second threads.
    assert [c.package for c in spec.cpus] == [0] * 4 + [1] * 4 + [0] * 4 + [1] * 4
    assert [c.core for c in spec.cpus] == list(range(8)) * 2
    assert [c.node for c in spec.cpus[:8]] == [0] * 4 + [1] * 4
    assert len(spec.freq_domains) == 2
    assert spec.numa_distance == [[10, 21], [21, 10]]


def test_invalid_preset_names_file_and_key() -> None:
    with pytest.raises(ConfigError) as err:
        load_machine("skylake-8x", {"core_types": {"skylake": {"opp_table": "missing"}}})
    message = str(err.value)
    assert "skylake-8x.toml" in message
    assert "opp_table 'missing'" in message
    assert "\n" not in message


def test_unknown_preset_key_is_an_error() -> None:
    with pytest.raises(ConfigError, match="turbo_ratio"):
        load_machine("skylake-8x", {"opp_tables": {"skylake": {"turbo_ratio": [39]}}})


def test_storage_reaches_the_spec_and_the_benchmarks() -> None:
    assert load_machine("skylake-8x").spec.storage is None
    m = load_machine("skylake-8x", {"storage": {"fsync_us": 5457}})
    assert m.spec.storage is not None and m.spec.storage.fsync_us == 5457
    # one pgbench-rw client flushes once per transaction: 5 ms more per flush, at least 5 ms
    # more per transaction at a fixed frequency (performance), and a little more: after the
    # longer wait the idle CPUs sleep deeper, and a few of the transaction's seven hops pay
    # the deeper exit (skylake-8x's C10 and PC8 take ~0.2 ms)
    lat = {}
    # the backend's way to sleep runs while its flush is in flight: at most context_switch_out
    # cycles at the lowest frequency
    out_cycles = m.spec.core_types[0].kernel_cycles["context_switch_out"]
    way_ns = out_cycles / (min(o.khz for d in m.spec.freq_domains for o in d.opps) * 1e3) * 1e9
    for name, machine, fsync_ns in (("ssd", "skylake-8x", 457_000), ("disk", m, 5_457_000)):
        r = schedsim.run(
            machine, "pgbench-rw:clients=1", kernel="6.12", governor="performance", duration="1s"
        )
        lat[name] = r.metrics["latency_ms_mean"]
        # the backend waits one flush of fsync_us per counted commit less its way to sleep, plus
        # at most the next one (in progress, or ended before its result is sent)
        txns = r.metrics["transactions"]
        backend = next(t for t in r.json["tasks"] if t["comm"].startswith("postgres"))
        iowait = backend["iowait_ns"]
        assert txns * (fsync_ns - way_ns) <= iowait <= (txns + 1) * fsync_ns, name
    assert 5.0 <= lat["disk"] - lat["ssd"] < 6.0


@pytest.mark.parametrize(
    ("storage", "needle"),
    [
        ({"fsync_us": -1}, "storage.fsync_us"),
        ({"fsync_us": 0.5}, "storage.fsync_us"),
        ({"fsync_us": 2e6}, "storage.fsync_us"),
        ({"fsync_us": float("inf")}, "storage.fsync_us"),
        ({"fsync_ms": 4}, "fsync_ms"),
    ],
)
def test_invalid_storage_names_the_key(storage: dict, needle: str) -> None:
    with pytest.raises(ConfigError, match=needle) as err:
        load_machine("skylake-8x", {"storage": storage})
    assert "skylake-8x.toml" in str(err.value)


@st.composite
def topologies(draw):
    smt = draw(st.integers(1, 4))
    packages = draw(st.integers(1, 3))
    npp = draw(st.integers(1, 2))
    clusters = draw(
        st.lists(
            st.fixed_dictionaries(
                {
                    "core_type": st.just("skylake"),
                    "cores": st.integers(1, 5),
                    "llc": st.integers(0, 1),
                }
            ),
            min_size=1,
            max_size=3,
        )
    )
    nodes = packages * npp
    topology = {
        "packages": packages,
        "nodes_per_package": npp,
        "smt": smt,
        "cpu_numbering": draw(st.sampled_from(["thread-major", "core-major"])),
        "freq_domain": draw(st.sampled_from(["thread", "core", "cluster", "package"])),
        "clusters": clusters,
        "numa_distance": [[10 if i == j else 20 for j in range(nodes)] for i in range(nodes)]
        if nodes > 1
        else [],
    }
    smt_share = [1.0] + [0.6] * (smt - 1) if smt > 1 else []
    return {"topology": topology, "core_types": {"skylake": {"smt_share": smt_share}}}


@settings(max_examples=60, deadline=None)
@given(topologies())
def test_expansion_invariants(overrides) -> None:
    topo = overrides["topology"]
    spec = load_machine("skylake-8x", overrides).spec
    cores_per_node = sum(c["cores"] for c in topo["clusters"])
    nodes = topo["packages"] * topo["nodes_per_package"]
    total_cores = nodes * cores_per_node
    smt = topo["smt"]
    assert [c.id for c in spec.cpus] == list(range(total_cores * smt))
    by_core: dict[int, list] = {}
    for c in spec.cpus:
        by_core.setdefault(c.core, []).append(c)
        if topo["cpu_numbering"] == "thread-major":
            assert c.id % total_cores == c.core
        else:
            assert c.id // smt == c.core
        assert c.node // topo["nodes_per_package"] == c.package
    assert sorted(by_core) == list(range(total_cores))
    for siblings in by_core.values():
        assert len(siblings) == smt
        assert len({(c.package, c.node, c.cluster, c.llc) for c in siblings}) == 1
        if topo["freq_domain"] != "thread":
            assert len({c.freq_domain for c in siblings}) == 1
    expected_domains = {
        "package": topo["packages"],
        "cluster": nodes * len(topo["clusters"]),
        "core": total_cores,
        "thread": total_cores * smt,
    }[topo["freq_domain"]]
    assert len(spec.freq_domains) == expected_domains
    for d in range(expected_domains):
        assert len({c.package for c in spec.cpus if c.freq_domain == d}) == 1
    assert len({c.llc for c in spec.cpus}) == nodes * len({c["llc"] for c in topo["clusters"]})


# ---- the new hardware fields: validation and the mirror of config.rs --------------------------


@pytest.mark.parametrize(
    ("name", "overrides", "expected"),
    [
        (
            "skylake-8x",
            {"package_idle_states": [{"name": "PCx", "min_core_state": "C11", "power_mw": 1}]},
            "package_idle_states[0].min_core_state 'C11' is not a state of idle_states.skl",
        ),
        (
            "skylake-8x",
            {
                "package_idle_states": [
                    {"name": "A", "min_core_state": "C6", "power_mw": 2},
                    {"name": "B", "min_core_state": "C3", "power_mw": 1},
                ]
            },
            "package_idle_states[1] ('B'): list package states shallowest first",
        ),
        (
            "sm8250",
            {"package_idle_states": [{"name": "x", "min_core_state": 2, "power_mw": 0}]},
            "package_idle_states[0].min_core_state 2 is out of range",
        ),
        ("broadwell-80x", {"machine": {"hwp": True}}, "machine.hwp = true needs an [hwp] table"),
        (
            "skylake-8x",
            {"hwp": {"highest_khz": 4_000_000}},
            "hwp.highest_khz 4000000 differs from the highest OPP 3900000",
        ),
        (
            "skylake-8x",
            {"hwp": {"lowest_khz": 900_000}},
            "hwp: expected lowest_khz <= efficient_khz <= guaranteed_khz <= highest_khz",
        ),
        ("skylake-8x", {"hwp": {"default_epp": 256}}, "hwp.default_epp"),
        (
            "skylake-8x",
            {"power": {"power_limit_tau_ms": 0}},
            "power.power_limit_mw needs a power.power_limit_tau_ms > 0",
        ),
        (
            "skylake-8x",
            {"power": {"power_limit2_mw": 50_000}},
            "power.power_limit2_mw 50000 is below power.power_limit_mw 80000",
        ),
        (
            "juno-r0",
            {"topology": {"cpu_ids": [0, 1, 2, 3, 4, 4]}},
            "topology.cpu_ids must list each of the 6 CPU numbers 0..5 exactly once",
        ),
        (
            "sdm845",
            {"topology": {"cpu_ids": [0, 1, 2, 3, 4, 5, 6, 7]}},
            "topology.cpu_ids needs topology.cpu_numbering = 'explicit'",
        ),
        (
            "sdm845",
            {"topology": {"freq_coordination": "min"}},
            "topology.freq_coordination",
        ),
        (
            "sdm845",
            {"hwp": {"highest_khz": 1, "guaranteed_khz": 1, "efficient_khz": 1, "lowest_khz": 1}},
            "[hwp] is Intel's",
        ),
    ],
)
def test_new_fields_are_validated_with_file_and_key(name, overrides, expected) -> None:
    with pytest.raises(ConfigError) as err:
        load_machine(name, overrides)
    message = str(err.value)
    assert f"{name}.toml" in message
    assert expected in message
    assert "\n" not in message


def rust_struct_fields(source: str, struct: str) -> list[str]:
    body = re.search(rf"pub struct {struct} \{{(.*?)\n\}}", source, re.S)
    assert body, struct
    return re.findall(r"^\s*pub (\w+):", body.group(1), re.M)


@pytest.mark.parametrize(
    "struct",
    [
        "MachineSpec",
        "CpuSpec",
        "CoreTypeSpec",
        "OppSpec",
        "FreqDomainSpec",
        "IdleStateSpec",
        "PowerSpec",
        "PackageIdleStateSpec",
        "HwpSpec",
    ],
)
def test_spec_mirrors_config_rs(struct: str) -> None:
    """The pydantic mirror has exactly the fields of the core's structs (deny_unknown_fields)."""
    import schedsim.spec as spec_mod

    path = REPO / "crates" / "schedsim-core" / "src" / "config.rs"
    if not path.is_file():
        pytest.skip("crates/ not present")
    fields = rust_struct_fields(path.read_text(), struct)
    assert list(getattr(spec_mod, struct).model_fields) == fields


def test_deep_state_exits_split_into_core_and_package_parts_that_add_up_to_intel_idle() -> None:
    # intel_idle declares the worst case, package exit included: the core's part plus the exit
    # of the package state the request allows must give it back
    sky = load_machine("skylake-8x").spec
    states = {s.name: s for s in next(iter(sky.idle_states.values()))}
    pkg = {p.name: p.exit_latency_us for p in sky.package_idle_states}
    assert states["C7s"].core_exit_latency_us + pkg["PC7"] == 124
    assert states["C8"].core_exit_latency_us + pkg["PC8"] == 200
    # C9/C10 requests land in PC8, the deepest package state of the desktop platform
    for name in ("C9", "C10"):
        assert states[name].core_exit_latency_us == states["C6"].exit_latency_us == 85
    skx = load_machine("skylake-sp-104").spec
    c6 = next(s for s in next(iter(skx.idle_states.values())) if s.name == "C6")
    assert c6.core_exit_latency_us == 92  # intel_idle's note: C6 without package C6
    assert c6.core_exit_latency_us + skx.package_idle_states[0].exit_latency_us == 133


def test_core_exit_latency_cannot_exceed_the_declared_one() -> None:
    from schedsim.spec import IdleStateSpec

    with pytest.raises(ValueError, match="core_exit_latency_us 900 exceeds"):
        IdleStateSpec(
            name="C10", exit_latency_us=890, target_residency_us=5000, core_exit_latency_us=900
        )


def _busy_mhz(machine: object) -> float:
    r = schedsim.run(
        machine,  # type: ignore[arg-type]
        "periodic:tasks=1,duty_pct=100",
        kernel="5.2",
        driver="intel_cpufreq",
        governor="performance",
        sets=["scaling_max_freq=2400000"],
        duration="50ms",
    )
    return float(r.json["turbostat"]["bzy_mhz"])


def test_a_turbo_request_is_a_ceiling_unless_the_part_licenses_the_range() -> None:
    # haswell-48x: base 2.3 GHz, 1C turbo 3.1 GHz, no HWP. performance asks for the policy
    # maximum, 2.4 GHz, a turbo P-state: the presets read it as a ceiling; with
    # turbo_grant = "range" one busy core gets its package's 1C bin (intel_pstate.rst, "Turbo
    # P-states Support").
    assert _busy_mhz("haswell-48x") == pytest.approx(2400, abs=1)
    licensed = load_machine("haswell-48x", {"opp_tables": {"haswell": {"turbo_grant": "range"}}})
    assert licensed.spec.freq_domains[0].turbo_grant == "range"
    assert _busy_mhz(licensed) == pytest.approx(3100, abs=1)


def test_an_unknown_turbo_grant_names_the_key_and_the_allowed_values() -> None:
    with pytest.raises(ConfigError) as err:
        load_machine("haswell-48x", {"opp_tables": {"haswell": {"turbo_grant": "always"}}})
    message = str(err.value)
    assert "turbo_grant" in message and "'request'" in message and "'range'" in message
