"""A finding's evidence as plain text, whole: the request, the response's status, headers, body or every event,
anything else the check kept, and the curl line. The JUnit details and the console's verbose listing print it;
nothing is cut (conformance.json holds the same, the HTML page collapses it, the findings document too)."""

from __future__ import annotations

import json
from typing import Any

from conformance.harness.findings import Outcome
from conformance.reports.voices import voice


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def _labelled(label: str, value: Any, indent: str) -> list[str]:
    """`label: value`, a value of several lines continued under it."""
    first, *rest = _text(value).splitlines() or [""]
    return [f"{indent}{label}: {first}", *(f"{indent}  {line}" for line in rest)]


def evidence_lines(item: dict[str, Any], indent: str = "  ") -> list[str]:
    request, response = item.get("request") or {}, item.get("response") or {}
    got = response.get("status") if response.get("status") is not None else response.get("error")
    user = f" (as {request['as_user']})" if request.get("as_user") else ""
    lines = [f"{indent}{request.get('method')} {request.get('url')} -> {got}{user}"]
    if request.get("body") is not None:
        lines += _labelled("request body", request["body"], indent)
    head = {"content-type": response["content_type"]} if response.get("content_type") else {}
    head |= dict(response.get("headers") or {})
    if head:
        lines += _labelled("response headers", ", ".join(f"{k}: {v}" for k, v in head.items()), indent)
    if response.get("events"):
        lines.append(f"{indent}response events ({len(response['events'])}):")
        lines += [f"{indent}  {_text(event)}" for event in response["events"]]
    elif response.get("body"):
        lines += _labelled("response body", response["body"], indent)
    if response.get("error") and response.get("status") is not None:
        lines += _labelled("error", response["error"], indent)
    for key, value in item.items():
        if key not in ("request", "response", "reproduction"):
            lines += _labelled(key, value, indent)
    if item.get("reproduction"):
        lines += _labelled("reproduce", item["reproduction"], indent)
    return lines


def finding_lines(entry: dict[str, Any], *, evidence: bool = True, indent: str = "") -> list[str]:
    """Every finding of an entry that did not pass, each message whole, with its evidence (`evidence`)."""
    lines = []
    for finding in entry["findings"]:
        if finding["outcome"] == Outcome.PASSED:
            continue
        lines += _labelled(f"[{finding['check']}] {finding['outcome']}", finding["message"], indent)
        if evidence:
            for item in finding["evidence"]:
                lines += evidence_lines(item, indent + "  ")
    return lines


def entry_heading(entry: dict[str, Any]) -> list[str]:
    """The requirement, its source (and citation) and its verdict."""
    lines = [
        f"{entry['id']} ({entry['level']}, {entry['section']}): {entry['text']}",
        f"source: {voice(entry)}",
        f"verdict: {entry['verdict']}",
    ]
    return lines + ([f"note: {entry['note']}"] if entry["note"] else [])
