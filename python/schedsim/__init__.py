"""schedsim: a deterministic simulator of Linux CPU scheduling, DVFS, idle states and power.

    >>> import schedsim
    >>> r = schedsim.run("skylake-8x", "periodic:tasks=4,period_ms=16,duty_pct=40",
    ...                  kernel="5.2", duration="2s")
    >>> r.primary, r.power["avg_package_w"]
    >>> r.tasks            # pandas DataFrame, one row per task
    >>> schedsim.list_machines()
    >>> res = schedsim.Experiment.from_toml("experiments/quick.toml").run(out="out/quick")
    >>> res.runs, res.tables; print(res.text())

The simulation runs in the compiled extension `schedsim._core` (Rust); this package owns
presets, configuration checks, the CLI and reports.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .config import build_config
    from .errors import ConfigError
    from .experiment import Experiment
    from .machines import Machine, list_machines, load_machine
    from .results import RunResult
    from .runner import run, run_config

# The public names, imported on first use: `import schedsim.sweep` in a sweep's worker process
# then costs milliseconds, not the pandas/pydantic import of the whole package.
_EXPORTS = {
    "ConfigError": ".errors",
    "Experiment": ".experiment",
    "Machine": ".machines",
    "RunResult": ".results",
    "build_config": ".config",
    "list_machines": ".machines",
    "load_machine": ".machines",
    "run": ".runner",
    "run_config": ".runner",
}


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("schedsim")
    except PackageNotFoundError:  # running from a source tree without an install
        return "0+unknown"


def __getattr__(name: str) -> Any:
    if name == "__version__":
        value: Any = _version()
    elif name in _EXPORTS:
        value = getattr(import_module(_EXPORTS[name], __name__), name)
    else:
        raise AttributeError(f"module 'schedsim' has no attribute '{name}'")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


__all__ = [
    "ConfigError",
    "Experiment",
    "Machine",
    "RunResult",
    "__version__",
    "build_config",
    "list_machines",
    "load_machine",
    "run",
    "run_config",
]
