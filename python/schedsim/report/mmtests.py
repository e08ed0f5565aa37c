"""MMTests-style comparison tables (`compare-mmtests.pl`, spec/ecosystem.md §1.5).

A `Table` is data (rows of values, percentages against the baseline and significance marks) and
renders as MMTests prints it: the stat name column left-aligned to the longest name, the op
column, then per config `%12.<precision>f` and ` (%7.2f%%)`, or ` *%7.2f%%*` on a significant
mean row; two header rows with the config names split at their first `-`. Ratio tables
(`--print-ratio`) print `Ratio <op>` rows with the ratio, its percentage against 1 and the
normalised difference ` (%+7.2fs)`, then Dmean/Dmin/Dmax and the Gmean summary.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from . import stats as st

FIELD_LENGTH = 12  # Summarise.pm::initialise
COMPARE_LENGTH = 7  # Compare.pm::_generateHeaderTable


@dataclass
class Row:
    """One printed row: `stat` and `op` are the first two columns (for ratio tables `stat` is
    `Ratio`, `Dmean`, `Gmean`... and `op` the op or the preferred direction)."""

    stat: str
    op: str
    values: list[float]
    compare: list[float] | None = None  # % against the baseline (pdiff/pndiff)
    significant: list[bool] | None = None  # set on rows that carry the mark
    cidiff: list[float] | None = None  # ratio tables: normalised difference

    def to_dict(self) -> dict[str, Any]:
        return {
            "stat": self.stat,
            "op": self.op,
            "values": [_json_float(v) for v in self.values],
            "compare_pct": None if self.compare is None else [_json_float(v) for v in self.compare],
            "significant": self.significant,
            "cidiff": None if self.cidiff is None else [_json_float(v) for v in self.cidiff],
        }


@dataclass
class Table:
    """A comparison table. `kind` is "stats" (MMTests' summary layout) or "ratio"."""

    kind: Literal["stats", "ratio"]
    section: str  # metric, ratio, turbostat, power, perf-per-watt
    title: str
    configs: list[str]
    rows: list[Row] = field(default_factory=list)
    precision: int = 2
    meta: dict[str, Any] = field(default_factory=dict)

    def render(self) -> str:
        body = render_stats(self) if self.kind == "stats" else render_ratio(self)
        return f"{self.title}\n{body}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "section": self.section,
            "title": self.title,
            "configs": self.configs,
            "precision": self.precision,
            **self.meta,
            "rows": [r.to_dict() for r in self.rows],
        }


def _json_float(v: float) -> float | None:
    """JSON has no NaN or infinity: they become null."""
    return None if v is None or (isinstance(v, float) and not math.isfinite(v)) else v


# ---- formatting ----------------------------------------------------------------------------


def fmt_float(value: float, width: int, precision: int, sign: bool = False) -> str:
    """printf `%{width}.{precision}f` as Perl prints it (NaN as `NaN`, infinities as `Inf`)."""
    if math.isnan(value):
        return f"{'NaN':>{width}}"
    if math.isinf(value):
        return f"{('-Inf' if value < 0 else ('+Inf' if sign else 'Inf')):>{width}}"
    spec = f"+{width}.{precision}f" if sign else f"{width}.{precision}f"
    return format(value, spec)


def fmt_compare(pct: float, significant: bool) -> str:
    inner = fmt_float(pct, COMPARE_LENGTH, 2)
    return f" *{inner}%*" if significant else f" ({inner}%)"


_RC = re.compile(r"-rc[0-9]")


def split_name(name: str) -> tuple[str, str]:
    """The two header rows of a config name: split at the first `-` (after `-rcN` when the name
    has one there, as Compare.pm::_generateHeaderTable does). A name without `-` goes wholly in
    the second row (MMTests would print it with its last letter cut in the first)."""
    index = name.find("-")
    if index < 0:
        return "", name
    if _RC.match(name, index):
        index += 4
        if index >= len(name):
            return name, ""
    return name[:index], name[index + 1 :]


def _rstrip_lines(lines: Sequence[str]) -> str:
    return "\n".join(line.rstrip() for line in lines) + "\n"


