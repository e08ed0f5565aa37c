"""Write docs/models.md: every model constant that is not kernel code, with its value and source.

The constants live in data that carries its own provenance, and this script only renders it:

- workload constants, `crates/schedsim-core/data/workloads/*.json`: each entry is
  `{"value", "unit", "source", "justification"}`;
- machine presets, `python/schedsim/machines/*.toml`: each value line carries a comment with a
  source tag (`[est]`, `[seed000]`, `[dt]`, ..., or `calibrated ...`) and its reason, read back
  with `schedsim.machines.sources.value_sources` (as `schedsim machines --describe` does).

Each constant gets a kind: measured, vendor spec, derived, estimate, calibrated, software (read
from a program's, the kernel's or a file format's source) or model choice (a resolution, not a
physical quantity). Usage: `python scripts/models_doc.py [--check]` (`make models-doc`).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python"))

from schedsim.machines.sources import value_sources  # noqa: E402

WORKLOADS = ROOT / "crates/schedsim-core/data/workloads"
MACHINES = ROOT / "python/schedsim/machines"
OUT = ROOT / "docs/models.md"

KINDS = (
    "measured",
    "vendor spec",
    "derived",
    "estimate",
    "calibrated",
    "software",
    "model choice",
    "untagged",
)

# ---------------------------------------------------------------- workload source text -> kind

# Tried in order; the first pattern that matches the source text decides.
_WORKLOAD_RULES: tuple[tuple[str, str], ...] = (
    # an explicit leading word
    (r"^estimate", "estimate"),
    (r"^measured", "measured"),
    (r"^calibrated|^derived from target", "calibrated"),
    (r"^derived", "derived"),
    (r"^model (choice|resolution)", "model choice"),
    # an explicit trailing tag
    (r"\[estimate\]\s*$", "estimate"),
    (r"\[measured\]\s*$", "measured"),
    # an estimate anywhere (a measured total split by estimate is an estimate)
    (r"\bestimate", "estimate"),
    (r"\bcalibrated\b", "calibrated"),
    # vendors' published numbers
    (r"product specification|intel ark|intel's published|datasheet", "vendor spec"),
    # facts read from program, kernel or format sources
    (r"^npb3\.x|sed template", "software"),
    # taken over from another constant
    (r"^\S+\.json\b|\(as \w+\)", "derived"),
    # measurements: named data files, benchmark reports and mailing-list runs, timings, fits
    (
        r"measured|timed|avglat|^same (file|data|measurement)|data/|mmtests|report|lkml|"
        r"calibration run|rt-app src/|stream table",
        "measured",
    ),
    (
        r"\.[ch]\b|\.rst\b|fileformat|default|counted at|mtu|keeps its state",
        "software",
    ),
    (r"^spec/workloads\.md", "derived"),
)


def classify_source(source: str) -> str:
    """The kind of a workload constant from its source text (`untagged` when nothing says)."""
    text = source.strip().lower()
    for pattern, kind in _WORKLOAD_RULES:
        if re.search(pattern, text):
            return kind
    return "untagged"


# ---------------------------------------------------------------- preset tag -> kind

_TAG_KINDS = {
    "est": "estimate",
    # published measurements of real machines (the seeds, measured LUTs, debugfs read-backs)
    "seed000": "measured",
    "seed001": "measured",
    "seed003": "measured",
    "wl7": "measured",
    "lut": "measured",
    "sm8250": "measured",
    "rb3": "measured",
    "lisa": "measured",
    "bsd": "measured",
    "ramp": "measured",
    # vendors' specifications, device trees and firmware tables
    "x86cpus": "vendor spec",
    "ark": "vendor spec",
    "sdm": "vendor spec",
    "dt": "vendor spec",
    "dpc": "vendor spec",
    "scp": "vendor spec",
    "zen2": "vendor spec",
    "data": "vendor spec",
    # kernel code
    "idle": "kernel",
    "kspec": "kernel",
    "acpi": "kernel",
    "pseries": "kernel",
}
_KIND_ORDER = ("calibrated", "estimate", "measured", "vendor spec", "kernel")
_HEADER_TAG = re.compile(r"^#\s+\[([A-Za-z0-9_-]+)\]\s")
_TAG = re.compile(r"\[([A-Za-z0-9_-]+)(?:\s[^\]]*)?\]")


def header_tags(text: str) -> set[str]:
    """The source keys a preset defines in its header comment (`#   [dt]  ...`)."""
    return {m.group(1) for line in text.splitlines() if (m := _HEADER_TAG.match(line))}


def comment_tags(comment: str, known: set[str]) -> list[str]:
    """The source tags of one value comment, in order (`calibrated` counts as one)."""
    tags = [t for t in _TAG.findall(comment) if t in known or t == "est"]
    if comment.lower().startswith("calibrated"):
        tags.insert(0, "calibrated")
    return list(dict.fromkeys(tags))


def classify_tags(tags: list[str]) -> str:
    """The strongest kind among a line's tags: calibrated > estimate > measured > spec > kernel."""
    kinds = {"calibrated" if t == "calibrated" else _TAG_KINDS.get(t, "untagged") for t in tags}
    for kind in _KIND_ORDER:
        if kind in kinds:
            return kind
    return "untagged"


# Preset keys that are model constants whatever their tag (a kernel-sourced one is still left
# out); any other line is listed only when it is an estimate or calibrated.
_MODEL_KEY = re.compile(
    r"^power\.(?!model$)|^hwp\.|\.kernel_cycles\.|\.smt_share$|\.dynamic_power_coefficient$|"
    r"^opp_tables\.[^.]+\.(voltage|min_uv|max_uv)$|\.power_mw$"
)


