"""The log of every request the fake LLM received, so a test can assert what an implementation sent."""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field, fields
from threading import Lock
from typing import Any


@dataclass(frozen=True)
class RequestRecord:
    sequence: int
    transport: str  # "in-process" or "http"
    model: str | None
    messages: list[dict[str, Any]]
    tools: list[str]  # names of the tools bound
    temperature: float | None
    stream: bool
    script: str | None
    step: int | None  # None for a title request
    tag: str | None
    run: str | None
    outcome: str  # "ok", "failed: ...", "selection error: ..."
    # When it arrived (Unix time): a suite on the same machine compares it with when it sent a request (an abort).
    received_at: float = field(default_factory=time.time)
    extra: dict[str, Any] = field(default_factory=dict)  # e.g. the Authorization header over HTTP

    def as_dict(self) -> dict[str, Any]:
        """Its fields, for a JSON answer: not dataclasses.asdict, whose deep copy of every message was a sixth of the
        fake LLM's CPU in a profiled suite run (the suite reads the log often)."""
        return {item.name: getattr(self, item.name) for item in fields(self)}


class RequestLog:
    """The newest `max_records` requests (a long-running server must not grow without bound)."""

    def __init__(self, max_records: int = 10_000) -> None:
        self._records: deque[RequestRecord] = deque(maxlen=max_records)
        self._sequence = 0
        self._lock = Lock()

    def add(self, **fields: Any) -> RequestRecord:
        with self._lock:
            self._sequence += 1
            record = RequestRecord(sequence=self._sequence, **fields)
            self._records.append(record)
            return record

    def records(self, *, run: str | None = None, script: str | None = None) -> list[RequestRecord]:
        with self._lock:
            found = list(self._records)
        return [r for r in found if (run is None or r.run == run) and (script is None or r.script == script)]

    def clear(self) -> None:
        with self._lock:
            self._records.clear()
