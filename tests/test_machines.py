"""Preset expansion, checked against the source data (seed 000, sdm845 DT and RB3 EM values)."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedsim.errors import ConfigError
from schedsim.machines import list_machines, load_machine, preset_dir
from schedsim.machines.preset import em_power_mw
from schedsim.spec import MachineSpec


def test_presets_listed() -> None:
    names = list_machines()
    assert "skylake-8x" in names
    assert "sdm845" in names


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
    for ct in spec.core_types:
        assert ct.name in spec.idle_states
        if ct.smt_share:
            assert ct.smt_share[0] == 1.0


@pytest.mark.parametrize("name", list_machines())
def test_every_value_line_carries_a_source_comment(name: str) -> None:
    text = (preset_dir() / f"{name}.toml").read_text()
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith(("#", "[")) or stripped in ("]", "opps = ["):
            continue
        assert "#" in stripped, f"{name}: no source comment on: {line}"


def test_skylake_topology() -> None:
    m = load_machine("skylake-8x")
    spec = m.spec
    assert len(spec.cpus) == 8
    assert m.packages == 1
    assert {c.package for c in spec.cpus} == {0}
    assert {c.llc for c in spec.cpus} == {0}
    # x86 numbering: SMT siblings are cpu and cpu + 4.
    for cpu in range(4):
        assert spec.cpus[cpu].core == spec.cpus[cpu + 4].core == cpu
    assert len({c.core for c in spec.cpus}) == 4
    assert spec.core_types[0].smt_share == [1.0, 0.62]
    assert spec.arch == "x86"


def test_skylake_frequencies_from_seed_000() -> None:
    spec = load_machine("skylake-8x").spec
    assert len(spec.freq_domains) == 1
    assert {c.freq_domain for c in spec.cpus} == {0}
    fd = spec.freq_domains[0]
    assert fd.granularity == "package"
    khz = [o.khz for o in fd.opps]
    assert len(khz) == 32
    assert khz == list(range(800_000, 3_900_001, 100_000))
    assert fd.base_khz == 3_500_000
    assert fd.turbo_khz == [3_900_000, 3_900_000, 3_800_000, 3_700_000]  # 1C 2C 3C 4C
    assert spec.tsc_khz == fd.base_khz
    assert fd.opps[0].uv == 700_000
    assert fd.opps[-1].uv == 1_200_000
    assert all(b.uv > a.uv for a, b in zip(fd.opps, fd.opps[1:], strict=False))


def test_skylake_idle_states_from_intel_idle() -> None:
    states = load_machine("skylake-8x").spec.idle_states["skylake"]
    table = {s.name: (s.exit_latency_us, s.target_residency_us, s.turbo_active) for s in states}
    assert [s.name for s in states] == ["POLL", "C1", "C1E", "C3", "C6", "C7s", "C8", "C9", "C10"]
    assert table["C1"] == (2, 2, True)
    assert table["C1E"] == (10, 20, True)
    assert table["C3"] == (70, 100, False)
    assert table["C6"] == (85, 200, False)
    assert table["C10"] == (890, 5000, False)


def test_skylake_power_model_reaches_tdp_at_base() -> None:
    """c_eff was calibrated so that 4 cores x 2 threads at base draw the 80 W TDP."""
    m = load_machine("skylake-8x")
    power = m.preset.power
    fd = m.spec.freq_domains[0]
    base = next(o for o in fd.opps if o.khz == fd.base_khz)
    volts = base.uv / 1e6
    top = fd.opps[-1].uv / 1e6
    core_mw = (1 + power.smt_power_factor) * power.c_eff * volts**2 * base.khz / 1e6
    core_mw += power.core_leakage_mw * volts / top
    package_w = (power.package_idle_mw + power.uncore_active_mw + 4 * core_mw) / 1000
    assert power.tdp_w == 80
    assert package_w == pytest.approx(80, rel=0.02)


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
    csv_path = preset_dir().parents[2].parent / "shared" / "data" / "machines"
    path = csv_path / "sdm845_opp_em.csv"
    if not path.is_file():
        pytest.skip("shared/ reference data not present")
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
