"""The HTML report of a comparison: one self-contained page (inline CSS, no scripts) with the
plots beside it in `plots/` and every MMTests table."""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import __version__
from .plots import plot_benchmark

if TYPE_CHECKING:
    from ..compare import ExperimentResult

CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2em auto;
       max-width: 1200px; padding: 0 1em; color: #222; }
h1 { margin-bottom: 0.2em; } h2 { border-bottom: 1px solid #ccc; padding-bottom: 0.2em;
       margin-top: 2em; } h3 { margin-top: 1.5em; }
.muted { color: #666; }
table.configs { border-collapse: collapse; margin: 1em 0; font-size: 0.9em; }
table.configs th, table.configs td { border: 1px solid #ccc; padding: 0.3em 0.6em;
       text-align: left; vertical-align: top; }
table.configs th { background: #f3f3f3; }
pre { background: #fafafa; border: 1px solid #e3e3e3; padding: 0.8em; overflow-x: auto;
      font-size: 0.85em; line-height: 1.3; }
.better { color: #0a7a2f; font-weight: bold; } .worse { color: #b3261e; font-weight: bold; }
.plots { display: flex; flex-wrap: wrap; gap: 0 1.5em; }
figure { margin: 1em 0; flex: 1 1 540px; } figure.wide { flex-basis: 100%; }
figure img { max-width: 100%; border: 1px solid #eee; }
figcaption { color: #555; font-size: 0.9em; }
"""

_SIG = re.compile(r"\*\s*(-?)\s*(\d+\.\d+)%\*")


def _mark(text: str) -> str:
    """Escape a rendered table and colour its significant cells: positive is better."""

    def repl(m: re.Match[str]) -> str:
        cls = "worse" if m.group(1) == "-" else "better"
        return f'<span class="{cls}">{m.group(0)}</span>'

    return _SIG.sub(repl, html.escape(text))


def _fmt(value: Any) -> str:
    if value is None or value == {} or value == "":
        return "—"
    if isinstance(value, dict):
        return ", ".join(f"{k}={v}" for k, v in value.items())
    return str(value)


def write_report(result: ExperimentResult, out: Path) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    plots_dir = out / "plots"
    exp = result.experiment
    data = result.to_dict()
    e = html.escape
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>schedsim compare: {e(exp.name)}</title>",
        f"<style>{CSS}</style></head><body>",
        f"<h1>{e(exp.name)}</h1>",
    ]
    if exp.description:
        parts.append(f"<p>{e(exp.description)}</p>")
    runs = data["runs"]
    parts.append(
        f'<p class="muted">schedsim {e(__version__)} · {runs["total"]} runs '
        f"({exp.repeats} repeats, experiment seed {exp.seed}) · baseline "
        f"<b>{e(exp.config_names[0])}</b> · {e(result.header().splitlines()[-1])}</p>"
    )
    parts.append("<h2>Configs</h2>")
    parts.append(
        '<table class="configs"><tr><th>config</th><th>machine</th><th>kernel</th>'
        "<th>driver</th><th>governor</th><th>invariance</th><th>tunables</th>"
        "<th>features</th><th>machine overrides</th></tr>"
    )
    for config in data["configs"]:
        for machine, resolved in config["resolved"].items():
            parts.append(
                "<tr>"
                + "".join(
                    f"<td>{e(_fmt(v))}</td>"
                    for v in (
                        config["name"],
                        machine,
                        resolved.get("kernel"),
                        resolved.get("driver"),
                        resolved.get("governor"),
                        resolved.get("invariance"),
                        config.get("tunables"),
                        config.get("features"),
                        config.get("machine"),
                    )
                )
                + "</tr>"
            )
    parts.append("</table>")
    bench_desc = []
    for b in data["benchmarks"]:
        sweep = (
            f"{b['param']} over {', '.join(map(str, next(iter(b['values'].values()))))}"
            if b["param"]
            else "no swept parameter"
        )
        duration = f", {b['duration_ns'] / 1e9:g} s simulated" if b["duration_ns"] else ""
        bench_desc.append(
            f"<li><b>{e(b['name'])}</b> ({e(b['workload'])}): {e(sweep)}, "
            f"params {e(_fmt(b['params']))}{e(duration)}; summarised as {e(b['summarise'])}</li>"
        )
    parts.append(f"<ul>{''.join(bench_desc)}</ul>")

    tables = result.table_list
    for mdef in exp.machines:
        for bdef in exp.benchmarks:
            parts.append(f"<h2>{e(bdef.name)} on {e(mdef.name)}</h2>")
            parts.append('<div class="plots">')
            for caption, path in plot_benchmark(result, mdef.name, bdef, plots_dir):
                rel = path.relative_to(out).as_posix()
                wide = ' class="wide"' if path.stem.endswith(("frequency", "idle")) else ""
                parts.append(
                    f'<figure{wide}><img src="{e(rel)}" alt="{e(caption)}">'
                    f"<figcaption>{e(caption)}</figcaption></figure>"
                )
            parts.append("</div>")
            for table in tables:
                if (
                    table.meta.get("machine") == mdef.name
                    and table.meta.get("benchmark") == bdef.name
                ):
                    parts.append(f"<h3>{e(table.title)}</h3>")
                    body = table.render().split("\n", 1)[1]
                    parts.append(f"<pre>{_mark(body)}</pre>")
    parts.append(
        '<p class="muted">Files: <a href="tables.txt">tables.txt</a> · '
        '<a href="tables.json">tables.json</a> · <a href="runs.parquet">runs.parquet</a> '
        "(one row per run) · runs/ (one Parquet file per run)</p>"
    )
    parts.append("</body></html>")
    path = out / "report.html"
    tmp = out / ".report.html.tmp"
    tmp.write_text("\n".join(parts) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path
