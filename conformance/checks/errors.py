"""Errors (ERROR-*, CONTRACT-001): 4xx bodies `{message, code, details?}` with the contract's codes, and every
operation's answers, to generated valid and invalid requests, documented in openapi.yaml.

CONTRACT-001 by generated requests: Schemathesis draws valid (positive) and invalid (negative) requests for
every operation of spec/openapi.yaml; each is sent over HTTP as the main user, in the opened project, and its
answer must have a status documented for the operation and a body that validates against the documented schema.
Generation is deterministic (a fixed Hypothesis seed) and small (a few examples per operation and mode), and
runs in a worker thread. The suite rewrites a few parts of each case so that it reaches the implementation:
the bearer token is the main user's, the project is the run's opened project, about half of the valid cases
name a real session (so that 200 answers are validated too), and a stream request that would run a turn
carries a fake-LLM tag of the quick `cs-plain` scenario."""

from __future__ import annotations

import asyncio
import json
import threading
import uuid
from collections import Counter
from functools import cache
from typing import Any

import gns3_copilot_spec as spec
from conformance.checks import check
from conformance.checks.context import CheckContext
from conformance.checks.support import call_operation, error_code, setup_turn
from conformance.rules.operations import chat_endpoints, operation
from conformance.rules.responses import response_violations
from conformance.transport.exchanges import Exchange, json_or_none
from gns3_copilot_generated.constants import MESSAGE_MAX_LENGTH, MESSAGE_MIN_LENGTH, SESSION_ID_MAX_LENGTH


def _error_body_problems(exchange: Exchange) -> list[str]:
    if not (exchange.content_type or "").startswith("application/json"):
        return [f"content type {exchange.content_type!r}, not application/json"]
    payload = json_or_none(exchange.body)
    if payload is None and exchange.body.strip() != "null":
        return [f"the body is not JSON: {exchange.body[:200]!r}"]
    validator = spec.schema_validator(spec.SCHEMAS_DIR / "error-body.json")
    return [
        f"{error.message} at /{'/'.join(map(str, error.absolute_path))}" for error in validator.iter_errors(payload)
    ]


@check("errors.codes")
async def codes(ctx: CheckContext) -> None:
    missing = ctx.session_id("missing")
    history = f"/sessions/{missing}/history"
    cases = [
        (
            "a request without a bearer token",
            await ctx.client.call("GET", "/sessions", operation="listSessions", user=None),
            {401: "unauthorized"},
        ),
        (
            "a request for an unknown project",
            await ctx.client.call("GET", "/sessions", operation="listSessions", project_id=str(uuid.uuid4())),
            {404: "project_not_found"},
        ),
        (
            "a request for a closed project",
            await ctx.client.call("GET", "/sessions", operation="listSessions", project_id=ctx.env.closed_project_id),
            {403: "project_not_opened"},
        ),
        (
            "the history of an unknown session",
            await ctx.client.call("GET", history, operation="getSessionHistory"),
            {404: "session_not_found"},
        ),
        (
            "a stream request without `message`",
            await ctx.client.call("POST", "/stream", operation="streamChat", json_body={}),
            {422: "validation_error"},
        ),
        (
            "a stream request whose body is not JSON",
            await ctx.client.call("POST", "/stream", operation="streamChat", content=b"{not json"),
            {400: "invalid_json", 422: "validation_error"},  # INPUT-009 allows either
        ),
    ]
    skipped = []
    for what, exchange, expected in cases:
        if exchange.status not in expected:  # the status itself is other checks' business (AUTH-001, ...)
            skipped.append(f"{what}: {exchange.excerpt()}")
            continue
        ctx.findings.expect(
            "ERROR-002",
            error_code(exchange) == expected[exchange.status],
            f"{what} ({exchange.method} {exchange.url}): answered {exchange.status} with code "
            f"{error_code(exchange)!r}; expected {expected[exchange.status]!r}",
            exchange,
        )
    if len(skipped) == len(cases):
        ctx.findings.not_testable(
            "ERROR-002", "no request was answered with the status whose code is checked: " + "; ".join(skipped)
        )


