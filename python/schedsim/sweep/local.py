"""The local backend: this process (one job) or a `ProcessPoolExecutor` of spawned workers."""

from __future__ import annotations

import multiprocessing
import sys
from collections.abc import Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait

from . import RunText, Task, execute


def iter_local(tasks: Sequence[Task], jobs: int) -> Iterator[tuple[Task, RunText]]:
    if jobs == 1 or len(tasks) == 1:
        for task in tasks:
            yield task, execute(task)
        return
    # fork on Linux: workers start at once with the modules already imported (spawn would
    # re-import the `schedsim` console script in each worker, seconds on a small machine). The
    # executor forks every worker at the first submit, before the caller starts its progress
    # bar's thread; the workers only run the core. Elsewhere, spawn.
    method = "fork" if sys.platform == "linux" else "spawn"
    context = multiprocessing.get_context(method)
    pool = ProcessPoolExecutor(max_workers=min(jobs, len(tasks)), mp_context=context)
    pending: dict[Future[RunText], Task] = {}
    queue = list(reversed(tasks))
    window = 2 * min(jobs, len(tasks))  # a bounded queue: cancelling on Ctrl-C stays quick
    try:
        while queue or pending:
            while queue and len(pending) < window:
                task = queue.pop()
                pending[pool.submit(execute, task)] = task
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                task = pending.pop(future)
                yield task, future.result()
    finally:
        for future in pending:
            future.cancel()
        pool.shutdown(wait=not pending, cancel_futures=True)
