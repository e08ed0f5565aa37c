"""The Dask backend (`pip install schedsim[dask]`): a `distributed` cluster at `address`, or a
LocalCluster of `jobs` single-threaded worker processes started for the sweep."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence

from ..errors import ConfigError
from . import RunText, Task, execute


def iter_dask(
    tasks: Sequence[Task], jobs: int, address: str | None
) -> Iterator[tuple[Task, RunText]]:
    try:
        from distributed import Client, LocalCluster, as_completed
    except ImportError:
        raise ConfigError(
            "--backend dask needs dask's distributed scheduler: pip install 'schedsim[dask]'"
        ) from None
    cluster = None
    if address is None:
        cluster = LocalCluster(
            n_workers=jobs,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            silence_logs=logging.ERROR,
        )
        client = Client(cluster)
    else:
        try:
            client = Client(address, timeout=30)
        except OSError as err:
            raise ConfigError(
                f"--address {address}: cannot reach the Dask scheduler: {err}"
            ) from None
    futures = []
    try:
        by_key = {}
        for task in tasks:
            future = client.submit(execute, task, key=f"schedsim-run-{task['key']}", pure=False)
            by_key[future.key] = task
            futures.append(future)
        for future in as_completed(futures):
            yield by_key[future.key], future.result()
    finally:
        for future in futures:
            if not future.done():
                future.cancel()
        client.close()
        if cluster is not None:
            cluster.close()
