"""Input (INPUT-*): the stream request's members validated by type and value, 422 bodies with one entry per invalid
field, unknown members ignored in every request body, malformed JSON refused, a request's temperature used for its
turn. Every bounded value of every request, at and around its bounds, is inputs.boundaries' (boundaries.py)."""

from __future__ import annotations

import json
import math
from typing import Any

from conformance.channels.gns3_stream import StreamResult
from conformance.checks import check
from conformance.checks.blame import require_served
from conformance.checks.context import CheckContext
from conformance.checks.support import (
    answered,
    call_operation,
    judge_not_streamed,
    require_capability,
    setup_turn,
    valid_body,
)
from conformance.checks.turns import describe, script_text, served
from conformance.errors import HarnessError
from conformance.rules import boundaries as bounds_rules
from conformance.rules.operations import operation
from conformance.transport.exchanges import Exchange, json_or_none

# --- input ------------------------------------------------------------------------------------------------------


def _fields_of(entry: dict[str, Any]) -> list[str]:
    loc = entry.get("loc") if isinstance(entry, dict) else None
    if not isinstance(loc, list):
        return []
    parts = loc[1:] if loc[:1] == ["body"] else loc
    return [p for p in parts[:1] if isinstance(p, str)]


def _validation_problems(exchange: Exchange, fields: list[str] | None) -> list[str]:
    """INPUT-007 for one 422: the code, and details.errors with one entry per invalid field (`fields`; None
    when the body as a whole is invalid), each with `loc` and `msg`."""
    body = json_or_none(exchange.body)
    if not isinstance(body, dict):
        return [f"the 422 body is not a JSON object: {exchange.body[:200]!r}"]
    problems = []
    if body.get("code") != "validation_error":
        problems.append(f"code {body.get('code')!r}, expected 'validation_error'")
    errors = (body.get("details") or {}).get("errors") if isinstance(body.get("details"), dict) else None
    if not isinstance(errors, list) or not errors:
        return [*problems, f"details.errors is not a non-empty list: details {body.get('details')!r}"]
    for entry in errors:
        ok = (
            isinstance(entry, dict)
            and isinstance(entry.get("loc"), list)
            and bool(entry["loc"])
            and isinstance(entry.get("msg"), str)
            and bool(entry["msg"])
        )
        if not ok:
            problems.append(f"the entry {entry!r} lacks a non-empty `loc` list or `msg` string")
    if fields is not None:
        named = [f for entry in errors for f in _fields_of(entry)]
        per_field = {f: named.count(f) for f in fields}
        if any(count != 1 for count in per_field.values()) or len(errors) != len(fields):
            problems.append(
                f"expected one entry per invalid field {fields}, got {len(errors)} entries with locations "
                f"{[e.get('loc') if isinstance(e, dict) else e for e in errors]}"
            )
    return problems


async def _judge_422(
    ctx: CheckContext,
    requirement: str | None,
    body: Any,
    fields: list[str] | None,
    what: str,
    *,
    precheck: bool = True,
) -> StreamResult:
    result = await ctx.client.stream(body)
    exchange = result.exchange
    if requirement is not None:
        ctx.findings.expect(
            requirement, exchange.status == 422, f"{what}: answered {exchange.excerpt()}, expected 422", exchange
        )
    if precheck:
        judge_not_streamed(ctx, exchange, what)
    if exchange.status == 422:
        problems = _validation_problems(exchange, fields)
        ctx.findings.expect("INPUT-007", not problems, f"{what}: " + "; ".join(problems), exchange)
    return result