@check("errors.body")
async def body(ctx: CheckContext) -> None:
    session = ctx.session_id()
    missing = ctx.session_id("missing")
    unknown_project = str(uuid.uuid4())
    await setup_turn(ctx, session)  # an existing session: only the provoked problem is wrong
    exchanges: list[tuple[str, Exchange]] = []
    for endpoint in chat_endpoints(ctx.target.capabilities):
        exchanges.append(("no bearer token", await call_operation(ctx, endpoint, session, user=None)))
        exchanges.append(
            ("an unknown project", await call_operation(ctx, endpoint, session, project_id=unknown_project))
        )
        exchanges.append(
            ("a closed project", await call_operation(ctx, endpoint, session, project_id=ctx.env.closed_project_id))
        )
        if endpoint.names_session:
            exchanges.append(("an unknown session", await call_operation(ctx, endpoint, missing)))
            too_long = "s" * (SESSION_ID_MAX_LENGTH + 1)
            exchanges.append(
                (f"a session id of {len(too_long)} characters", await call_operation(ctx, endpoint, too_long))
            )
    stream, rename = operation("streamChat"), operation("renameSession")
    exchanges += [
        ("an empty object as the body", await call_operation(ctx, stream, session, json_body={})),
        ("`{not json` as the body", await call_operation(ctx, stream, session, content=b"{not json")),
        ("an empty title", await call_operation(ctx, rename, session, json_body={"title": ""})),
        ("`{not json` as the body", await call_operation(ctx, rename, session, content=b"{not json")),
        (
            "limit=0",
            await ctx.client.call(
                "GET", f"/sessions/{session}/history", operation="getSessionHistory", params={"limit": 0}
            ),
        ),
    ]
    if "no_llm" in ctx.env.users:
        exchanges.append(
            ("a user with no LLM configuration", await call_operation(ctx, stream, session, user="no_llm"))
        )
    judged = 0
    for what, exchange in exchanges:
        if exchange.status is None or not 400 <= exchange.status < 500:
            continue  # other checks judge the status; this one judges 4xx bodies
        judged += 1
        problems = _error_body_problems(exchange)
        ctx.findings.expect(
            "ERROR-001",
            not problems,
            f"{exchange.method} {exchange.url} with {what} answered {exchange.status} with a body that is not "
            f"{{message, code, details?}}: {'; '.join(problems)}",
            exchange,
        )
    ctx.findings.require(
        judged > 0, "ERROR-001", f"none of the {len(exchanges)} requests meant to be refused was answered 4xx"
    )


# --- CONTRACT-001 by generated requests ------------------------------------------------------------------

EXAMPLES = 6  # per operation and generation mode


@cache
def _schema():
    import schemathesis

    # from_path, not from_dict: the document's $refs are file paths relative to spec/openapi.yaml. The channels'
    # operations answer in their protocols' shapes, and the controller's are the `controller` area's: not this
    # check's business.
    return (
        schemathesis.openapi.from_path(str(spec.OPENAPI_PATH))
        .exclude(tag=spec.CHANNEL_TAG)
        .exclude(tag=spec.CONTROLLER_TAG)
    )


_GENERATION_LOCK = threading.Lock()


@cache
def _generate(seed_value: int) -> list[tuple[str, Any]]:
    """(mode, case) for every operation, positive then negative, in document order.

    The cases depend only on the contract and the seed (the run's --seed), so they are drawn once per process and
    seed, and a rerun with the same seed sends the same requests; the lock keeps two
    runs in one process (the mutant tests run several) from driving Hypothesis from two threads at once, which
    it does not support (it reports the interleaving as a FlakyFailure)."""
    with _GENERATION_LOCK:
        return _draw(seed_value)


def _draw(seed_value: int) -> list[tuple[str, Any]]:
    from hypothesis import HealthCheck, Phase, given, seed, settings
    from schemathesis import GenerationMode

    cases: list[tuple[str, Any]] = []
    for result in _schema().get_all_operations():
        operation = result.ok()  # raises if the document has an operation Schemathesis cannot load
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            drawn: list[Any] = []

            @seed(seed_value)
            @settings(
                max_examples=EXAMPLES,
                database=None,
                deadline=None,
                phases=[Phase.explicit, Phase.generate],
                suppress_health_check=list(HealthCheck),
                print_blob=False,
            )
            @given(operation.as_strategy(generation_mode=mode))
            def collect(case: Any) -> None:
                drawn.append(case)  # noqa: B023 (called right below, within this iteration)

            collect()
            cases += [(mode.value, case) for case in drawn]
    return cases


def _query(query: dict[str, Any] | None) -> dict[str, Any] | None:
    """Query values as httpx sends them: scalars and lists of scalars; objects as JSON text."""
    if not query:
        return None

    def scalar(value: Any) -> Any:
        return json.dumps(value) if isinstance(value, dict | list) else value

    return {
        key: [scalar(v) for v in value] if isinstance(value, list) else scalar(value) for key, value in query.items()
    }


def _encode(body: Any) -> bytes | None:
    from schemathesis.core import NotSet

    if isinstance(body, NotSet):
        return None
    if isinstance(body, bytes):
        return body  # a negative case: not JSON at all
    return json.dumps(body).encode()