def _header(first_width: int, configs: Sequence[str], width: int) -> list[str]:
    """The two header rows; the first is left out when no name has a `-` (it would be empty)."""
    parts = [split_name(c) for c in configs]
    rows = (0, 1) if any(p[0] for p in parts) else (1,)
    return [" " * first_width + "".join(f"{p[row]:>{width}}" for p in parts) for row in rows]


def render_stats(table: Table) -> str:
    """Compare.pm::_generateRenderTable + PrintGeneric::printRow."""
    stat_w = max((len(r.stat) for r in table.rows), default=0)
    op_w = max((len(r.op) for r in table.rows), default=0)
    width = FIELD_LENGTH + COMPARE_LENGTH + 4
    lines = _header(stat_w + 1 + op_w, table.configs, width)
    for row in table.rows:
        line = f"{row.stat:<{stat_w}} {row.op:<{op_w}}"
        for i, value in enumerate(row.values):
            line += fmt_float(value, FIELD_LENGTH, table.precision)
            if row.compare is not None:
                sig = bool(row.significant[i]) if row.significant is not None else False
                line += fmt_compare(row.compare[i], sig)
        lines.append(line)
    return _rstrip_lines(lines)


def render_ratio(table: Table) -> str:
    """Compare.pm::_generateRenderRatioTable: `Ratio <op>` rows, Dmean/Dmin/Dmax, Gmean. The
    header columns are as wide as the rows (MMTests pads them to 23 and misaligns)."""
    first = [f"{r.stat} {r.op}" for r in table.rows]
    first_w = max((len(s) for s in first), default=0)
    has_cidiff = any(r.cidiff is not None for r in table.rows)
    width = FIELD_LENGTH + (COMPARE_LENGTH + 4) + ((COMPARE_LENGTH + 4) if has_cidiff else 0)
    lines = _header(first_w, table.configs, width)
    for label, row in zip(first, table.rows, strict=True):
        line = f"{label:<{first_w}}"
        for i, value in enumerate(row.values):
            cell = fmt_float(value, FIELD_LENGTH, table.precision)
            if row.compare is not None:
                cell += f" ({fmt_float(row.compare[i], COMPARE_LENGTH, 2)}%)"
                if row.cidiff is not None:
                    cell += f" ({fmt_float(row.cidiff[i], COMPARE_LENGTH, 2, sign=True)}s)"
            line += f"{cell:<{width}}"
        lines.append(line)
    return _rstrip_lines(lines)


# ---- building tables from summaries --------------------------------------------------------


def stats_table(
    summaries: Mapping[str, Mapping[str, st.Summary]],
    configs: Sequence[str],
    ops: Sequence[str],
    *,
    rule: st.Rule = "ci",
    labels: st.Labels = "current",
    section: str = "metric",
    title: str = "",
    precision: int = 2,
    meta: dict[str, Any] | None = None,
) -> Table:
    """The MMTests summary table: `summaries[config][op]`, the first config the baseline. Rows
    run statistic by statistic, op by op (Compare.pm::_generateRenderTable); a NaN statistic
    prints as 0 with 0 % (Compare.pm::_generateComparisonTable)."""
    base_name = configs[0]
    first = summaries[base_name][ops[0]]
    table = Table("stats", section, title, list(configs), precision=precision, meta=meta or {})
    for index, stat in enumerate(first.stats):
        for op in ops:
            base = summaries[base_name][op]
            label = st.stat_name(stat, base.higher_is_better, labels, base.kind)
            values: list[float] = []
            compare: list[float] = []
            for config in configs:
                value = summaries[config][op].values[index]
                if math.isnan(value):
                    values.append(0.0)
                    compare.append(0.0)
                else:
                    values.append(value)
                    compare.append(
                        st.compare(
                            stat, base.higher_is_better, value, base.values[index], base.signed
                        )
                    )
            significant = None
            if st.is_mark_row(rule, base, index, label):
                significant = [False]
                for config in configs[1:]:
                    new = summaries[config][op]
                    if rule == "ci":
                        mark, _ = st.significant_ci(base, new)
                    else:
                        mark, _ = st.significant_ttest(base, new)
                    significant.append(mark)
            table.rows.append(Row(label, op, values, compare, significant))
    return table


