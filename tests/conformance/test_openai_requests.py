"""What channel_openai.requests and .responses send (conformance/rules/openai_requests.py), held to OpenAI's own
request schemas (spec/channels/official/): a server is never judged on a body the API itself refuses, save the one
off-schema body OPENAI-001 sends on purpose; and the protocol's voice sends no member OpenAI's API serves on some
models only, or refuses without tools."""

from __future__ import annotations

from typing import Any

import pytest

from conformance.rules import official
from conformance.rules.openai_requests import (
    WEB_SEARCH,
    chat_contract_accepted,
    chat_refused,
    chat_standard,
    responses_contract_accepted,
    responses_refused,
    responses_standard,
)

CHAT_PARAMS = "openai_chat_completion_create_params_streaming"
RESPONSE_PARAMS = "openai_response_create_params_non_streaming"
# Members OpenAI serves on some model families only, or (`parallel_tool_calls`) refuses 400 without `tools`.
NOT_THE_PROTOCOL_S = {"parallel_tool_calls", "reasoning_effort", "verbosity", "prediction", "reasoning", "text"}


def chat_body(label: str, **members: Any) -> dict[str, Any]:
    made = {"model": "gns3-copilot", "messages": [{"role": "user", "content": label}], "stream": True}
    return {**made, "stream_options": {"include_usage": True}, **members}


def response_body(label: str, **members: Any) -> dict[str, Any]:
    return {"model": "gns3-copilot", "input": label, "stream": False, **members}


def test_every_chat_body_fits_the_api_s_schema_but_the_off_schema_one():
    sent = [*chat_standard(chat_body).values(), *chat_contract_accepted(chat_body).values()]
    sent += [made for _what, made, _status, code, _member in chat_refused(chat_body) if code != "validation_error"]
    for made in sent:
        assert official.errors(CHAT_PARAMS, made) == [], made
    (off_schema,) = [made for _what, made, _status, code, _m in chat_refused(chat_body) if code == "validation_error"]
    assert official.errors(CHAT_PARAMS, off_schema) and off_schema[WEB_SEARCH] is None


def test_every_response_body_fits_the_api_s_schema():
    sent = [responses_standard(response_body("standard"), "Be brief."), responses_contract_accepted(response_body)]
    sent += [made for _what, made, *_ in responses_refused(response_body)]
    for made in sent:
        assert official.errors(RESPONSE_PARAMS, made) == [], made


@pytest.mark.parametrize(
    "sent",
    [
        lambda: chat_standard(chat_body).values(),
        lambda: [responses_standard(response_body("standard"), "Be brief.")],
    ],
    ids=["chat", "responses"],
)
def test_the_protocol_s_voice_sends_no_member_of_some_models_only(sent):
    for made in sent():
        assert set(made) & NOT_THE_PROTOCOL_S == set(), made


def test_each_refusal_names_a_member_its_body_carries():
    for rows, body in ((chat_refused(chat_body), chat_body), (responses_refused(response_body), response_body)):
        plain = set(body("x"))
        for what, made, _status, _code, member in rows:
            assert member.split(".")[0] in set(made) - plain or member == "model", what
