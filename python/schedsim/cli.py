"""The `schedsim` command line (typer + rich).

Errors in user input print one line to stderr (`schedsim: error: ...`) and exit with status 2;
a missing extension or an internal failure exits with status 1. Never a traceback (set
SCHEDSIM_DEBUG=1 to get one).
"""

from __future__ import annotations

import functools
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from rich.console import Console
from rich.table import Table

from . import __version__
from .bench import SCENARIOS, run_bench
from .config import TRACE_FORMATS, build_config, parse_cgroup_option, workload_catalog
from .errors import ConfigError, CoreUnavailableError
from .experiment import Experiment
from .machines import list_machines, load_machine
from .machines.describe import describe_machine
from .report import format_value, print_summary
from .runner import run_config
from .sweep import BACKENDS, check_backend
from .sweep.store import RunStore
from .units import parse_duration

app = typer.Typer(
    name="schedsim",
    help="Deterministic simulator of Linux CPU scheduling, DVFS, idle states and power.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

F = TypeVar("F", bound=Callable[..., Any])


def _fail(message: str, code: int) -> typer.Exit:
    one_line = " ".join(str(message).split())
    sys.stderr.write(f"schedsim: error: {one_line}\n")
    sys.stderr.flush()
    return typer.Exit(code)


def _guard(fn: F) -> F:
    """Turn every failure into one line on stderr and an exit status."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except (typer.Exit, typer.Abort, SystemExit, KeyboardInterrupt):
            raise
        except BrokenPipeError:
            # The reader went away (`schedsim machines --describe x | head`): stop quietly.
            try:
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, sys.stdout.fileno())
            except (OSError, ValueError):
                pass
            raise typer.Exit(1) from None
        except ConfigError as err:
            raise _fail(str(err), 2) from None
        except CoreUnavailableError as err:
            raise _fail(str(err), 1) from None
        except BaseException as err:  # includes pyo3's PanicException
            if os.environ.get("SCHEDSIM_DEBUG"):
                raise
            detail = f"{type(err).__name__}: {err}"
            raise _fail(
                f"internal error: {detail} (SCHEDSIM_DEBUG=1 shows the traceback)", 1
            ) from None

    return wrapper  # type: ignore[return-value]


def _console() -> Console:
    return Console(highlight=False, soft_wrap=True)


def _print_version(value: bool) -> None:
    if value:
        print(f"schedsim {__version__}")
        raise typer.Exit(0)


@app.callback()
def main(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            help="Print the version and exit.",
            is_eager=True,
            callback=_print_version,
        ),
    ] = False,
) -> None:
    """Deterministic simulator of Linux CPU scheduling, DVFS, idle states and power."""


# ---- run ------------------------------------------------------------------------------------


@app.command()
@_guard
def run(
    machine: Annotated[str, typer.Option("--machine", "-m", help="Machine preset name.")],
    workload: Annotated[
        str,
        typer.Option(
            "--workload", "-w", help="NAME[:key=value,...], e.g. periodic:tasks=4,duty_pct=50."
        ),
    ],
    kernel: Annotated[
        str | None, typer.Option(help="Kernel profile version, e.g. 5.2 or 6.12 (default 6.12).")
    ] = None,
    driver: Annotated[
        str | None,
        typer.Option(help="cpufreq driver (default: what the kernel picks on this machine)."),
    ] = None,
    governor: Annotated[
        str | None,
        typer.Option(help="cpufreq governor (default: the driver's default for this kernel)."),
    ] = None,
    invariance: Annotated[
        str | None,
        typer.Option(help="Frequency invariance: none, turbo:N, base, max, amd-midpoint, cpufreq."),
    ] = None,
    set_: Annotated[
        list[str] | None,
        typer.Option(
            "--set",
            help="key=value: a tunable (sysctl name), features.NAME=value, or CONFIG_HZ=N. "
            "Repeatable.",
        ),
    ] = None,
    cgroup: Annotated[
        list[str] | None,
        typer.Option(
            "--cgroup",
            help="PATH[:key=value,...]: define a cgroup v2 group with its cpu controller "
            "files: weight, max (QUOTA/PERIOD, QUOTA or max, in us), max_burst (us), "
            "uclamp_min, uclamp_max (percent or max), e.g. cg1:max=50000/100000,weight=200. "
            "Parents before children (a, then a/b). Repeatable.",
        ),
    ] = None,
    in_cgroup: Annotated[
        list[str] | None,
        typer.Option(
            "--in-cgroup",
            help="Run one copy of the workload in this cgroup (a --cgroup PATH). Repeatable: "
            "one copy per group. Without it, one copy runs in the root group.",
        ),
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of the run's PRNG.")] = 1,
    duration: Annotated[
        str | None, typer.Option(help="Simulated duration: 500ms, 2s, 1m, 100us, 250ns.")
    ] = None,
    json_out: Annotated[
        bool, typer.Option("--json", help="Print the result JSON (without the trace text).")
    ] = False,
    trace: Annotated[
        Path | None, typer.Option("--trace", help="Write the trace to this file.")
    ] = None,
    trace_format: Annotated[
        str | None,
        typer.Option(
            "--trace-format",
            help="Trace file format: ftrace (tracefs text, the default), perfetto (protobuf, "
            ".pftrace) or chrome (Trace Event Format JSON). Needs --trace.",
        ),
    ] = None,
) -> None:
    """Run one simulation and print a summary (or the result JSON with --json)."""
    if trace_format is not None and trace is None:
        raise ConfigError(f"--trace-format {trace_format}: give the file to write, --trace FILE")
    trace_format = trace_format or "ftrace"
    if trace_format not in TRACE_FORMATS:
        raise ConfigError(
            f"unknown trace format '{trace_format}'; allowed: {', '.join(TRACE_FORMATS)}"
        )
    config = build_config(
        machine,
        workload,
        kernel=kernel,
        driver=driver,
        governor=governor,
        invariance=invariance,
        sets=set_ or [],
        seed=seed,
        duration=duration,
        trace=trace_format if trace is not None else False,
        cgroups=[parse_cgroup_option(text) for text in cgroup or []],
        run_in=in_cgroup or [],
    )
    if trace is not None and (trace.is_dir() or not trace.parent.is_dir()):
        why = "is a directory" if trace.is_dir() else f"the directory {trace.parent} does not exist"
        raise ConfigError(f"--trace {trace}: {why}; give a file in an existing directory")
    result = run_config(config)
    if trace is not None:
        data = {
            "perfetto": result.trace_perfetto,
            "chrome": result.trace_chrome,
        }.get(trace_format, result.trace_text)
        if data is None:
            raise RuntimeError("the core returned no trace although one was requested")
        try:
            if isinstance(data, bytes):
                trace.write_bytes(data)
            else:
                trace.write_text(data, encoding="utf-8")
        except OSError as err:
            raise ConfigError(f"--trace {trace}: cannot write: {err.strerror}") from None
    if json_out:
        sys.stdout.write(result.to_json(include_trace=False) + "\n")
        return
    print_summary(_console(), result, config)
    if trace is not None:
        _console().print(f"\ntrace ({trace_format}) written to {trace}")


# ---- compare --------------------------------------------------------------------------------


@app.command()
@_guard
def compare(
    experiment: Annotated[
        Path, typer.Argument(metavar="EXPERIMENT.toml", help="The experiment file (TOML).")
    ],
    backend: Annotated[
        str, typer.Option(help=f"Where runs execute: {', '.join(BACKENDS)}.")
    ] = "local",
    jobs: Annotated[
        int | None,
        typer.Option("--jobs", "-j", help="Runs at once (default: the CPU count; 1 runs inline)."),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            "-o",
            help="Directory for per-run Parquet files (an interrupted sweep resumes from them), "
            "the tables as text and JSON, and report.html with its plots.",
        ),
    ] = None,
    json_out: Annotated[
        Path | None,
        typer.Option("--json", help="Write the tables as JSON to this file ('-': stdout)."),
    ] = None,
    address: Annotated[
        str | None,
        typer.Option(help="Dask scheduler or Ray cluster address (default: start a local one)."),
    ] = None,
) -> None:
    """Run an experiment (configs x benchmarks x values x repeats) and print MMTests-style
    comparison tables, power and perf-per-watt."""
    check_backend(backend)
    if jobs is not None and jobs < 1:
        raise ConfigError(f"--jobs {jobs}: must be at least 1")
    exp = Experiment.from_toml(experiment)
    _check_outputs(out, json_out)
    err = Console(stderr=True, highlight=False)
    stored = 0
    if out is not None:
        store = RunStore(out)
        stored = sum(store.path(s.key).is_file() for s in exp.specs)
    total = len(exp.specs)
    note = f", {stored} already stored in {out}" if stored else ""
    err.print(f"{exp.name}: {total} runs{note}")
    try:
        result = exp.run(backend=backend, jobs=jobs, out=out, address=address, progress=True)
    except KeyboardInterrupt:
        if out is not None:
            done = sum(RunStore(out).path(s.key).is_file() for s in exp.specs)
            message = (
                f"interrupted: {done} of {total} runs stored in {out}; run the same command "
                "again to resume"
            )
        else:
            message = "interrupted; nothing was stored (give --out DIR to keep finished runs)"
        sys.stderr.write(f"schedsim: {message}\n")
        raise typer.Exit(130) from None
    if json_out is not None and str(json_out) == "-":
        sys.stdout.write(result.to_json())
    else:
        sys.stdout.write(result.text())
        if json_out is not None:
            try:
                json_out.write_text(result.to_json(), encoding="utf-8")
            except OSError as error:
                raise ConfigError(f"--json {json_out}: cannot write: {error.strerror}") from None
    if out is not None:
        paths = result.write(out)
        err.print(
            f"{result.executed} runs executed, {result.loaded} loaded; report: {paths['report']}"
        )


def _check_outputs(out: Path | None, json_out: Path | None) -> None:
    """Refuse unusable output paths before any run, so that no result is computed for nothing."""
    if out is not None:
        if out.exists() and not out.is_dir():
            raise ConfigError(f"--out {out}: exists and is not a directory")
        try:
            out.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise ConfigError(f"--out {out}: cannot create: {error.strerror}") from None
    if json_out is not None and str(json_out) != "-":
        if json_out.is_dir():
            raise ConfigError(f"--json {json_out}: is a directory; give a file name")
        if not json_out.parent.is_dir():
            raise ConfigError(f"--json {json_out}: the directory {json_out.parent} does not exist")


# ---- machines -------------------------------------------------------------------------------


def _mhz(khz: int) -> str:
    return f"{khz / 1000:g}"


@app.command()
@_guard
def machines(
    describe: Annotated[
        str | None, typer.Option("--describe", help="Show one preset in detail.")
    ] = None,
) -> None:
    """List machine presets, or describe one with its sources."""
    console = _console()
    if describe is None:
        table = Table(title="Machine presets", title_justify="left")
        for col in ("Name", "Arch", "CPUs", "Packages", "Cores x SMT", "MHz", "Model"):
            table.add_column(
                col,
                justify="right" if col in ("CPUs", "Packages") else "left",
                # names are what the other commands take: never cut them
                no_wrap=col == "Name",
                min_width=max(len(n) for n in list_machines()) if col == "Name" else None,
            )
        for name in list_machines():
            m = load_machine(name)
            lo, hi = m.freq_range_khz
            table.add_row(
                m.name,
                m.arch,
                str(m.ncpus),
                str(m.packages),
                f"{m.ncores} x {m.smt}",
                f"{_mhz(lo)}-{_mhz(hi)}",
                m.preset.machine.model,
            )
        console.print(table)
        return

    describe_machine(console, load_machine(describe))


# ---- workloads ------------------------------------------------------------------------------


@app.command()
@_guard
def workloads(
    describe: Annotated[
        str | None, typer.Option("--describe", help="Show one workload's parameters and metrics.")
    ] = None,
) -> None:
    """List the workload generators, or describe one."""
    console = _console()
    catalog = workload_catalog()
    if describe is None:
        table = Table(title="Workloads", title_justify="left")
        table.add_column("Name", no_wrap=True, min_width=max(len(n) for n in catalog))
        table.add_column("Parameters (default)")
        table.add_column("Description")
        for name in sorted(catalog):
            info = catalog[name]
            params = ", ".join(f"{p['name']}={p.get('default')}" for p in info.get("params", []))
            table.add_row(name, params or "-", info.get("description", ""))
        console.print(table)
        return
    if describe not in catalog:
        raise ConfigError(f"unknown workload '{describe}'; allowed: {', '.join(sorted(catalog))}")
    info = catalog[describe]
    console.print(f"[bold]{describe}[/bold]: {info.get('description', '')}")
    table = Table(title="Parameters", title_justify="left")
    for col in ("name", "default", "description"):
        table.add_column(col)
    for p in info.get("params", []):
        table.add_row(p["name"], json.dumps(p.get("default")), p.get("description", ""))
    console.print(table)
    metrics = info.get("metrics", [])
    if metrics:
        names = [m if isinstance(m, str) else m.get("name", str(m)) for m in metrics]
        console.print("metrics: " + ", ".join(names))
    if info.get("primary") is not None:
        primary = info["primary"]
        text = primary if isinstance(primary, str) else json.dumps(primary)
        if "higher_is_better" in info:
            text += f" ({'higher' if info['higher_is_better'] else 'lower'} is better)"
        console.print(f"primary: {text}")
    if "open_ended" in info:
        console.print(
            "open-ended: runs until --duration"
            if info["open_ended"]
            else "fixed work: runs to completion unless --duration is given"
        )


# ---- bench ----------------------------------------------------------------------------------


@app.command()
@_guard
def bench(
    json_out: Annotated[bool, typer.Option("--json", help="Print the results as JSON.")] = False,
    scenario: Annotated[
        list[str] | None,
        typer.Option(
            "--scenario", help=f"Run only this scenario (repeatable): {', '.join(SCENARIOS)}."
        ),
    ] = None,
    duration: Annotated[str, typer.Option(help="Simulated duration of each scenario.")] = "5s",
) -> None:
    """Engine throughput: events per second and simulated seconds per wall second."""
    duration_ns = parse_duration(duration)
    if duration_ns == 0:
        raise ConfigError("duration 0: must be positive")
    console = Console(stderr=True, highlight=False)

    def progress(name: str) -> None:
        if not json_out:
            console.print(f"running {name} ...")

    results = run_bench(duration_ns, scenario, progress)
    if json_out:
        sys.stdout.write(json.dumps(results, indent=2) + "\n")
        return
    table = Table(title=f"schedsim bench ({duration} simulated per scenario)", title_justify="left")
    for col in ("scenario", "events", "wall s", "events/s", "sim s / wall s"):
        table.add_column(col, justify="left" if col == "scenario" else "right")
    for name, r in results["scenarios"].items():
        table.add_row(
            name,
            format_value(r["events"]),
            format_value(r["wall_s"]),
            format_value(r["events_per_s"]),
            format_value(r["sim_speed"]),
        )
    out = _console()
    out.print(table)
    for name, reason in results["skipped"].items():
        out.print(f"skipped {name}: {reason}")