def ratio_table(
    summaries: Mapping[str, Mapping[str, st.Summary]],
    configs: Sequence[str],
    ops: Sequence[str],
    *,
    section: str = "ratio",
    title: str = "",
    precision: int = 2,
    meta: dict[str, Any] | None = None,
) -> Table:
    """`compare-mmtests.pl --print-ratio` (Compare.pm::_generateRatioComparisonTable): per op
    the ratio new/base of the ratio statistic, its pdiff/pndiff against 1 and the normalised
    difference cidiff; Dmean/Dmin/Dmax over ops of cidiff (when the baseline has intervals);
    Gmean, the geometric mean of the ratios (NaN → 1, 0 → 1e-5)."""
    base_name = configs[0]
    higher = summaries[base_name][ops[0]].higher_is_better
    preferred = "Higher" if higher else "Lower"
    table = Table("ratio", section, title, list(configs), precision=precision, meta=meta or {})
    ratios: dict[str, list[float]] = {c: [] for c in configs}
    norms: dict[str, list[float]] = {c: [] for c in configs}
    base_has_ci = any(summaries[base_name][op].ci is not None for op in ops)
    for op in ops:
        base = summaries[base_name][op]
        values, compare, cid = [], [], []
        for config in configs:
            new = summaries[config][op]
            a, b = new.ratio_value, base.ratio_value
            if not math.isnan(a) and not math.isnan(b):
                ratio = st.signed_rdiff(a, b) if base.signed else st.rdiff(a, b)
                cmp = st.pdiff(ratio, 1.0) if higher else st.pndiff(ratio, 1.0)
                norm = 0.0
                if new.ci is not None and base.ci is not None:
                    norm = st.cidiff(a, new.ci, b, base.ci)
                    norm = 0.0 if math.isnan(norm) else norm
            else:
                ratio, cmp, norm = 1.0, 0.0, 0.0
            values.append(ratio)
            compare.append(cmp)
            cid.append(norm)
            ratios[config].append(ratio)
            norms[config].append(norm)
        table.rows.append(Row("Ratio", op, values, compare, None, cid if base_has_ci else None))
    if base_has_ci:
        for name, fn in (("Dmean", st.amean), ("Dmin ", min), ("Dmax ", max)):
            table.rows.append(Row(name, preferred, [fn(norms[c]) for c in configs]))
    table.rows.append(Row("Gmean", preferred, [gmean_of_ratios(ratios[c]) for c in configs]))
    return table


def gmean_of_ratios(ratios: Sequence[float]) -> float:
    """Compare.pm: the geometric mean of the per-op ratios, NaN counted as 1 and 0 as 1e-5."""
    units = [1.0 if math.isnan(r) else (r if r != 0 else 0.00001) for r in ratios]
    return st.geomean(units)


def value_ratio_table(
    values: Mapping[str, Mapping[str, float]],
    configs: Sequence[str],
    ops: Sequence[str],
    *,
    higher_is_better: bool = True,
    section: str = "perf-per-watt",
    title: str = "",
    precision: int = 2,
    meta: dict[str, Any] | None = None,
) -> Table:
    """A ratio table of plain values (no intervals): `Ratio <op>` = new/base with its % against
    1, and the Gmean summary."""
    base_name = configs[0]
    preferred = "Higher" if higher_is_better else "Lower"
    table = Table("ratio", section, title, list(configs), precision=precision, meta=meta or {})
    ratios: dict[str, list[float]] = {c: [] for c in configs}
    for op in ops:
        row_values, compare = [], []
        for config in configs:
            a, b = values[config][op], values[base_name][op]
            if math.isnan(a) or math.isnan(b):
                ratio, cmp = 1.0, 0.0
            else:
                ratio = st.rdiff(a, b)
                cmp = st.pdiff(ratio, 1.0) if higher_is_better else st.pndiff(ratio, 1.0)
            row_values.append(ratio)
            compare.append(cmp)
            ratios[config].append(ratio)
        table.rows.append(Row("Ratio", op, row_values, compare))
    table.rows.append(Row("Gmean", preferred, [gmean_of_ratios(ratios[c]) for c in configs]))
    return table