@check("inputs.validation")
async def validation(ctx: CheckContext) -> None:
    tagged = ctx.message("cs-plain")
    cases: list[tuple[str | None, Any, list[str] | None, str]] = [
        ("INPUT-001", {}, ["message"], "a body without `message`"),
        ("INPUT-001", {"message": ""}, ["message"], "an empty `message`"),
        ("INPUT-001", {"message": 42}, ["message"], "`message` 42 (a number)"),
        ("INPUT-001", {"message": None}, ["message"], "`message` null"),
        ("INPUT-002", {"message": tagged, "mode": "voice"}, ["mode"], '`mode` "voice"'),
        ("INPUT-003", {"message": tagged, "temperature": "hot"}, ["temperature"], '`temperature` "hot"'),
        # JSON types are taken as they are: a string, or a boolean, is not a number.
        ("INPUT-003", {"message": tagged, "temperature": "0.5"}, ["temperature"], '`temperature` "0.5" (a string)'),
        ("INPUT-003", {"message": tagged, "temperature": True}, ["temperature"], "`temperature` true"),
        ("INPUT-003", {"message": tagged, "temperature": False}, ["temperature"], "`temperature` false"),
        ("INPUT-004", {"message": tagged, "stream": 1}, ["stream"], "`stream` 1 (a number, not true)"),
        ("INPUT-004", {"message": tagged, "stream": "true"}, ["stream"], '`stream` "true" (a string)'),
        # SESSION-003 (sessions.id_validation) judges its status; here only the shape of its 422.
        (None, {"message": tagged, "session_id": 7}, ["session_id"], "`session_id` 7 (a number)"),
        ("INPUT-006", b"[]", None, "a JSON array `[]`"),
        ("INPUT-006", json.dumps([{"message": tagged}]).encode(), None, "a JSON array holding a valid request"),
        ("INPUT-006", json.dumps(tagged).encode(), None, "a JSON string"),
        ("INPUT-006", b"null", None, "JSON `null`"),
        ("INPUT-006", {"text": tagged}, ["message"], "an object without the required `message`"),
    ]
    # INPUT-007's "one entry per invalid field" is judged on a body combining values that the server refused one by
    # one: a value it accepts is INPUT-001..003's failure, not a second one here.
    refused: dict[str, Any] = {}
    for requirement, body, fields, what in cases:
        result = await _judge_422(ctx, requirement, body, fields, f"a stream request with {what}")
        if fields is not None and result.exchange.status == 422 and isinstance(body, dict) and fields[0] in body:
            refused.setdefault(fields[0], body[fields[0]])
    if len(refused) >= 2:
        combined = {"message": tagged, **refused}
        await _judge_422(
            ctx,
            None,
            combined,
            sorted(refused),
            f"a stream request with {len(refused)} invalid members at once ({', '.join(sorted(refused))})",
        )
    await _judge_422(
        ctx,
        "INPUT-004",
        {"message": tagged, "stream": False},
        ["stream"],
        "a stream request with `stream` false",
        precheck=False,
    )
    # The bounds themselves (a message of 1 or 100000 characters, temperature 0 and 2.0...) are inputs.boundaries'.
    accepted = [
        ("INPUT-002", {"message": tagged, "mode": "text", "stream": True}, "`mode` text and `stream` true"),
        ("INPUT-003", {"message": tagged, "temperature": None}, "`temperature` null"),
    ]
    for requirement, body, what in accepted:
        result = await ctx.client.stream(body)
        await require_served(
            ctx,
            served(ctx, result),
            result,
            requirement,
            f"a valid stream request with {what} was not served as a normal turn: {describe(result)}",
            stop=False,
        )


@check("inputs.malformed_json")
async def malformed_json(ctx: CheckContext) -> None:
    session = ctx.session_id()
    await setup_turn(ctx, session)  # so that renaming it would succeed with a valid body
    bodies = {
        "`{not json`": b"{not json",
        "an empty body": b"",
        "invalid UTF-8 bytes": b'{"message": "caf\xe9 \xff\xfe"}',
        "a truncated object": b'{"message": "unfinished',
    }
    for what, raw in bodies.items():
        for endpoint in (operation("streamChat"), operation("renameSession")):
            exchange = await call_operation(ctx, endpoint, session, content=raw)
            ctx.findings.expect(
                "INPUT-009",
                exchange.status in (400, 422),
                f"{exchange.method} {exchange.url} with {what} as the body: answered "
                f"{exchange.excerpt()}; expected 400 "
                "or 422",
                exchange,
            )


