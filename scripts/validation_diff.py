#!/usr/bin/env python3
"""Compare two validation reports (docs/validation.md) cell by cell.

A model change is judged by the cells it moves: which cells now agree in direction with the
published value and did not (gained), which stopped (lost), and how the headline moved. This
reads the cell tables that scripts/validate.py writes, from files or from git revisions:

    scripts/validation_diff.py OLD.md NEW.md
    scripts/validation_diff.py --rev HEAD~3               # that commit's report against the file
    scripts/validation_diff.py --rev v1 --rev v2          # two commits
    scripts/validation_diff.py --rev HEAD~3 --benchmark tbench4 --machine haswell-48x --all

Simulated values are those printed (2 decimals); whether a cell agrees is the report's own
verdict, computed from the unrounded values.
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _validate_module():
    """scripts/validate.py, whose agreement measure and table split this shares."""
    spec = importlib.util.spec_from_file_location("validate", ROOT / "scripts/validate.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("validate", mod)
    spec.loader.exec_module(mod)
    return mod


validate = sys.modules.get("validate") or _validate_module()
REPORT = "docs/validation.md"

SEED = re.compile(r"^## seed (\d+):")
TABLE = re.compile(r"^### (.+): (\S+)$")
AGREE = {"yes": True, "**no**": False, "-": None}


@dataclass(frozen=True)
class Key:
    seed: str
    table: str
    machine: str
    benchmark: str
    op: str
    config: str

    def label(self) -> str:
        return f"{self.machine} {self.benchmark} {self.op} {self.config} [{self.table}]"


@dataclass(frozen=True)
class Row:
    published: float
    simulated: float
    agree: bool | None
    error: float
    scored: bool = True  # only scored cells are read back


def _num(text: str) -> float:
    return math.nan if text in ("-", "") else float(text)


def parse(text: str) -> dict[Key, Row]:
    """The scored cells of a report: every row of a seed's cell tables that is not an absolute
    (unscored) baseline."""
    cells: dict[Key, Row] = {}
    seed = table = machine = None
    for line in text.splitlines():
        if m := SEED.match(line):
            seed, table = m.group(1), None
            continue
        if line.startswith("## "):
            seed = table = None
            continue
        if seed and (m := TABLE.match(line)):
            table, machine = m.group(1), m.group(2)
            continue
        if not (seed and table and line.startswith("| ")):
            continue
        cols = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cols) != 8 or cols[0] == "benchmark" or cols[2].endswith("(absolute)"):
            continue
        bench, op, config, pub, sim, _, agree, err = cols
        key = Key(seed, table, machine, bench, op, config)
        cells[key] = Row(_num(pub), _num(sim), AGREE.get(agree), _num(err))
    return cells


@dataclass
class Summary:
    cells: int
    agree: float
    median_error: float


def summarise(cells: dict[Key, Row]) -> Summary:
    return Summary(*validate.agreement(cells.values()))


@dataclass
class Diff:
    gained: list[Key]
    lost: list[Key]
    moved: list[Key]  # agreement unchanged, simulated value changed
    added: list[Key]  # scored in the new report only
    removed: list[Key]  # scored in the old report only


def diff(old: dict[Key, Row], new: dict[Key, Row]) -> Diff:
    d = Diff([], [], [], [], [])
    for k, n in new.items():
        o = old.get(k)
        if o is None or o.agree is None:
            if n.agree is not None:
                d.added.append(k)
            continue
        if n.agree is None:
            d.removed.append(k)
        elif n.agree and not o.agree:
            d.gained.append(k)
        elif o.agree and not n.agree:
            d.lost.append(k)
        elif n.simulated != o.simulated:
            d.moved.append(k)
    d.removed += [k for k, o in old.items() if k not in new and o.agree is not None]
    return d


def _select(cells: dict[Key, Row], benchmark: str | None, machine: str | None, seed: str | None):
    return {
        k: r
        for k, r in cells.items()
        if (benchmark is None or k.benchmark == benchmark)
        and (machine is None or k.machine == machine)
        and (seed is None or k.seed == seed)
    }


def _performance(cells: dict[Key, Row]) -> dict[Key, Row]:
    """The cells of the seeds' performance tables (validate.PERFORMANCE_TABLES)."""
    return {k: r for k, r in cells.items() if validate.is_performance_table(k.seed, k.table)}


def _read(source: str, rev: bool) -> str:
    if not rev:
        return Path(source).read_text(encoding="utf-8")
    out = subprocess.run(
        ["git", "-C", str(ROOT), "show", f"{source}:{REPORT}"],
        capture_output=True,
        text=True,
    )
    if out.returncode != 0:
        raise SystemExit(f"validation_diff: git show {source}:{REPORT}: {out.stderr.strip()}")
    return out.stdout


def _line(k: Key, old: dict[Key, Row], new: dict[Key, Row]) -> str:
    o, n = old.get(k), new.get(k)
    pub = n.published if n else o.published
    was = f"{o.simulated:.2f}" if o else "-"
    now = f"{n.simulated:.2f}" if n else "-"
    return f"  {k.label()}: published {pub:.2f}, simulated {was} -> {now}"


def report(old: dict[Key, Row], new: dict[Key, Row], show_moved: bool) -> str:
    lines = []
    for label, pick in (("seed 000 performance tables", _performance), ("all cells", dict)):
        a, b = summarise(pick(old)), summarise(pick(new))
        lines.append(
            f"{label}: {a.cells} -> {b.cells} cells, direction agrees {a.agree:.1%} -> "
            f"{b.agree:.1%}, median ratio error {a.median_error:.3f} -> {b.median_error:.3f}"
        )
    d = diff(old, new)
    for label, keys in (
        ("gained (now agree in direction)", d.gained),
        ("lost (no longer agree)", d.lost),
        ("scored only in the new report", d.added),
        ("scored only in the old report", d.removed),
    ):
        lines.append(f"{len(keys)} {label}")
        lines += [_line(k, old, new) for k in keys]
    lines.append(f"{len(d.moved)} moved without changing agreement")
    if show_moved:
        lines += [_line(k, old, new) for k in d.moved]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="*", help="OLD.md [NEW.md] (NEW defaults to docs/validation.md)")
    ap.add_argument("--rev", action="append", default=[], help="git revision(s) of the report")
    ap.add_argument("--benchmark", help="only this benchmark's cells (e.g. tbench4)")
    ap.add_argument("--machine", help="only this machine's cells (e.g. haswell-48x)")
    ap.add_argument("--seed", help="only this seed's cells (e.g. 000)")
    ap.add_argument("--all", action="store_true", help="also list the cells that only moved")
    args = ap.parse_args(argv)
    sources = [(r, True) for r in args.rev] + [(f, False) for f in args.files]
    if len(sources) == 1:
        sources.append((str(ROOT / REPORT), False))
    if len(sources) != 2:
        ap.error("give two reports: two files, two --rev, or one of either (against docs/)")
    old, new = (parse(_read(s, rev)) for s, rev in sources)
    old, new = (_select(c, args.benchmark, args.machine, args.seed) for c in (old, new))
    sys.stdout.write(report(old, new, args.all))
    return 0


if __name__ == "__main__":
    sys.exit(main())
