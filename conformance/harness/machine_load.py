"""How busy the machine the suite runs on is: the factor by which the suite stretches its own waits.

The suite waits for things to happen (a generation to reach the fake LLM, statistics to settle, a turn to end
before its deadline). Those waits are the suite's, not the contract's: on a machine whose run queue is longer than
its cores, every process gets a share of a core and everything takes longer, so a wait sized for a quiet machine
would blame the server for the machine's load. The calibration is the kernel's own, measured in the same run: the
one-minute load average over the cores this process may use. The contract's own bounds (an abort within 5 s, a
heartbeat gap) are never stretched: a check that judges one is judged again alone when it fails under load
(CheckSpec.timed)."""

from __future__ import annotations

import os

MAX_STRETCH = 6.0  # a wait never grows past this many times its quiet size, however loaded the machine


def cores() -> int:
    """The cores this process may run on (a container's or taskset's limit included, where the OS tells it)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return os.cpu_count() or 1


def stretch() -> float:
    """1.0 on a machine with a core for every runnable task; the load per core (at most MAX_STRETCH) when more
    tasks wait for a core than there are cores; 1.0 where the OS gives no load average."""
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):
        return 1.0
    return min(MAX_STRETCH, max(1.0, load / cores()))


def stretched(seconds: float) -> float:
    """A wait of the suite, sized for a quiet machine, stretched to the machine's load now."""
    return seconds * stretch()
