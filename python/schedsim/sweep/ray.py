"""The Ray backend (`pip install schedsim[ray]`): a Ray cluster at `address` (e.g. "auto"), or a
local Ray instance with `jobs` CPUs started (and shut down) for the sweep."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence

from ..errors import ConfigError
from . import RunText, Task, execute


def iter_ray(
    tasks: Sequence[Task], jobs: int, address: str | None
) -> Iterator[tuple[Task, RunText]]:
    try:
        import ray
    except ImportError:
        raise ConfigError("--backend ray needs Ray: pip install 'schedsim[ray]'") from None
    started = False
    if not ray.is_initialized():
        if address is None:
            ray.init(num_cpus=jobs, include_dashboard=False, log_to_driver=False)
        else:
            ray.init(address=address, include_dashboard=False, log_to_driver=False)
        started = True
    remote = ray.remote(num_cpus=1)(execute)
    refs = {}
    try:
        for task in tasks:
            refs[remote.remote(task)] = task
        pending = list(refs)
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            for ref in done:
                yield refs[ref], ray.get(ref)
    finally:
        for ref in refs:
            with contextlib.suppress(Exception):  # best effort on the way out
                ray.cancel(ref)
        if started:
            ray.shutdown()
