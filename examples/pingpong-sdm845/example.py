"""Two pairs of tasks ping-ponging through pipes on the Snapdragon 845 (4 LITTLE + 4 big) with
the v6.12 EEVDF profile, for 5 ms: sync wakeups, wake_affine and select_idle_sibling on an
asymmetric machine.

Run: .venv/bin/python examples/pingpong-sdm845/example.py   (prints the ftrace text)
"""

import schedsim
from schedsim import programs as p


def pair(i: int) -> list[dict]:
    a2b, b2a = f"a2b{i}", f"b2a{i}"
    return [
        p.task(f"ping{i}", p.loop(p.run(50_000), p.send(a2b), p.recv(b2a))),
        p.task(f"pong{i}", p.loop(p.recv(a2b), p.run(50_000), p.send(b2a))),
    ]


WORKLOAD = p.custom_workload(
    pair(0) + pair(1),
    [p.channel(n, capacity=1) for n in ("a2b0", "b2a0", "a2b1", "b2a1")],
)


def simulate() -> schedsim.RunResult:
    return schedsim.run("sdm845", WORKLOAD, kernel="6.12", duration="5ms", trace=True, seed=1)


if __name__ == "__main__":
    print(simulate().trace_text, end="")
