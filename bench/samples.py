"""What one measured turn yields, and the medians the report prints."""

from __future__ import annotations

import statistics
from dataclasses import dataclass


@dataclass(frozen=True)
class TurnSample:
    """One turn of one subject: events counted, time to the first one, time to the end of the stream."""

    events: int
    ttfe: float  # seconds from sending the request (or starting the graph) to the first counted event
    total: float  # seconds from the same start to the end of the stream

    @property
    def events_per_second(self) -> float:
        return self.events / self.total if self.total > 0 else float("nan")


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def ratio(numerator: float, denominator: float) -> float:
    return numerator / denominator if denominator else float("nan")
