"""scripts/validation_diff.py: it reads back the cell tables scripts/validate.py writes, and
sorts the cells two reports disagree on (no simulation)."""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _load(name, file):
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / file)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


v = _load("validate", "validate.py")
d = _load("validation_diff", "validation_diff.py")


def _cells(sims):
    """Seed 000 cells of one performance table and one power table; `sims` are their
    simulated values in order."""
    rows = [
        ("5.3.2 ratio, higher is better", "tbench4", "sugov-turbo1", 1.18),
        ("5.3.2 ratio, higher is better", "tbench4", "sugov-turbo4", 1.30),
        ("5.3.2 ratio, higher is better", "netperf-tcp", "sugov-turbo4", 1.00),
        ("5.3.4 package power W", "tbench4", "sugov-turbo4", 1.06),
    ]
    cells = [
        v.Cell(
            table=t,
            machine="broadwell-80x",
            benchmark=b,
            op="Gmean",
            config=c,
            published=p,
            higher_is_better=True,
            simulated=s,
        )
        for (t, b, c, p), s in zip(rows, sims, strict=True)
    ]
    # an absolute baseline: shown, never scored
    cells.append(
        v.Cell(
            table="5.3.4 package power W",
            machine="broadwell-80x",
            benchmark="tbench4",
            op="PkgWatt",
            config="sugov-noninv",
            published=142.32,
            higher_is_better=True,
            kind="abs",
            simulated=148.9,
        )
    )
    return cells


def _report(sims):
    return v.render_markdown({"000": ({"title": "t"}, _cells(sims))}, [], quick=False)


def test_parse_reads_back_every_scored_cell():
    cells = d.parse(_report([1.02, 1.25, 1.05, math.nan]))
    assert len(cells) == 4  # the absolute baseline is left out
    key = d.Key(
        "000", "5.3.2 ratio, higher is better", "broadwell-80x", "tbench4", "Gmean", "sugov-turbo4"
    )
    row = cells[key]
    assert (row.published, row.simulated, row.agree) == (1.30, 1.25, True)
    assert row.error == 0.05
    power = [r for k, r in cells.items() if k.table.startswith("5.3.4")]
    assert len(power) == 1 and math.isnan(power[0].simulated) and power[0].agree is None
    # 1.02 is neutral against a published gain; 1.05 a gain against a published neutral
    assert [r.agree for k, r in cells.items() if k.table.startswith("5.3.2")] == [
        False,
        True,
        False,
    ]


def test_diff_sorts_gained_lost_moved_and_newly_scored_cells():
    old = d.parse(_report([1.02, 1.25, 1.00, math.nan]))
    new = d.parse(_report([1.10, 1.01, 1.00, 1.05]))
    got = d.diff(old, new)
    assert [k.config for k in got.gained] == ["sugov-turbo1"]  # 1.02 -> 1.10 against 1.18
    assert [(k.benchmark, k.config) for k in got.lost] == [("tbench4", "sugov-turbo4")]
    assert [k.table[:5] for k in got.added] == ["5.3.4"]  # simulated in the new report only
    assert got.moved == [] and got.removed == []
    text = d.report(old, new, show_moved=False)
    # performance tables: 2 of 3 agree -> 2 of 3; all cells: 2 of 3 -> 3 of 4
    assert "direction agrees 66.7% -> 66.7%" in text
    assert "all cells: 3 -> 4 cells, direction agrees 66.7% -> 75.0%" in text
    assert "1 gained" in text and "1 lost" in text
    assert "tbench4 Gmean sugov-turbo4 [5.3.2 ratio, higher is better]: published 1.30, " in text
    assert "simulated 1.25 -> 1.01" in text


def test_main_compares_two_files_with_filters(tmp_path, capsys):
    a, b = tmp_path / "a.md", tmp_path / "b.md"
    a.write_text(_report([1.02, 1.25, 1.00, 1.05]))
    b.write_text(_report([1.10, 1.25, 1.03, 1.05]))
    assert d.main([str(a), str(b), "--benchmark", "netperf-tcp"]) == 0
    out = capsys.readouterr().out
    assert "0 gained" in out and "1 lost" in out and "netperf-tcp" in out
    assert "tbench4" not in out
