"""MMTests' thread/client count ranges (spec/workloads.md §1.7).

- `topology`: `bin/generate-stride-range` (what `threads_topology_walk_begin MIN MAX` expands to,
  used by dbench, tbench, hackbench, schbench, pgbench): MIN and MAX, plus points along the
  topology levels 1→SMT weight (4 steps), SMT→LLC (4), LLC→node (3, or 6 with more than 3 LLCs
  per node), node→all CPUs (2), CPUs→2×CPUs (3), CPUs→4×CPUs (2), 4×CPUs→MAX (1), each stride
  truncated to one decimal as `bc scale=1` does and each point to its integer part; sorted,
  deduplicated and clipped to [MIN, MAX] (and to the cutoff).
- `large`: `generate-stride-range --stride-large` (`threads_large_stride_begin`).
- `powertwo`: `threads_powertwo_begin` (kernbench, stress-ng): MIN, 2·MIN, 4·MIN, ... ≤ MAX,
  plus MAX.
- `huge`: `threads_huge_stride_begin` (`shellpack_src/bin/rewrite-shellpack` until 2026-03, what
  pgbench swept then): with MAX ≥ 32, `seq MIN 4 8`, `seq 12 9 32`, `seq 48 31 MAX`; with
  MAX ≥ 8, `seq MIN 3 8`, `seq 12 6 MAX`; else `seq MIN 2 MAX`; plus MAX.
- `dbench-classic`: the loop of `shellpack_src/src/dbench/dbench-bench` until 2025-05
  ("dbench: Use conventional client count selection"): MIN, then doubling while below the CPU
  count and ×8 from it, up to MAX (MMTests' io-dbench4-async set MAX = 8×CPUs).

`align = "nodes"` rounds every point of at least NUM_NODES up the way pgbench-bench does before
it runs `pgbench -j NUM_NODES` (`(N + NUM_NODES - 1) & ~(NUM_NODES - 1)`), dropping repeats.
"""

from __future__ import annotations

from dataclasses import dataclass

PATTERNS = ("topology", "large", "powertwo", "huge", "dbench-classic")
ALIGNS = ("nodes",)


@dataclass(frozen=True)
class Topology:
    """The counts `shellpacks/common.sh` reads from the machine."""

    cpus: int  # NUM_LOGICAL_CPUS
    smt: int  # SMT_WEIGHT (threads per core)
    llcs: int  # NUM_LLCS
    nodes: int  # NUM_NODES

    @property
    def llc_weight(self) -> int:
        return self.cpus // max(1, self.llcs)

    @property
    def node_weight(self) -> int:
        return self.cpus // max(1, self.nodes)


