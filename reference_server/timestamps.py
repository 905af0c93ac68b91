"""Timestamps: RFC 3339 in UTC with microseconds and `Z` (TIME-001), strictly increasing where asked (LIST-003)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"


def utc_now() -> str:
    return datetime.now(UTC).strftime(_FORMAT)


def parse(value: str) -> datetime:
    """Read our own format and SQLite's CURRENT_TIMESTAMP (`YYYY-MM-DD HH:MM:SS`, legacy rows), as UTC."""
    parsed = datetime.fromisoformat(value.replace("Z", "+00:00").replace(" ", "T", 1))
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def normalise(value: str | None) -> str | None:
    """Any stored timestamp, as RFC 3339 UTC `Z` (legacy rows are rewritten on read, never in the file)."""
    return None if value is None else parse(value).astimezone(UTC).strftime(_FORMAT)


def later_than(previous: str | None) -> str:
    """Now, or one microsecond after `previous` when the clock has not moved past it."""
    now = datetime.now(UTC)
    if previous is not None:
        floor = parse(previous) + timedelta(microseconds=1)
        now = max(now, floor)
    return now.strftime(_FORMAT)
