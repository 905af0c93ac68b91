"""CONTRACT-001 by generated requests: Schemathesis draws valid (positive) and invalid (negative) requests for
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
from collections import Counter
from functools import cache
from typing import Any

import spec

from ..context import CheckContext
from ..exchanges import Exchange
from ..findings import PASSED, Finding
from ..responses import response_violations
from . import check

SEED = 20261202
EXAMPLES = 6  # per operation and generation mode
SHOWN = 5  # failing cases described per operation and requirement


@cache
def _schema():
    import schemathesis

    # from_path, not from_dict: the document's $refs are file paths relative to spec/openapi.yaml.
    return schemathesis.openapi.from_path(str(spec.OPENAPI_PATH))


_GENERATION_LOCK = threading.Lock()


@cache
def _generate() -> list[tuple[str, Any]]:
    """(mode, case) for every operation, positive then negative, in document order.

    The cases depend only on the contract and the seed, so they are drawn once per process; the lock keeps two
    runs in one process (the mutant tests run several) from driving Hypothesis from two threads at once, which
    it does not support (it reports the interleaving as a FlakyFailure)."""
    with _GENERATION_LOCK:
        return _draw()


def _draw() -> list[tuple[str, Any]]:
    from hypothesis import HealthCheck, Phase, given, seed, settings
    from schemathesis import GenerationMode

    cases: list[tuple[str, Any]] = []
    for result in _schema().get_all_operations():
        operation = result.ok()  # raises if the document has an operation Schemathesis cannot load
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            drawn: list[Any] = []

            @seed(SEED)
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
    return isinstance(message, str) and 1 <= len(message) <= 100_000


@check("contract.operations")
async def operations(ctx: CheckContext) -> None:
    cases = await asyncio.to_thread(_generate)
    # Real sessions, so that valid cases also get 200 answers: one for most operations, one to delete.
    real, doomed = ctx.session_id("real"), ctx.session_id("doomed")
    for session in (real, doomed):
        result = await ctx.stream({"message": ctx.message("cs-plain"), "session_id": session})
        ctx.require_stream(result, "CONTRACT-001")

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
        exchange = await ctx.call(
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

    summary = f"{len(cases)} generated cases ({EXAMPLES} per operation and mode, seed {SEED}); statuses " + ", ".join(
        f"{s}: {n}" for s, n in sorted(statuses.items(), key=lambda item: str(item[0]))
    )
    for (operation_id, requirement), found in sorted(problems.items()):
        shown = "; ".join(message for message, _ in found[:SHOWN])
        more = f" (and {len(found) - SHOWN} more)" if len(found) > SHOWN else ""
        ctx.expect(
            requirement,
            False,
            f"{operation_id}: {len(found)} answer(s) break the contract: {shown}{more}. {summary}",
            *[exchange for _, exchange in found[:2]],
        )
    if not any(requirement == "CONTRACT-001" for _, requirement in problems):
        # A passing finding that also tells how much was tried (ctx.passed would only say "ok").
        ctx.findings.append(Finding("CONTRACT-001", PASSED, summary, ctx.check_id))
