"""Per-run result files: `DIR/runs/<key>.parquet`, one file per run, written atomically (a
temporary file in the same directory, fsynced, then renamed) as each run completes, so that an
interrupted sweep resumes: a run whose file exists is loaded, not rerun.

Each file holds one row: the run's identity (key, machine, config, benchmark, workload, param,
value, op, repeat, seed), every scalar of the result flattened with dots (`metrics.run_us_mean`,
`power.avg_package_w`, `turbostat.cstates.C6`, `sched.migrations`, and each cgroup's cpu.stat
as `cgroups.<path>.throttled_usec`, ...), the per-interval turbostat samples as list columns
(`samples.pkg_watt`, ...), and the result and SimConfig as JSON text: `result_json` holds
everything but the per-task list, which is `tasks_json` (a kernel build's 49,000 processes make
it hundreds of megabytes, and the tables never read it), and `config_json`.

Format 1 files kept the task list inside `result_json`; they are still read (slowly: the whole
list is parsed to be dropped) until their runs are executed again.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..results import TRACE_KEYS

if TYPE_CHECKING:
    from ..experiment import RunSpec

STORE_FORMAT = 2
#: Formats `load` reads.
READABLE_FORMATS = (1, 2)
IDENTITY = ("run_key", "machine", "config", "benchmark", "workload", "param", "value", "op",
            "repeat", "seed")  # fmt: skip
FLAT_SECTIONS = ("power", "turbostat", "sched", "sim", "cgroups")


def _flatten(prefix: str, value: Any, out: dict[str, Any]) -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            _flatten(f"{prefix}.{k}", v, out)
    elif value is None or isinstance(value, bool | int | float | str):
        out[prefix] = value


def flat_row(spec: RunSpec, result: dict[str, Any]) -> dict[str, Any]:
    """One run as a flat dict of scalars (a row of `ExperimentResult.runs`)."""
    row: dict[str, Any] = {
        "run_key": spec.key,
        "machine": spec.machine,
        "config": spec.config,
        "benchmark": spec.benchmark,
        "workload": spec.workload,
        "param": spec.param,
        "value": spec.value,
        "op": spec.op,
        "repeat": spec.repeat,
        "seed": spec.seed,
    }
    primary = result.get("primary") or {}
    row["primary"] = primary.get("name")
    row["primary_value"] = primary.get("value")
    row["higher_is_better"] = primary.get("higher_is_better")
    for name, value in (result.get("metrics") or {}).items():
        row[f"metrics.{name}"] = value
    for section in FLAT_SECTIONS:
        _flatten(section, result.get(section) or {}, row)
    return row


def sample_columns(result: dict[str, Any]) -> dict[str, list[Any]]:
    """The per-interval samples as columns: {"t_s": [...], "pkg_watt": [...], ...}."""
    flat_samples = []
    for sample in result.get("samples") or []:
        flat: dict[str, Any] = {}
        for k, v in sample.items():
            _flatten(k, v, flat)
        flat_samples.append(flat)
    keys = list(dict.fromkeys(k for flat in flat_samples for k in flat))
    return {k: [flat.get(k) for flat in flat_samples] for k in keys}


class RunStore:
    """The result files of one output directory."""

    def __init__(self, out: str | Path) -> None:
        self.dir = Path(out) / "runs"
        self.dir.mkdir(parents=True, exist_ok=True)

    def path(self, key: str) -> Path:
        return self.dir / f"{key}.parquet"

    def load(self, spec: RunSpec, tasks: bool = True) -> dict[str, Any] | None:
        """The stored result of `spec` (without its per-task list unless `tasks`), or None when
        there is none (or it is unreadable, in which case the run is done again)."""
        import pyarrow.parquet as pq

        path = self.path(spec.key)
        if not path.is_file():
            return None
        try:
            names = pq.ParquetFile(path).schema_arrow.names
            columns = ["run_key", "store_format", "result_json"]
            if tasks and "tasks_json" in names:
                columns.append("tasks_json")
            row = pq.read_table(path, columns=columns).to_pylist()[0]
        except Exception:  # a damaged file is rerun, never trusted
            return None
        fmt = row.get("store_format")
        if row.get("run_key") != spec.key or fmt not in READABLE_FORMATS:
            return None
        result = json.loads(row["result_json"])
        if tasks and row.get("tasks_json") is not None:
            result["tasks"] = json.loads(row["tasks_json"])
        if not tasks:
            result.pop("tasks", None)
        return result

    def save(self, spec: RunSpec, result: dict[str, Any], tasks_text: str | None = None) -> Path:
        """Write the run's file atomically. The per-task list is `result["tasks"]`, or
        `tasks_text` when the caller kept it as the core's JSON text."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        record = flat_row(spec, result)
        for name, column in sample_columns(result).items():
            record[f"samples.{name}"] = column
        stored = {k: v for k, v in result.items() if k not in (*TRACE_KEYS, "tasks")}
        record["result_json"] = json.dumps(stored, separators=(",", ":"))
        tasks = result.get("tasks")
        if tasks is not None:
            tasks_text = json.dumps(tasks, separators=(",", ":"))
        record["tasks_json"] = tasks_text
        record["config_json"] = json.dumps(spec.sim_config, separators=(",", ":"))
        record["store_format"] = STORE_FORMAT
        table = pa.Table.from_pylist([record])
        final = self.path(spec.key)
        fd, tmp = tempfile.mkstemp(prefix=f".{spec.key}.", suffix=".tmp", dir=self.dir)
        try:
            with os.fdopen(fd, "wb") as f:
                pq.write_table(table, f)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, final)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return final

    def stale_temporaries(self) -> list[Path]:
        return sorted(self.dir.glob(".*.tmp"))

    def clean(self) -> None:
        """Remove temporary files left by an interrupted write."""
        for path in self.stale_temporaries():
            path.unlink(missing_ok=True)