@dataclass(frozen=True)
class Constant:
    name: str
    value: str
    kind: str
    source: str
    unit: str = ""
    justification: str = ""
    tags: tuple[str, ...] = ()


def workload_constants(path: Path) -> list[Constant]:
    out = []
    for name, entry in json.loads(path.read_text()).items():
        source = str(entry.get("source") or "")
        out.append(
            Constant(
                name=name,
                value=json.dumps(entry.get("value")),
                kind=classify_source(source) if source.strip() else "untagged",
                source=source,
                unit=str(entry.get("unit") or ""),
                justification=str(entry.get("justification") or ""),
            )
        )
    return out


def preset_constants(path: Path) -> list[Constant]:
    text = path.read_text()
    known = header_tags(text) | set(_TAG_KINDS)
    out = []
    for v in value_sources(text):
        tags = comment_tags(v.source, known)
        kind = classify_tags(tags)
        if kind == "kernel":
            continue
        if not (_MODEL_KEY.search(v.key) or kind in ("estimate", "calibrated")):
            continue
        out.append(Constant(v.key, v.value, kind, v.source, tags=tuple(tags)))
    return out


# ---------------------------------------------------------------- rendering


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|") or "-"


def _counts_row(label: str, counts: Counter[str]) -> str:
    total = sum(counts.values())
    cells = [str(counts.get(k, 0) or "") for k in KINDS]
    return f"| {label} | {total} | " + " | ".join(cells) + " |"


def render() -> str:
    workloads = {p.stem: workload_constants(p) for p in sorted(WORKLOADS.glob("*.json"))}
    presets = {p.stem: preset_constants(p) for p in sorted(MACHINES.glob("*.toml"))}

    lines = [
        "# Model constants",
        "",
        "Every constant of schedsim's models that is not kernel code: the workload models' costs "
        "and shapes (`crates/schedsim-core/data/workloads/*.json`) and the machine presets' "
        "physical constants (`python/schedsim/machines/*.toml`: power, voltages, idle power, "
        "the HWP stand-in, kernel work cycles, SMT throughput, and every other estimated or "
        "calibrated value). Each is listed with its value, its kind and its source as recorded "
        "next to it in the data; the workload tables also give the justification.",
        "",
        "This page is generated by `scripts/models_doc.py` from those files (`make models-doc`); "
        "do not edit it by hand. `tests/test_models_doc.py` fails when it is out of date.",
        "",
        "Kinds:",
        "",
        "- **measured**: timed or counted on a real machine (ours, a seed's, a published run);",
        "- **vendor spec**: a vendor's published specification, device tree or firmware table;",
        "- **derived**: computed from other constants or documented counts;",
        "- **estimate**: our estimate, with the reasoning in the source;",
        "- **calibrated**: solved from one stated condition (a TDP, one measured run);",
        "- **software**: read from a program's, the kernel's or a file format's source;",
        "- **model choice**: a resolution of the model, not a physical quantity;",
        "- **untagged**: no source tag on the line (listed so that it can be given one).",
        "",
        "A workload constant's kind comes from its source text (its first word when that is "
        "`estimate`, `measured`, `calibrated`, ...); a preset constant's from its source tags "
        "(`[est]` estimate, `calibrated` calibrated, `[seed000]` measured, `[dt]` vendor spec, "
        "...; the key list is at the top of each preset and in docs/machines.md), the strongest "
        "of them when a line has several (calibrated, estimate, measured, vendor spec). Preset "
        "values sourced only from kernel code (intel_idle tables, kernel constants) are left out.",
        "",
        "## Summary",
        "",
    ]
    header = "| file | constants | " + " | ".join(KINDS) + " |"
    rule = "|---|---:|" + "---:|" * len(KINDS)
    all_w: Counter[str] = Counter(c.kind for cs in workloads.values() for c in cs)
    all_p: Counter[str] = Counter(c.kind for cs in presets.values() for c in cs)
    lines += [header, rule]
    lines.append(_counts_row("**all**", all_w + all_p))
    lines.append(_counts_row("**workloads**", all_w))
    lines.append(_counts_row("**machine presets**", all_p))
    for name, cs in workloads.items():
        lines.append(_counts_row(f"workloads/{name}.json", Counter(c.kind for c in cs)))
    for name, cs in presets.items():
        lines.append(_counts_row(f"machines/{name}.toml", Counter(c.kind for c in cs)))
    lines.append("")

    lines += ["## Workload models", ""]
    for name, cs in workloads.items():
        lines += [
            f"### {name}",
            "",
            f"`crates/schedsim-core/data/workloads/{name}.json`",
            "",
            "| constant | value | unit | kind | source | justification |",
            "|---|---:|---|---|---|---|",
        ]
        for c in cs:
            lines.append(
                f"| `{c.name}` | {_cell(c.value)} | {_cell(c.unit)} | {c.kind} | "
                f"{_cell(c.source)} | {_cell(c.justification)} |"
            )
        lines.append("")

    lines += ["## Machine presets", ""]
    for name, cs in presets.items():
        lines += [
            f"### {name}",
            "",
            f"`python/schedsim/machines/{name}.toml`",
            "",
            "| constant | value | kind | tags | comment |",
            "|---|---|---|---|---|",
        ]
        for c in cs:
            tags = " ".join(f"`{t}`" for t in c.tags) or "-"
            lines.append(
                f"| `{c.name}` | `{_cell(c.value)}` | {c.kind} | {tags} | {_cell(c.source)} |"
            )
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if docs/models.md is stale")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        if not OUT.exists() or OUT.read_text() != text:
            print(f"{OUT.relative_to(ROOT)} is out of date: run make models-doc", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text)
    print(f"wrote {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
