"""What a check concludes, requirement by requirement: every judgement becomes a Finding with its evidence."""

from __future__ import annotations

from conformance.errors import Blocked
from conformance.harness.findings import Finding, Outcome
from conformance.transport.exchanges import Exchange

# Judged from every exchange of every check (conformance.channels.gns3_stream), so any check may record them.
OBSERVED_BY_EVERY_CHECK = frozenset({"EVENT-001", "CONTRACT-001", "ERROR-001"})


class FindingsRecorder:
    """The findings of one check. `evidence` is the check's exchanges: a judgement that names none shows the last
    two."""

    def __init__(self, check_id: str, requirements: list[str], evidence: list[Exchange]) -> None:
        self.check_id, self.requirements, self.evidence = check_id, requirements, evidence
        self.recorded: list[Finding] = []

    def _record(self, requirement: str, outcome: Outcome, message: str, exchanges: tuple[Exchange, ...]) -> None:
        if requirement not in self.requirements and requirement not in OBSERVED_BY_EVERY_CHECK:
            raise AssertionError(f"check {self.check_id} judged {requirement}, which it does not list")
        shown = exchanges or tuple(self.evidence[-2:])
        self.recorded.append(Finding(requirement, outcome, message, self.check_id, [e.as_evidence() for e in shown]))

    def expect(self, requirement: str, ok: bool, message: str, *exchanges: Exchange) -> bool:
        """Judge a requirement: failed with `message` unless `ok`; several calls may judge one requirement."""
        self._record(requirement, Outcome.PASSED if ok else Outcome.FAILED, "ok" if ok else message, exchanges)
        return ok

    def passed(self, requirement: str, *exchanges: Exchange, message: str = "ok") -> None:
        self._record(requirement, Outcome.PASSED, message, exchanges)

    def not_testable(self, requirement: str, reason: str) -> None:
        self._record(requirement, Outcome.NOT_TESTABLE, reason, ())

    def require(self, ok: bool, requirement: str, message: str, *exchanges: Exchange) -> None:
        """Like expect, but stop the check when it fails: what follows depends on it."""
        if not ok:
            raise Blocked(requirement, message, exchanges)

    def require_status(self, exchange: Exchange, status: int, requirement: str) -> None:
        if exchange.status != status:
            got = exchange.outcome
            raise Blocked(
                requirement,
                f"{exchange.method} {exchange.url} answered {got}, expected {status}: {exchange.body[:300]}",
                (exchange,),
            )

    def judged(self) -> set[str]:
        return {f.requirement for f in self.recorded}

    def stopped(self, blocked: Blocked) -> None:
        """The finding of the step that stopped the check (it may name any requirement: the step's own)."""
        shown = blocked.exchanges or tuple(self.evidence[-2:])
        self.recorded.append(
            Finding(
                blocked.requirement, Outcome.FAILED, blocked.message, self.check_id, [e.as_evidence() for e in shown]
            )
        )
