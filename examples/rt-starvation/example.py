"""A SCHED_FIFO hog and a fair hog pinned to one CPU of the Skylake client, on v6.12. RT would
starve the fair task for good; the fair server (a deferred 50 ms / 1 s deadline reservation)
serves it at its zero-laxity instant, 950 ms after the fair task arrived, and then for 50 ms at
the end of every period: the trace shows the switches at 0.95, 1.00, 1.95 and 2.00 s. Before
v6.12 RT throttling does the same job from the other side (with `kernel="5.15"` in
`simulate()` the RT task is throttled after 950 ms of each second; see docs/concepts.md, "The
RT class").

Run: .venv/bin/python examples/rt-starvation/example.py   (prints the ftrace text)
"""

import schedsim
from schedsim import programs as p


def hog(name: str, **kw) -> dict:
    return p.task(name, p.loop(p.run(1e12)), start_cpu=1, cpus=[1], **kw)


WORKLOAD = p.custom_workload([hog("rt", policy="SCHED_FIFO", priority=10), hog("fair")])


def simulate() -> schedsim.RunResult:
    return schedsim.run(
        "skylake-8x",
        WORKLOAD,
        kernel="6.12",
        governor="performance",
        duration="2100ms",
        trace=True,
        seed=1,
    )


if __name__ == "__main__":
    print(simulate().trace_text, end="")
