"""Running many simulations: a local process pool (default), Dask or Ray (optional extras).

Every backend runs `execute(task)` — a module-level function, so that it pickles — on plain
data (`RunSpec.task()`: the run key and its SimConfig) and yields (task, RunText) as runs
complete, in completion order: the result JSON text, with the per-task list already cut out
by the worker (`split_tasks`), so that the process collecting a kernel build's results neither
parses nor re-serialises its tens of thousands of tasks. Each run is a pure function of its
SimConfig, so the results do not depend on the backend or the number of workers.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from typing import Any

from .. import native
from ..errors import ConfigError

BACKENDS = ("local", "dask", "ray")

Task = dict[str, Any]


class RunConfigError(ConfigError):
    """The core rejected one run's configuration; `key` names the run."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(key, message)
        self.key = key
        self.message = message

    def __str__(self) -> str:
        return self.message


class RunFailedError(RuntimeError):
    """The core failed on one run (a panic); `key` names the run."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(key, message)
        self.key = key
        self.message = message

    def __str__(self) -> str:
        return self.message


#: A run's result JSON text without its per-task list, and that list's JSON text (None when
#: the result has none).
RunText = tuple[str, str | None]

# the core serialises RunResult's fields in declaration order: `tasks` (objects of scalars)
# comes right before `samples`, and no later field has a `tasks` key (the last match is the
# list); inside a JSON string every quote is escaped, so neither marker can match inside one
_TASKS_START = ',"tasks":['
_TASKS_END = '],"samples":['


def split_tasks(text: str) -> RunText:
    """Cut the per-task list out of a result JSON text without parsing it: (the result without
    `tasks`, the list's JSON text). Falls back to parsing when the markers are not found."""
    start = text.rfind(_TASKS_START)
    end = text.find(_TASKS_END, start + 1) if start >= 0 else -1
    if start >= 0 and end >= 0:
        tasks = text[start + len(_TASKS_START) - 1 : end + 1]
        return text[:start] + text[end + 1 :], tasks
    result = json.loads(text)
    tasks_list = result.pop("tasks", None)
    tasks_text = None if tasks_list is None else json.dumps(tasks_list, separators=(",", ":"))
    return json.dumps(result, separators=(",", ":")), tasks_text


def execute(task: Task) -> RunText:
    """Run one simulation in the core and return its result JSON, split by `split_tasks` (the
    worker function)."""
    run = native.core_function("run")
    try:
        return split_tasks(str(run(native.config_json(task["config"]))))
    except ValueError as err:
        raise RunConfigError(task["key"], str(err)) from None
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as err:  # pyo3's PanicException does not pickle back: describe it
        raise RunFailedError(task["key"], f"the core failed: {type(err).__name__}: {err}") from None


def default_jobs() -> int:
    """The CPUs this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def check_backend(backend: str) -> None:
    if backend not in BACKENDS:
        raise ConfigError(f"unknown backend '{backend}'; allowed: {', '.join(BACKENDS)}")


def iter_results(
    tasks: Sequence[Task],
    backend: str = "local",
    jobs: int | None = None,
    address: str | None = None,
) -> Iterator[tuple[Task, RunText]]:
    """Run `tasks` on `backend` and yield (task, RunText) as each completes. Closing the
    iterator early (an error, Ctrl-C) cancels what has not started."""
    check_backend(backend)
    if jobs is not None and jobs < 1:
        raise ConfigError(f"--jobs {jobs}: must be at least 1")
    if not tasks:
        return iter(())
    if backend == "local":
        if address is not None:
            raise ConfigError("--address is for the dask and ray backends, not local")
        from .local import iter_local

        return iter_local(tasks, jobs or default_jobs())
    if backend == "dask":
        from .dask import iter_dask

        return iter_dask(tasks, jobs or default_jobs(), address)
    from .ray import iter_ray

    return iter_ray(tasks, jobs or default_jobs(), address)
