"""What a mutant of the reference server is, and how one registers (MUTANTS, filled by mutants.py and the
mutants_*.py modules, which all import this one and not each other)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Mutant:
    name: str
    breaks: str  # what the variant does wrong, in words
    apply: Callable[[], None]
    targets: frozenset[str]
    consequences: frozenset[str] = field(default_factory=frozenset)
    # The areas of a channel mutant's channel (and of the rules every channel shares when it breaks one): empty for
    # the GNS3 mutants. Every mutant's run is judged by the checks of its targets and consequences
    # (runs.mutant_selection); these areas must hold those checks (test_channel_mutants.py).
    only: tuple[str, ...] = ()
    # Areas beyond those of its targets and consequences whose scenarios alone make what it breaks happen (a stream
    # rule broken only in a heartbeat's silence, say): their checks judge its run too (runs.mutant_selection).
    seen_in: tuple[str, ...] = ()


MUTANTS: dict[str, Mutant] = {}


def mutant(
    name: str,
    breaks: str,
    targets: set[str],
    consequences: set[str] = frozenset(),
    only: tuple[str, ...] = (),
    seen_in: tuple[str, ...] = (),
):
    def register(apply: Callable[[], None]) -> Callable[[], None]:
        if name in MUTANTS:
            raise LookupError(f"mutant {name!r} is defined twice")
        MUTANTS[name] = Mutant(
            name, breaks, apply, frozenset(targets), frozenset(consequences), tuple(only), tuple(seen_in)
        )
        return apply

    return register


def _transform_stream(change: Callable[[list[dict], dict], list[dict]]) -> None:
    """Rewrite the events of every turn on their way to the client; `change(batch, state)` returns the batch."""
    from reference_server.agent.turn import Turn

    original = Turn.stream

    async def stream(self) -> AsyncIterator[list[dict]]:
        state: dict = {}
        async for batch in original(self):
            changed = change([dict(e) for e in batch], state)
            if changed:
                yield changed

    Turn.stream = stream
