"""report.html: one self-contained page (inline CSS, no external assets, works offline), rendered by Jinja2 with
autoescape on from templates/report.html.j2."""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from markupsafe import Markup, escape

from conformance.harness.findings import Outcome, Verdict
from conformance.reports.model import DISPLAY, count, sections, severity_key, verdict_class
from conformance.reports.voices import NOT_MET, SOURCES, TITLES, citation_text, not_met

TEMPLATES = Path(__file__).resolve().parent / "templates"
_CODE = re.compile(r"`([^`]+)`")


def _inline_code(text: str | None) -> Markup:
    """The registry's `code` spans as <code>, everything else escaped."""
    return Markup(_CODE.sub(r"<code>\1</code>", str(escape(text or ""))))


def _slug(text: str) -> str:
    return "sec-" + re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def _pretty(text: Any) -> str:
    """JSON text indented when it parses, anything else as it is."""
    if text is None:
        return ""
    if not isinstance(text, str):
        return json.dumps(text, indent=2, ensure_ascii=False, default=str)
    try:
        return json.dumps(json.loads(text), indent=2, ensure_ascii=False)
    except ValueError:
        return text


def _evidence(item: dict[str, Any]) -> dict[str, Any]:
    request = item.get("request") or {}
    response = item.get("response") or {}
    status = response.get("status")
    got = status if status is not None else (response.get("error") or "no answer")
    head = [f"HTTP {status}" if status is not None else "no HTTP answer"]
    if response.get("content_type"):
        head.append(f"content-type: {response['content_type']}")
    head += [f"{k}: {v}" for k, v in (response.get("headers") or {}).items() if k.lower() != "content-type"]
    if response.get("error"):
        head.append(f"error: {response['error']}")
    events = response.get("events")
    return {
        "summary": f"{request.get('method', '?')} {request.get('url', '?')} \u2192 {got}",
        "user": request.get("as_user"),
        "request_body": _pretty(request.get("body")) if request.get("body") is not None else None,
        "response_head": "\n".join(head),
        "response_body": "\n".join(json.dumps(e, ensure_ascii=False) for e in events)
        if events
        else _pretty(response.get("body")) or None,
        "events": bool(events),
        "event_count": len(events or []),
        "reproduction": item.get("reproduction"),
        "extra": {k: v for k, v in item.items() if k not in ("request", "response", "reproduction")},
    }


def _view(data: dict[str, Any]) -> dict[str, Any]:
    grouped = []
    for name, entries in sections(data):
        shown = []
        for entry in entries:
            findings = [{**f, "evidence": [_evidence(e) for e in f["evidence"]]} for f in entry["findings"]]
            shown.append(
                {
                    **entry,
                    "cites": citation_text(entry.get("citation")),
                    "css": verdict_class(entry["verdict"]),
                    "problems": [f for f in findings if f["outcome"] != Outcome.PASSED],
                    "passes": [f for f in findings if f["outcome"] == Outcome.PASSED],
                }
            )
        grouped.append(
            {
                "name": name,
                "slug": _slug(name),
                "entries": shown,
                "counts": count(entries),
                "failing": sum(e["failing"] for e in entries),
                "sources": " and ".join(s for s in SOURCES if any(e["source"] == s for e in entries)),
            }
        )
    every = sorted((e for s in grouped for e in s["entries"]), key=severity_key)
    return {
        "data": data,
        "sections": grouped,
        "display": DISPLAY,
        # The two voices, each its own section: the protocol's violations first, then the contract's deviations.
        "voices": [{"source": s, "title": TITLES[s], "entries": not_met(every, s)} for s in SOURCES],
        "otherwise": [e for e in every if e["verdict"] not in (Verdict.PASS, *NOT_MET) and e["css"] != "neutral"],
    }


@cache
def _environment() -> Environment:
    environment = Environment(
        loader=FileSystemLoader(TEMPLATES),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    environment.filters["code"] = _inline_code
    environment.filters["vclass"] = verdict_class
    return environment


def render(data: dict[str, Any]) -> str:
    return _environment().get_template("report.html.j2").render(**_view(data))


def write(data: dict[str, Any], path: Path) -> Path:
    path.write_text(render(data), encoding="utf-8")
    return path