def _seq_tenths(start: int, stride_tenths: int, end: int) -> list[int]:
    """`seq START STRIDE END | cut -d. -f1` with STRIDE in tenths (exact decimal arithmetic)."""
    if stride_tenths <= 0:
        return []
    out = []
    v = start * 10
    while v <= end * 10:
        out.append(v // 10)
        v += stride_tenths
    return out


def _seq(start: int, step: int, end: int) -> list[int]:
    return list(range(start, end + 1, step)) if step > 0 else []


def topology_points(topo: Topology, maximum: int) -> list[int]:
    """gen_topology: the points along the topology levels (before clipping)."""
    n, smt, llc, node = topo.cpus, topo.smt, topo.llc_weight, topo.node_weight
    node_stride = 6 if node // max(1, llc) > 3 else 3
    levels = [
        (1, smt, 4),
        (smt, llc, 4),
        (llc, node, node_stride),
        (node, n, 2),
        (n, n * 2, 3),
        (n, n * 4, 2),
        (n * 4, maximum, 1),
    ]
    values: list[int] = []
    last = None
    for start, end, steps in levels:
        if last == (start, end) or start == end:
            continue
        last = (start, end)
        diff = end - start
        if diff < 0:
            continue  # bc prints a negative stride: the level is skipped
        stride_tenths = (diff * 10) // steps  # bc scale=1 truncates
        values += _seq_tenths(start, stride_tenths, end)
    return values


def large_points(topo: Topology, minimum: int, maximum: int) -> list[int]:
    """gen_large (generate-stride-range --stride-large)."""
    n = topo.cpus
    if maximum > n * 8:
        threads = _seq(minimum, 3, 8) + _seq(12, 9, 32) + _seq(48, 31, n)
        last_stride = (maximum - n * 2) // 8
        if last_stride <= 0:
            last_stride = 31
        threads += _seq(n * 2, last_stride, maximum)
    elif maximum > 32:
        threads = _seq(minimum, 3, 8) + _seq(12, 9, 32) + _seq(48, 31, maximum)
    elif maximum > 8:
        threads = _seq(minimum, 2, 8) + _seq(12, 6, maximum)
    else:
        threads = _seq(minimum, 2, maximum)
    return _ending_at_max(threads, minimum, maximum)


def _ending_at_max(threads: list[int], minimum: int, maximum: int) -> list[int]:
    """The stride macros' close: MAX is appended unless it ends the list already."""
    if not threads or threads[-1] != maximum:
        threads.append(maximum)
    return [t for t in threads if t >= minimum]


def huge_points(minimum: int, maximum: int) -> list[int]:
    """threads_huge_stride_begin."""
    if maximum >= 32:
        threads = _seq(minimum, 4, 8) + _seq(12, 9, 32) + _seq(48, 31, maximum)
    elif maximum >= 8:
        threads = _seq(minimum, 3, 8) + _seq(12, 6, maximum)
    else:
        threads = _seq(minimum, 2, maximum)
    return _ending_at_max(threads, minimum, maximum)


def dbench_classic_points(topo: Topology, minimum: int, maximum: int) -> list[int]:
    """dbench-bench's client loop: double below the CPU count, then multiply by 8."""
    threads = []
    client = minimum
    while client <= maximum:
        threads.append(client)
        client = client * 2 if client < topo.cpus else client * 8
    return threads


def align_to_nodes(values: list[int], nodes: int) -> list[int]:
    """pgbench-bench's rounding of a client count to a multiple of NUM_NODES (a power of
    two on every machine it meets), keeping counts below NUM_NODES and dropping repeats."""
    out: list[int] = []
    for v in values:
        if v >= nodes:
            v = (v + nodes - 1) & ~(nodes - 1)
        if v not in out:
            out.append(v)
    return out


def stride_range(
    pattern: str,
    minimum: int,
    maximum: int,
    topo: Topology,
    cutoff: int | None = None,
    align: str | None = None,
) -> list[int]:
    """The values MMTests sweeps for `pattern` between `minimum` and `maximum`."""
    values = _pattern_range(pattern, minimum, maximum, topo, cutoff)
    if align is None:
        return values
    if align != "nodes":
        raise ValueError(f"unknown stride align '{align}'; allowed: {', '.join(ALIGNS)}")
    return align_to_nodes(values, topo.nodes)


def _pattern_range(
    pattern: str, minimum: int, maximum: int, topo: Topology, cutoff: int | None
) -> list[int]:
    if pattern == "powertwo":
        if cutoff is not None:
            maximum = cutoff  # rewrite-shellpack: MMTESTS_THREAD_CUTOFF replaces the maximum
        threads = [minimum]
        value = minimum * 2
        if value != 0:
            while value <= maximum:
                threads.append(value)
                value *= 2
            if threads[-1] != maximum:
                threads.append(maximum)
        return [min(t, maximum) for t in threads]
    if pattern not in PATTERNS:
        raise ValueError(f"unknown stride pattern '{pattern}'; allowed: {', '.join(PATTERNS)}")
    if maximum <= 0 or minimum > maximum:
        return []
    if pattern == "topology":
        values = [minimum, maximum, *topology_points(topo, maximum)]
    elif pattern == "large":
        values = [minimum, *large_points(topo, minimum, maximum)]
    elif pattern == "huge":
        values = huge_points(minimum, maximum)
    else:
        values = dbench_classic_points(topo, minimum, maximum)
    limit = maximum if cutoff is None else cutoff
    return [v for v in sorted(set(values)) if minimum <= v <= maximum and v <= limit]
