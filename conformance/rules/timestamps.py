"""Timestamps as implementations write them: one lenient parser for comparing instants (TIME-*, LIST-*,
MIGRATION-*), whatever the spelling; whether a spelling is the contract's own is TIME-001's business."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

_FRACTION = re.compile(r"(\.\d{6})\d+")


def parse_time(value: Any) -> datetime | None:
    """A timestamp as an aware datetime (naive ones read as UTC, as SQLite's CURRENT_TIMESTAMP); None when it is
    not a date-time."""
    if not isinstance(value, str) or not value.strip():
        return None
    text = _FRACTION.sub(r"\1", value.strip().replace(" ", "T", 1))
    if text[-1:] in ("Z", "z"):
        text = text[:-1] + "+00:00"
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def time_key(value: Any) -> tuple[int, Any]:
    """Comparable form of a timestamp: parsed when possible, else the raw text (compared as text)."""
    parsed = parse_time(value)
    return (1, parsed) if parsed is not None else (0, str(value))
