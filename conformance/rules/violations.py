"""What a check reports when an implementation breaks a rule: the rule's id and the evidence."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Violation:
    requirement: str  # an id of spec/requirements.yaml
    message: str  # what was wrong, in words a reader of the report can act on
    index: int | None = None  # position of the offending frame or event, when there is one

    def __str__(self) -> str:
        where = f" (event {self.index})" if self.index is not None else ""
        return f"{self.requirement}{where}: {self.message}"


def short(value: Any, limit: int = 300) -> str:
    """A value in a message, cut at `limit` characters (JSON for anything but text)."""
    text = value if isinstance(value, str) else json.dumps(value)
    return text if len(text) <= limit else text[:limit] + "..."