def _negated_authorization(case: Any) -> dict[str, str] | None:
    """The headers to send when the case negates only the Authorization header ({} when it removed it), else
    None (then the main user's token is sent)."""
    data = getattr(getattr(case.meta, "phase", None), "data", None)
    mutations = getattr(data, "mutations", None) or ()
    if not mutations or any(getattr(m, "parameter", None) != "Authorization" for m in mutations):
        return None  # other parts are negated too: send the real token so that those reach validation
    value = (case.headers or {}).get("Authorization")
    if value is None or not all(" " <= c <= "~" for c in value):
        return {}  # missing, or not sendable in an HTTP header: sent without one
    return {"Authorization": value}


def _valid_message(body: Any) -> bool:
    message = body.get("message") if isinstance(body, dict) else None
    return isinstance(message, str) and MESSAGE_MIN_LENGTH <= len(message) <= MESSAGE_MAX_LENGTH


@check("errors.contract_operations")
async def operations(ctx: CheckContext) -> None:
    cases = await asyncio.to_thread(_generate, ctx.env.seed)
    # Real sessions, so that valid cases also get 200 answers: one for most operations, one to delete.
    real, doomed = ctx.session_id("real"), ctx.session_id("doomed")
    for session in (real, doomed):
        await setup_turn(ctx, session)

    default_prefix = spec.default_prefix()
    uses: Counter[str] = Counter()
    problems: dict[tuple[str, str], list[tuple[str, Exchange]]] = {}
    statuses: Counter[int | None] = Counter()
    for index, (mode, case) in enumerate(cases):
        operation_id = case.operation.definition.raw["operationId"]
        parameters = dict(case.path_parameters or {})
        parameters["project_id"] = ctx.env.project_id
        if mode == "positive" and "session_id" in parameters:
            uses[operation_id] += 1
            if operation_id == "deleteSession":
                if uses[operation_id] == 1:
                    parameters["session_id"] = doomed
            elif uses[operation_id] % 2 == 1:
                parameters["session_id"] = real
        body = case.body
        if operation_id == "streamChat" and _valid_message(body):
            body = {**body, "message": ctx.message("cs-plain", f"Contract case {index}")}
        suffix = case.path.removeprefix(default_prefix)
        for name, value in parameters.items():
            suffix = suffix.replace("{" + name + "}", str(value))
        # The main user's token, unless Schemathesis negated the Authorization header itself (missing or
        # malformed: a 401 case). Other generated headers are not part of the contract and are not sent.
        auth = _negated_authorization(case) if mode == "negative" else None
        exchange = await ctx.client.call(
            case.method.upper(),
            suffix,
            user="main" if auth is None else None,
            headers=None if auth is None else auth,
            content=_encode(body),
            params=_query(case.query),
        )
        statuses[exchange.status] += 1
        what = f"{mode} case {index}: {exchange.method} {exchange.url}" + (
            f" with body {exchange.request_body[:200]!r}" if exchange.request_body is not None else ""
        )
        found: list[tuple[str, str]] = []
        if exchange.status is None:
            found.append(("CONTRACT-001", f"{what}: no answer ({exchange.error})"))
        else:
            # A 5xx is a failure, except the 501 that the contract allows for abort when it is not declared.
            optional_501 = operation_id == "abortSessionTurn" and "abort" not in ctx.target.capabilities
            if exchange.status >= 500 and not (exchange.status == 501 and optional_501):
                found.append(("CONTRACT-001", f"{what}: answered {exchange.status} (a server error)"))
            elif not (operation_id == "streamChat" and exchange.status == 200):  # streams: the stream checks
                found += [
                    (v.requirement, f"{what}: {v.message}")
                    for v in response_violations(operation_id, exchange.status, exchange.content_type, exchange.body)
                ]
        for requirement, message in found:
            problems.setdefault((operation_id, requirement), []).append((message, exchange))

    summary = (
        f"{len(cases)} generated cases ({EXAMPLES} per operation and mode, seed {ctx.env.seed}); statuses "
        + ", ".join(f"{s}: {n}" for s, n in sorted(statuses.items(), key=lambda item: str(item[0])))
    )
    for (operation_id, requirement), found in sorted(problems.items()):
        shown = "; ".join(message for message, _ in found)  # every answer: no report cuts evidence
        ctx.findings.expect(
            requirement,
            False,
            f"{operation_id}: {len(found)} answer(s) break the contract: {shown}. {summary}",
            *[exchange for _, exchange in found],
        )
    if not any(requirement == "CONTRACT-001" for _, requirement in problems):
        ctx.findings.passed("CONTRACT-001", message=summary)  # says how much was tried, not only "ok"
