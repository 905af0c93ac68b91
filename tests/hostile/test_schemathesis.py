"""Schemathesis against the reference server's chat API and its controller, in-process, at a fixed budget: positive
for every operation of spec/openapi.yaml, then a state machine over real sessions (stream, history, rename, pin,
unpin, abort, delete, list). Every answer goes through Schemathesis's own checks (no 5xx, documented status,
content type, headers and schema; negative data refused, positive data taken); none may fail.

Schemathesis reads spec/openapi.yaml, the OpenAPI 3.2 contract: it validates each SSE frame of a stream against
`itemSchema` (`ChatStreamFrame`, whose `data` is checked as JSON against the event union). The 3.1 copy in generated/
cannot serve it: its `schema` is the event union, which no raw frame matches (tools/derive_openapi31.py).
Derandomized: every run sends the same requests. The contract's links lead from a project or an LLM configuration
made, none to a session (a stream names its session inside the stream): hence the state machine here.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, consumes, invariant, rule, run_state_machine_as_test
from schemathesis import GenerationMode
from schemathesis.python import asgi

import gns3_copilot_spec as spec
from reference_server.app import create_app
from reference_server.settings import Settings

EXAMPLES = 25  # per operation and generation mode
STATEFUL_RUNS, STATEFUL_STEPS = 8, 12
BUDGET = {"database": None, "deadline": None, "derandomize": True, "print_blob": False}
BUDGET |= {"suppress_health_check": list(HealthCheck), "phases": [Phase.explicit, Phase.generate]}  # no shrinking


@dataclass
class Harness:
    schema: Any  # schemathesis' OpenApiSchema, its app the reference server
    client: requests.Session  # Schemathesis's in-process client of the same app
    token: dict[str, str]

    def operation(self, operation_id: str) -> Any:
        return self.schema.find_operation_by_id(operation_id)

    def new_project(self) -> str:
        response = self.client.post("/v3/projects", json={"name": f"st-{uuid.uuid4().hex[:8]}"}, headers=self.token)
        assert response.status_code == 201, response.text
        return response.json()["project_id"]

    def new_session(self, project_id: str) -> str:
        path = spec.default_prefix().format(project_id=project_id) + "/stream"
        response = self.client.post(path, json={"message": "hello"}, headers=self.token)
        assert response.status_code == 200, response.text
        return _events(response.text)[-1]["session_id"]

    def send(self, case: Any, headers: dict[str, str] | None) -> Any:
        """The case, then Schemathesis's checks of its answer (they raise on any failure)."""
        response = case.call(headers=headers)
        case.validate_response(response, headers=headers)
        return response


@pytest.fixture(scope="module")
def harness(tmp_path_factory) -> Iterator[Harness]:
    app = create_app(Settings(data_dir=tmp_path_factory.mktemp("schemathesis") / "data", heartbeat_interval=15.0))
    schema = schemathesis.openapi.from_path(str(spec.OPENAPI_PATH)).exclude(tag=spec.CHANNEL_TAG)
    schema.app = app  # requests go to the app in-process, on Schemathesis's event loop, which runs its lifespan
    try:
        with asgi.get_client(app) as client:
            login = client.post("/v3/access/users/authenticate", json={"username": "admin", "password": "admin"})
            yield Harness(schema, client, {"Authorization": f"Bearer {login.json()['access_token']}"})
    finally:
        asgi.shutdown_lifespans()  # the app's services (and their database threads) stop


def _events(text: str) -> list[dict[str, Any]]:
    return [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: ")]


def _operations() -> list[tuple[str, bool]]:
    """(operationId, whether a negative case exists: something to make invalid, a parameter, a body or a token),
    for the GNS3 chat API and the controller. The channels (spec.CHANNEL_TAG) are left to the stock run, which sends
    them in every phase with the statuses spec/schemathesis.toml allows (test_stock_schemathesis.py): here, in the
    quick subset, their turns took some 20 s beside this module's 30 s, for cases of the same kind."""
    document = spec.load_openapi()
    found = []
    for item in document["paths"].values():
        for op in item.values():
            if isinstance(op, dict) and "operationId" in op and spec.CHANNEL_TAG not in op.get("tags", []):
                secured = op.get("security", document.get("security")) not in (None, [])
                negatable = bool(item.get("parameters") or op.get("parameters") or op.get("requestBody") or secured)
                found.append((op["operationId"], negatable))
    return found


ACE_OPERATIONS = ("createAce", "updateAce")  # valid bodies name a path the controller must know, else 400

CASES = [
    pytest.param(operation_id, mode, id=f"{operation_id}-{mode.value}")
    for operation_id, negatable in _operations()
    for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE)
    if negatable or mode is GenerationMode.POSITIVE
]


