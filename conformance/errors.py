"""Every exception of the suite, in one hierarchy, so that whoever catches one knows whose fault it is.

ConformanceError                the base: anything the suite raises on purpose
├── TargetError                 the target or baseline file cannot be used (a usage error, exit code 2)
├── ClientsMissing              the selected checks need the protocols' real clients, not installed (exit code 2)
├── HarnessError                the suite could not do its own part (start a server, provision, read the
│                               fake LLM's log): the affected requirements are ERROR, never the target's FAIL
└── CheckStopped                a check cannot go on; what it had not judged yet is NOT TESTABLE
    ├── Blocked                 ...because the implementation failed a step: that step's requirement FAILs
    └── NotTestable             ...because the target cannot be made to exercise it (an undeclared tool or
                                capability, no second user): nobody's failure, but never a pass
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from conformance.transport.exchanges import Exchange


class ConformanceError(Exception):
    """The base of every exception the suite raises on purpose."""


class TargetError(ConformanceError, ValueError):
    """A target or baseline file that cannot be used; the message says where and why."""


class ClientsMissing(ConformanceError):
    """The selected checks read answers with a protocol's real JavaScript client, and it cannot run here: the run
    stops before anything starts (exit code 2), with the command that installs them."""


class HarnessError(ConformanceError, RuntimeError):
    """The suite could not do its own part (start a server, provision, read a log): not the target's fault."""


class CheckStopped(ConformanceError):
    """A check stops early; the engine marks the requirements it had not judged yet NOT TESTABLE."""


class Blocked(CheckStopped):
    """The implementation failed a step the check depends on: `requirement` fails with `message`."""

    def __init__(self, requirement: str, message: str, exchanges: tuple[Exchange, ...] = ()) -> None:
        super().__init__(message)
        self.requirement, self.message, self.exchanges = requirement, message, exchanges


class BlockedBy(CheckStopped):
    """A set-up step the check needs (a plain turn, say) failed; its rule (`requirement`) is judged by a check of
    its own, so this check blames nothing: what it had not judged is NOT TESTABLE, blocked by that rule."""

    def __init__(self, requirement: str, message: str) -> None:
        super().__init__(message)
        self.requirement, self.message = requirement, message


class NotTestable(CheckStopped):
    """The target cannot be made to exercise what the check needs (undeclared tool, no database access...)."""


class TargetMisdeclared(TargetError):
    """Preflight found the target file wrong about the server (a prefix it does not serve, a tool it does not
    offer...): nothing would be judged fairly, so the run stops before any check. `key` is the file's key to fix."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(f"{key}: {message}")
        self.key, self.message = key, message
