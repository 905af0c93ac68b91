"""Everything refused before a stream begins: auth, project state, LLM configuration, validation, busy."""

from __future__ import annotations

import asyncio
import json

import pytest

from conformance.rules.responses import response_violations
from gns3_copilot_generated.constants import MESSAGE_MAX_LENGTH

pytestmark = pytest.mark.anyio

ENDPOINTS = [  # (operationId, method, path under the prefix, body)
    ("streamChat", "POST", "/stream", {"message": "hi [[fake-llm:plain]]"}),
    ("listSessions", "GET", "/sessions", None),
    ("getSessionHistory", "GET", "/sessions/s-1/history", None),
    ("renameSession", "PATCH", "/sessions/s-1", {"title": "t"}),
    ("deleteSession", "DELETE", "/sessions/s-1", None),
    ("pinSession", "PUT", "/sessions/s-1/pin", None),
    ("unpinSession", "DELETE", "/sessions/s-1/pin", None),
    ("abortSessionTurn", "POST", "/sessions/s-1/abort", None),
]


async def call(lab, endpoint, *, headers=None, project_id=None, body=None, raw=None):
    operation, method, path, default_body = endpoint
    kwargs = {"content": raw} if raw is not None else {"json": body if body is not None else default_body}
    response = await lab.client.request(method, lab.prefix(project_id) + path, headers=headers, **kwargs)
    violations = response_violations(
        operation, response.status_code, response.headers.get("content-type"), response.content
    )
    assert violations == [], violations
    return response


@pytest.mark.covers("AUTH-001", "AUTH-002", "ERROR-001", "ERROR-002", "CONTRACT-001")
@pytest.mark.parametrize("endpoint", ENDPOINTS, ids=[e[0] for e in ENDPOINTS])
@pytest.mark.parametrize(
    "authorization",
    [
        None,
        "Bearer",
        "Bearer not-a-jwt",
        "Basic YWRtaW46YWRtaW4=",
        "Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl",
    ],
)
async def test_unauthenticated_requests_get_401_before_anything_else(lab, endpoint, authorization):
    headers = {"Authorization": authorization} if authorization else {}
    # an unknown project and an invalid body: 401 must still come first
    response = await call(
        lab, endpoint, headers=headers, project_id="00000000-0000-0000-0000-000000000000", raw=b"{not json"
    )
    assert response.status_code == 401
    assert response.headers["www-authenticate"].startswith("Bearer")
    assert response.json()["code"] == "unauthorized"


@pytest.mark.covers("PROJECT-001", "PROJECT-002", "ERROR-002", "PRECHECK-001", "CONTRACT-001")
@pytest.mark.parametrize("endpoint", ENDPOINTS, ids=[e[0] for e in ENDPOINTS])
async def test_unknown_and_closed_projects(lab, endpoint):
    unknown = await call(lab, endpoint, headers=lab.headers, project_id="00000000-0000-0000-0000-000000000000")
    assert unknown.status_code == 404 and unknown.json()["code"] == "project_not_found"
    closed_project = await lab.new_project()
    assert (await lab.client.post(f"/v3/projects/{closed_project}/close", headers=lab.headers)).status_code == 204
    closed = await call(lab, endpoint, headers=lab.headers, project_id=closed_project)
    assert closed.status_code == 403 and closed.json()["code"] == "project_not_opened"


@pytest.mark.covers("LLM-001", "PRECHECK-001", "CONTRACT-001")
async def test_a_user_without_llm_configuration_gets_400(lab):
    _, carol = await lab.add_user("carol", llm=False)
    response = await call(lab, ENDPOINTS[0], headers=carol)
    assert response.status_code == 400 and response.json()["code"] == "llm_not_configured"


