"""scripts/models_doc.py: docs/models.md is current, every workload constant has a source, and
the kind of a constant is read from its source text or tags (no simulation)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _load():
    spec = importlib.util.spec_from_file_location("models_doc", ROOT / "scripts/models_doc.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["models_doc"] = mod
    spec.loader.exec_module(mod)
    return mod


md = _load()


def test_committed_page_is_current() -> None:
    assert (ROOT / "docs/models.md").read_text() == md.render(), (
        "docs/models.md is out of date: run make models-doc"
    )


def test_every_workload_constant_has_a_source() -> None:
    missing = []
    for path in sorted(md.WORKLOADS.glob("*.json")):
        for name, entry in json.loads(path.read_text()).items():
            if not isinstance(entry, dict) or "value" not in entry:
                missing.append(f"{path.name}: {name} is not a {{value, source}} entry")
            elif not str(entry.get("source") or "").strip():
                missing.append(f"{path.name}: {name} has no source")
    assert not missing, "\n".join(missing)


def test_no_workload_constant_is_unclassified() -> None:
    for path in sorted(md.WORKLOADS.glob("*.json")):
        for c in md.workload_constants(path):
            assert c.kind != "untagged", f"{path.name}: {c.name}: {c.source!r}"


@pytest.mark.parametrize(
    ("source", "kind"),
    [
        ("estimate: about 2 us of CPU per request", "estimate"),
        ("Estimate, order of magnitude", "estimate"),
        ("measured: write(2) of 100 B to a pipe, 176 ns", "measured"),
        ("calibrated on one measured run: perf bench sched messaging", "calibrated"),
        ("derived from target_elapsed_s on skylake-8x", "calibrated"),
        ("derived: 3 x the per-page cost", "derived"),
        ("spec/workloads.md §3.3 [estimate]", "estimate"),
        ("spec/workloads.md §3.1: a recipe took 6.2 s [measured]", "measured"),
        ("same file: Unlink AvgLat 0.052 ms; estimate for the split", "estimate"),
        ("Intel SSD DC P4510 (2 TB) product specification: sequential read", "vendor spec"),
        ("Intel ARK, Core i5-8350U: max turbo frequency 3.6 GHz", "vendor spec"),
        ("same file: Close AvgLat 0.001 ms", "measured"),
        ("loopback.json copy_cycles_per_byte (UDP_STREAM slope)", "derived"),
        ("PerlIO's default buffer size (perliol.h)", "software"),
        ("model choice", "model choice"),
        ("model resolution (not a calibration)", "model choice"),
    ],
)
def test_workload_kind(source: str, kind: str) -> None:
    assert md.classify_source(source) == kind


@pytest.mark.parametrize(
    ("comment", "kind"),
    [
        ("[est] leakage of one powered core at 1.20 V", "estimate"),
        ("calibrated to the 80 W TDP at base with every thread busy (header)", "calibrated"),
        ('[x86cpus] "tdp_w": 80 (the terms below are calibrated to it)', "vendor spec"),
        ("[sdm] highest performance = the 1C turbo ratio 39 [seed000] 1C 3900", "measured"),
        ("[dt] uW/MHz/V^2", "vendor spec"),
        ("[est] the nest is folded into the per-core term [power]", "estimate"),
        ("INTEL_CPUFREQ_TRANSITION_LATENCY = 20000 ns [kspec 5.1]", "kernel"),
        ("power-gated core", "untagged"),
    ],
)
def test_preset_kind(comment: str, kind: str) -> None:
    known = {"x86cpus", "sdm", "seed000", "dt", "kspec"}
    assert md.classify_tags(md.comment_tags(comment, known)) == kind


def test_preset_lists_model_constants_but_not_kernel_values() -> None:
    keys = {c.name: c for c in md.preset_constants(md.MACHINES / "skylake-8x.toml")}
    assert keys["power.c_eff"].kind == "calibrated"
    assert keys["core_types.skylake.kernel_cycles.context_switch"].kind == "estimate"
    assert keys["hwp.headroom_epp0"].kind == "estimate"
    assert "idle_states.skl[1].power_mw" in keys
    # intel_idle latencies and the cpufreq transition latency are kernel code
    assert "idle_states.skl[1].exit_latency_us" not in keys
    assert "opp_tables.skylake.transition_latency_ns" not in keys
