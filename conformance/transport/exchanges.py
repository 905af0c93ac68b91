"""Every HTTP exchange the suite makes, kept as evidence: what was sent, what came back, and a curl line
that reproduces it (a user's bearer token shown as $TOKEN, the controller admin's as $ADMIN_TOKEN; the report
says how to get each: conformance.reports.reproduce)."""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Exchange:
    method: str
    url: str
    request_body: str | None
    status: int | None = None
    content_type: str | None = None
    headers: dict[str, str] = field(default_factory=dict)  # the response headers a rule is about
    body: str = ""
    events: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None  # a transport error or a deadline
    user: str = "main"
    elapsed: float = 0.0
    authorization: str | None = "Bearer $TOKEN"  # as sent; real tokens are shown as $TOKEN / $ADMIN_TOKEN

    @property
    def outcome(self) -> int | str | None:
        """The status, or the transport error (or the suite's deadline) when no answer came."""
        return self.status if self.status is not None else self.error

    def excerpt(self) -> str:
        """The status (or transport error) and the start of the body."""
        body = self.body if len(self.body) <= 300 else self.body[:300] + "..."
        return f"{self.outcome} {body}".strip()

    def curl(self) -> str:
        parts = ["curl", "-sS", "-N" if self.events else "-i", "-X", self.method, shlex.quote(self.url)]
        if self.authorization is not None:
            # Double quotes, so that the shell fills in $TOKEN; a forged header is shown as it was sent.
            header = f"Authorization: {self.authorization}"
            variable = self.authorization in ("Bearer $TOKEN", "Bearer $ADMIN_TOKEN")
            parts += ["-H", f'"{header}"' if variable else shlex.quote(header)]
        if self.request_body is not None:
            parts += [
                "-H",
                shlex.quote("Content-Type: application/json"),
                "--data-binary",
                shlex.quote(self.request_body),
            ]
        return " ".join(parts)

    def as_evidence(self) -> dict[str, Any]:
        """The whole exchange: every event, or the whole body (a report may fold it, never cut it)."""
        evidence: dict[str, Any] = {
            "request": {"method": self.method, "url": self.url, "body": self.request_body, "as_user": self.user},
            "response": {"status": self.status, "content_type": self.content_type, "headers": self.headers},
            "reproduction": self.curl(),
        }
        if self.events:
            evidence["response"]["events"] = self.events
        elif self.body:
            evidence["response"]["body"] = self.body
        if self.error:
            evidence["response"]["error"] = self.error
        return evidence

    def describe(self) -> str:
        return f"{self.method} {self.url} -> {self.outcome}"


def json_or_none(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None