UNKNOWN_MEMBERS = {"unknown_member": 1, "nested_unknown": {"a": [1, 2, {"b": None}]}, "x-vendor": "conformance"}


@check("inputs.unknown_members")
async def unknown_members(ctx: CheckContext) -> None:
    """Every request body of the GNS3 chat API, with unknown members at its top and nested: served as without them
    (INPUT-008), unless its schema refuses them (`additionalProperties: false`), then refused."""
    session = ctx.session_id("unknown")
    # The stream first: its turn makes the session that the other bodies' operations name.
    bodies = sorted(bounds_rules.request_bodies(bounds_rules.chat_api()), key=lambda b: b[0] != "streamChat")
    for operation_id, schema in bodies:
        chosen = operation(operation_id)
        body = valid_body(ctx, chosen, session)
        if body is None:
            raise HarnessError(f"inputs.unknown_members has no valid body for {operation_id}: add one to valid_body")
        body = {**body, **UNKNOWN_MEMBERS}
        ignored = bounds_rules.body_accepts_unknown(schema)
        if operation_id == "streamChat":
            result = await ctx.client.stream(body)
            exchange, ok = result.exchange, served(ctx, result) == ignored
            if not ok and ignored:
                await require_served(
                    ctx,
                    False,
                    result,
                    "INPUT-008",
                    f"a valid stream request with unknown members was not served as a normal turn: {describe(result)} "
                    f"(expected the content {script_text(ctx, 'cs-plain')!r} and no error)",
                )
        else:
            exchange = await call_operation(ctx, chosen, session, json_body=body)
            ok = (exchange.status in bounds_rules.successes(chosen.statuses)) == ignored
        expected = "served as without them" if ignored else "refused (its schema forbids them)"
        ctx.findings.expect(
            "INPUT-008",
            ok,
            f"{chosen.method} {chosen.path} with the unknown members {sorted(UNKNOWN_MEMBERS)}: {answered(exchange)}; "
            f"expected it {expected}",
            exchange,
        )
    await ctx.client.call("DELETE", f"/sessions/{session}", operation="deleteSession")


@check("inputs.temperature_override")
async def temperature_override(ctx: CheckContext) -> None:
    require_capability(ctx, "temperature_override")
    configured = (ctx.target.section("llm", {}).get("config") or {}).get("temperature")
    override = 0.3 if configured is None or not math.isclose(float(configured), 0.3) else 1.3
    session = ctx.session_id()
    runs = (f"{ctx.run}-override", f"{ctx.run}-default")
    first = await ctx.client.stream(
        {"message": ctx.message("cs-plain", run=runs[0]), "session_id": session, "temperature": override}
    )
    await require_served(
        ctx, served(ctx, first), first, "INPUT-005", f"the turn with a temperature failed: {describe(first)}"
    )
    second = await ctx.client.stream({"message": ctx.message("cs-plain", run=runs[1]), "session_id": session})
    await require_served(ctx, served(ctx, second), second, "INPUT-005", f"the next turn failed: {describe(second)}")
    used = []
    for run in runs:
        used.append([r.get("temperature") for r in await ctx.llm.main_requests(run)])
    ctx.findings.require(
        bool(used[0]) and bool(used[1]), "INPUT-005", f"the fake LLM received no main request for a turn: {used}"
    )
    ctx.findings.expect(
        "INPUT-005",
        all(isinstance(t, int | float) and math.isclose(t, override) for t in used[0]),
        f"a turn sent with temperature {override} reached the LLM with temperature(s) {used[0]}",
        first.exchange,
    )
    if configured is not None:
        ok = all(isinstance(t, int | float) and math.isclose(t, float(configured)) for t in used[1])
        expected = f"the configured {configured}"
    else:
        ok = all(t is None or not math.isclose(t, override) for t in used[1])
        expected = "the configuration's value"
    ctx.findings.expect(
        "INPUT-005",
        ok,
        f"the next turn of the session, sent without temperature, reached the LLM with temperature(s) {used[1]}; "
        f"expected {expected}, not the previous turn's {override}",
        second.exchange,
    )
