"""How the test command's workers (pytest-xdist, `--dist loadgroup`) are handed the work: longest units first, and a
short unit behind a long one.

Two things of xdist's own scheduler (LoadScopeScheduling, xdist 3.8) spoil the wall time of a command whose tests
range from milliseconds to minutes:
- it orders the units (a module's tests, an `xdist_group`) by their number of tests, so a single eight-minute test
  (a GNS3 run) is handed out last; `--no-loadscope-reorder` keeps the collection order instead, which
  tests/conftest.py sorts by the measured seconds of tests/durations.json;
- it hands a worker its next unit before the worker's last test starts (a test runs only once the worker knows the
  test that follows it), so the unit queued behind a long one waits the whole long test: if that is the next long
  unit, two long tests run one after the other on one worker while others idle. Here a worker whose pending tests
  are still expected to take LONG_PENDING seconds or more is given the shortest unit that waits instead.
"""

from __future__ import annotations

from collections.abc import Callable

from xdist.scheduler import LoadGroupScheduling

# A worker with this many seconds of tests still ahead is busy for a while: what it is given next waits that long.
LONG_PENDING = 20.0


class LongestFirstScheduling(LoadGroupScheduling):
    """`--dist loadgroup`, units in the collection's order (longest first), the shortest unit behind a long one."""

    def __init__(self, config, log=None, *, seconds: Callable[[str], float]) -> None:
        super().__init__(config, log)
        self._seconds = seconds

    def _pending_seconds(self, node) -> float:
        units = self.assigned_work.get(node, {}).values()
        return sum(self._seconds(nodeid) for unit in units for nodeid, done in unit.items() if not done)

    def _assign_work_unit(self, node) -> None:
        if self.workqueue and self._pending_seconds(node) >= LONG_PENDING:
            shortest = next(reversed(self.workqueue))
            self.workqueue.move_to_end(shortest, last=False)  # xdist takes the front unit
        super()._assign_work_unit(node)