@pytest.mark.covers(
    "INPUT-001", "INPUT-002", "INPUT-003", "INPUT-004", "INPUT-006", "INPUT-007", "ERROR-002", "CONTRACT-001"
)
@pytest.mark.parametrize(
    "body, field",
    [
        ({}, "message"),
        ({"message": ""}, "message"),
        ({"message": "x" * (MESSAGE_MAX_LENGTH + 1)}, "message"),
        ({"message": 42}, "message"),
        ({"message": "x", "mode": "voice"}, "mode"),
        ({"message": "x", "temperature": 2.5}, "temperature"),
        ({"message": "x", "temperature": -0.1}, "temperature"),
        ({"message": "x", "temperature": "hot"}, "temperature"),
        ({"message": "x", "stream": False}, "stream"),
        ({"message": "x", "session_id": 7}, "session_id"),
    ],
)
async def test_invalid_stream_bodies_get_422_with_one_entry_per_field(lab, body, field):
    response = await call(lab, ENDPOINTS[0], headers=lab.headers, body=body)
    assert response.status_code == 422
    detail = response.json()
    assert detail["code"] == "validation_error"
    assert [e["loc"] for e in detail["details"]["errors"]] == [["body", field]]
    assert all(e["msg"] for e in detail["details"]["errors"])


@pytest.mark.covers("INPUT-006", "INPUT-009", "CONTRACT-001")
@pytest.mark.parametrize(
    "raw, status", [(b"{not json", 400), (b"", 400), (b"[1, 2]", 422), (b'"text"', 422), (b"\xff\xfe", 400)]
)
async def test_bodies_that_are_not_json_objects(lab, raw, status):
    response = await call(lab, ENDPOINTS[0], headers={**lab.headers, "Content-Type": "application/json"}, raw=raw)
    assert response.status_code == status
    assert response.json()["code"] == ("invalid_json" if status == 400 else "validation_error")


@pytest.mark.covers("INPUT-008")
async def test_unknown_members_are_ignored(lab):
    stream = await lab.stream("[[fake-llm:plain]]", "extra-members", unknown={"nested": True}, mode="text", stream=True)
    assert stream.status == 200 and stream.types[-1] == "done"


@pytest.mark.covers("INPUT-003", "INPUT-005", "TESTABILITY-002", "TESTABILITY-003")
async def test_what_the_llm_receives(lab):
    log = lab.app.state.services.fake_llm_log
    await lab.stream("Tell me about R1 \u00e9 [[fake-llm:tool-round-trip:what-llm-gets]]", "llm-gets", temperature=0.2)
    records = log.records(run="what-llm-gets")
    main, title = [r for r in records if r.step is not None], [r for r in records if r.step is None]
    assert [r.step for r in main] == [0, 1] and len(title) == 1
    for record in main:
        tools = ["failing_tool", "get_topology", "raising_tool", "run_show_command", "wait_seconds"]
        assert sorted(record.tools) == tools
        users = [m for m in record.messages if m["role"] == "user"]
        assert users[-1]["content"] == "Tell me about R1 \u00e9 [[fake-llm:tool-round-trip:what-llm-gets]]"
        assert record.temperature == 0.2  # the request's temperature, for this turn only
    assert title[0].tools == []
    await lab.stream("[[fake-llm:plain:what-llm-gets-2]]", "llm-gets")
    assert all(r.temperature == 0.7 for r in log.records(run="what-llm-gets-2") if r.step is not None)


@pytest.mark.covers("CONCURRENCY-001", "PRECHECK-001", "CONTRACT-001")
async def test_a_busy_session_gets_409_before_any_stream(lab):
    task = asyncio.create_task(lab.stream("[[fake-llm:slow]]", "busy-1"))
    await lab.until_listed("busy-1")
    response = await call(
        lab, ENDPOINTS[0], headers=lab.headers, body={"message": "[[fake-llm:plain]]", "session_id": "busy-1"}
    )
    assert response.status_code == 409 and response.json()["code"] == "session_busy"
    assert (await task).types[-1] == "done"
    again = await lab.stream("[[fake-llm:plain]]", "busy-1")
    assert again.types[-1] == "done"


@pytest.mark.covers("ERROR-001", "CONTRACT-001")
async def test_path_session_ids_are_validated(lab):
    for endpoint in ENDPOINTS[2:]:
        operation, method, path, body = endpoint
        response = await lab.client.request(
            method, lab.prefix() + path.replace("s-1", "bad id!"), headers=lab.headers, json=body
        )
        assert response.status_code == 422, operation
        assert response_violations(operation, 422, response.headers["content-type"], response.content) == []
        assert json.loads(response.content)["details"]["errors"][0]["loc"] == ["path", "session_id"]