@pytest.mark.parametrize(("operation_id", "mode"), CASES)
def test_generated_requests(harness: Harness, operation_id: str, mode: GenerationMode):
    project_id = harness.new_project()
    session_id = harness.new_session(project_id)
    sent = []

    @settings(max_examples=EXAMPLES, **BUDGET)
    @given(harness.operation(operation_id).as_strategy(generation_mode=mode))
    def check(case: Any) -> None:
        # What Schemathesis made invalid stays so (a missing token, a project id that is no UUID); the rest gets the
        # real project, every other case a real session, and the admin's token, so that valid cases reach the work.
        negated = {
            getattr(k, "value", k)
            for k, c in (case.meta.components.items() if case.meta else ())
            if c.mode is GenerationMode.NEGATIVE
        }
        if "path" not in negated:
            case.path_parameters = {**(case.path_parameters or {}), "project_id": project_id}
            if "session_id" in case.path_parameters and len(sent) % 2 == 0:
                case.path_parameters["session_id"] = session_id
        if "body" not in negated and operation_id in ACE_OPERATIONS and isinstance(case.body, dict):
            case.body["path"] = f"/projects/{project_id}"  # a resource's path, which no schema can list (ACCESS-006)
        response = harness.send(case, None if "header" in negated else harness.token)
        sent.append(response.status_code)
        assert response.status_code < 500

    check()
    assert sent


def test_stateful_sessions(harness: Harness):
    """Sessions made by streams, then listed, read, renamed, pinned, unpinned, aborted and deleted in any order; the
    server's answers match a model of them, and a deleted one is gone everywhere (404) until a stream reuses its id."""
    positive = GenerationMode.POSITIVE

    def cases(operation_id: str) -> st.SearchStrategy[Any]:
        return harness.operation(operation_id).as_strategy(generation_mode=positive)

    class ChatSessions(RuleBasedStateMachine):
        sessions = Bundle("sessions")

        def __init__(self) -> None:
            super().__init__()
            self.project_id = harness.new_project()  # each run starts from an empty project
            self.live: dict[str, dict[str, Any]] = {}  # session id -> {"pinned", "title"} as the model has it

        def _send(self, case: Any, session_id: str | None = None) -> Any:
            case.path_parameters = {**(case.path_parameters or {}), "project_id": self.project_id}
            if session_id is not None:
                case.path_parameters["session_id"] = session_id
            return harness.send(case, harness.token)

        @rule(target=sessions, case=cases("streamChat"))
        def stream(self, case: Any) -> str:
            response = self._send(case)
            assert response.status_code == 200, response.text
            session_id = _events(response.text)[-1]["session_id"]
            self.live.setdefault(session_id, {"pinned": False, "title": None})  # new, or continued (SESSION-005, -007)
            return session_id

        @rule(target=sessions, session_id=sessions, case=cases("streamChat"))
        def continue_session(self, session_id: str, case: Any) -> str:
            case.body = {**case.body, "session_id": session_id}
            return self.stream(case)

        def _existing(self, response: Any, session_id: str, ok: int = 200) -> bool:
            expected = ok if session_id in self.live else 404
            assert response.status_code == expected, (session_id, response.status_code, response.text)
            return expected == ok

        @rule(session_id=sessions, case=cases("getSessionHistory"))
        def history(self, session_id: str, case: Any) -> None:
            response = self._send(case, session_id)
            if self._existing(response, session_id):
                assert len(response.json()["messages"]) <= (case.query or {}).get("limit", 100)

        @rule(session_id=sessions, case=cases("renameSession"))
        def rename(self, session_id: str, case: Any) -> None:
            response = self._send(case, session_id)
            if self._existing(response, session_id):
                assert response.json()["title"] == case.body["title"]
                self.live[session_id]["title"] = case.body["title"]

        @rule(session_id=sessions, pinned=st.booleans(), data=st.data())
        def pin(self, session_id: str, pinned: bool, data: st.DataObject) -> None:
            case = data.draw(cases("pinSession" if pinned else "unpinSession"))
            response = self._send(case, session_id)
            if self._existing(response, session_id):
                assert response.json()["pinned"] is pinned
                self.live[session_id]["pinned"] = pinned

        @rule(session_id=sessions, case=cases("abortSessionTurn"))
        def abort(self, session_id: str, case: Any) -> None:
            response = self._send(case, session_id)
            if self._existing(response, session_id):
                assert response.json() == {"session_id": session_id, "aborted": False}  # no turn is running

        @rule(session_id=consumes(sessions), case=cases("deleteSession"))
        def delete(self, session_id: str, case: Any) -> None:
            response = self._send(case, session_id)
            if self._existing(response, session_id, ok=204):
                del self.live[session_id]

        @invariant()
        def listed_as_modelled(self) -> None:
            path = spec.default_prefix().format(project_id=self.project_id) + "/sessions"
            listed = harness.client.get(path, headers=harness.token).json()
            assert {s["thread_id"]: s["pinned"] for s in listed} == {k: v["pinned"] for k, v in self.live.items()}
            for session in listed:
                renamed = self.live[session["thread_id"]]["title"]
                assert renamed is None or session["title"] == renamed  # a title set by hand stays (TITLE-003)
            assert [s["pinned"] for s in listed] == sorted((s["pinned"] for s in listed), reverse=True)  # LIST-001

    run_state_machine_as_test(
        ChatSessions, settings=settings(max_examples=STATEFUL_RUNS, stateful_step_count=STATEFUL_STEPS, **BUDGET)
    )
