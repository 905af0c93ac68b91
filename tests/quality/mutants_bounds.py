"""Mutants of the values at their bounds, and of unknown members beyond the stream: each breaks one case that
conformance/rules/boundaries.py derives from openapi.yaml (judged by inputs.boundaries) or one body of
inputs.unknown_members. Where a hand-written check judges the same state too (sessions.rename's 256 characters,
history.limit's 1001), the mutant's target is the rule both judge. Registered in MUTANTS by tests/quality/mutants.py.
"""

from __future__ import annotations

import json

from gns3_copilot_generated.constants import HISTORY_LIMIT_MAX, MESSAGE_MAX_LENGTH

from .asgi_rewrite import edit_request_body
from .mutant_kit import mutant

STREAM = r"/chat/stream$"


async def _rename_data(request):
    """The rename body as JSON, or None (the server's own reading then refuses it as it does)."""
    try:
        return json.loads(await request.body())
    except ValueError:
        return None


@mutant(
    "temperature-zero-unset",
    "a request's temperature 0 is taken as no temperature: the turn runs at the configured one",
    {"INPUT-005"},
)
def _temperature_zero_unset() -> None:
    import reference_server.turns.core as core  # where every turn reads its LLM settings

    original = core.llm_settings

    async def llm_settings(request, caller, temperature):
        return await original(request, caller, temperature or None)  # the classic falsy test

    core.llm_settings = llm_settings


@mutant(
    "message-max-off-by-one",
    "a message of exactly 100000 characters (the maximum) is refused 422, as if the bound were exclusive",
    {"INPUT-001"},
)
def _message_max_off_by_one() -> None:
    def change(body):
        message = body.get("message")
        if isinstance(message, str) and len(message) == MESSAGE_MAX_LENGTH:
            return {**body, "message": message + "x"}  # over the bound, refused by the server's own model
        return None

    edit_request_body(STREAM, change)


@mutant(
    "temperature-rounded-before-check",
    "the temperature is rounded to one decimal before its range is checked: -0.01 and 2.01 are served",
    {"INPUT-003"},
    {"INPUT-005"},  # 0.01 and 1.99 reach the model as 0.0 and 2.0: not the turn's temperature
)
def _temperature_rounded() -> None:
    def change(body):
        value = body.get("temperature")
        if isinstance(value, float) and value != round(value, 1):
            return {**body, "temperature": round(value, 1) + 0.0}  # -0.01 -> -0.0, within 0..2
        return None

    edit_request_body(STREAM, change)


@mutant(
    "title-max-plus-one-accepted",
    "a title of 256 characters (one over the maximum) is accepted, cut to 255",
    {"SESSION-004"},
)
def _title_max_plus_one() -> None:
    import reference_server.chat.routes as routes

    original = routes.json_body

    async def json_body(request, model):
        if model is routes.RenameSessionRequest:
            data = await _rename_data(request)
            if isinstance(data, dict) and isinstance(data.get("title"), str) and len(data["title"]) == 256:
                return model(title=data["title"][:255])
        return await original(request, model)

    routes.json_body = json_body


@mutant(
    "rename-unknown-members-refused",
    "a rename body with a member other than `title` is refused 422 (the model forbids extra members)",
    {"INPUT-008"},
)
def _rename_unknown_members_refused() -> None:
    import reference_server.chat.routes as routes
    from reference_server.errors import validation_failed

    original = routes.json_body

    async def json_body(request, model):
        if model is routes.RenameSessionRequest:
            data = await _rename_data(request)
            extra = sorted(set(data) - {"title"}) if isinstance(data, dict) else []
            if extra:
                errors = [{"loc": ["body", k], "msg": "not permitted", "type": "extra"} for k in extra]
                raise validation_failed(errors)
        return await original(request, model)

    routes.json_body = json_body


@mutant(
    "history-limit-max-off-by-one",
    "the history takes `limit` up to 1001 (one over the maximum), answering 1001 as 1000",
    {"HISTORY-007"},
)
def _history_limit_max_off_by_one() -> None:
    import reference_server.prelude as prelude

    original = prelude.history_limit

    def history_limit(request):
        if request.query_params.get("limit") == str(HISTORY_LIMIT_MAX + 1):
            return HISTORY_LIMIT_MAX
        return original(request)

    prelude.history_limit = history_limit
