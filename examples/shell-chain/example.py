"""A shell running three short commands one after another (fork → exec → run → exit, wait),
on the 4-core/8-thread Skylake client with the v5.2 CFS profile. Its trace shows fork
placement (`sched_wakeup_new` on an idle CPU), exec balancing and the parent's wakeup.

Run: .venv/bin/python examples/shell-chain/example.py   (prints the ftrace text)
"""

import schedsim
from schedsim import programs as p

WORKLOAD = p.custom_workload(
    [
        p.task(
            "sh",
            p.loop(p.run(300_000), p.fork("cmd"), p.wait(), count=3),
            start_cpu=0,
        ),
        p.task("cmd", p.exec_("grep"), p.run(2_000_000), p.exit_(), start=False),
    ]
)


def simulate() -> schedsim.RunResult:
    return schedsim.run("skylake-8x", WORKLOAD, kernel="5.2", trace=True, seed=1)


if __name__ == "__main__":
    print(simulate().trace_text, end="")
