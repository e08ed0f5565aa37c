"""schedsim: a deterministic simulator of Linux CPU scheduling, DVFS, idle states and power.

    >>> import schedsim
    >>> r = schedsim.run("skylake-8x", "periodic:tasks=4,period_ms=16,duty_pct=40",
    ...                  kernel="5.2", duration="2s")
    >>> r.primary, r.power["avg_package_w"]
    >>> r.tasks            # pandas DataFrame, one row per task
    >>> schedsim.list_machines()

The simulation runs in the compiled extension `schedsim._core` (Rust); this package owns
presets, configuration checks, the CLI and reports.
"""

from importlib.metadata import PackageNotFoundError, version

from .config import build_config
from .errors import ConfigError
from .machines import Machine, list_machines, load_machine
from .results import RunResult
from .runner import run, run_config

try:
    __version__ = version("schedsim")
except PackageNotFoundError:  # running from a source tree without an install
    __version__ = "0+unknown"

__all__ = [
    "ConfigError",
    "Machine",
    "RunResult",
    "__version__",
    "build_config",
    "list_machines",
    "load_machine",
    "run",
    "run_config",
]
