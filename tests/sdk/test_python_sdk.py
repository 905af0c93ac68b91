"""The Python SDK (sdk/python) against a live reference server, with both chat prefixes: log in, a project, a tool
turn's typed events, the session's life (list, rename, pin, history, delete), the typed 404 and 409, abort, and no
retry of a refused turn; its generated parts are fresh, and its example passes `mypy --strict`."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from gns3_copilot_chat_client import (
    GNS3_CHAT_PREFIX,
    AsyncCopilotClient,
    ChatRequest,
    ConflictError,
    ContentEvent,
    CopilotClient,
    DoneEvent,
    ForbiddenError,
    NotFoundError,
    ProjectCreate,
    RenameSessionRequest,
    ToolCallEvent,
    ToolEndEvent,
    ToolStartEvent,
    UnauthorizedError,
)

import tools.generate_python_sdk as generator
from tests.readme import readme_example
from tests.reference_server.conftest import ServerProcess, start_server_process

pytestmark = pytest.mark.slow  # live servers and mypy: left out of `python3 tasks.py test --quick`

ROOT = Path(__file__).resolve().parents[2]
PREFIXES = ["/v3/projects/{project_id}/chat", GNS3_CHAT_PREFIX]
TOOL_TURN = "Which routers are in the lab? [[fake-llm:tool-round-trip]]"


@pytest.fixture(scope="module", params=PREFIXES, ids=["default-prefix", "gns3-prefix"])
def python_sdk_server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple]:
    data_dir = tmp_path_factory.mktemp("python-sdk") / "data"
    arguments = ("--heartbeat-interval", "0.2", "--chat-prefix", request.param)
    server: ServerProcess = start_server_process(data_dir, *arguments)
    try:
        yield server, request.param
    finally:
        server.stop()


def logged_in(server_and_prefix: tuple, **options) -> CopilotClient:
    server, prefix = server_and_prefix
    client = CopilotClient(server.base_url, chat_prefix=prefix, **options)
    client.login("admin", "admin")
    return client


def test_a_tool_turn_and_the_sessions_life_through_the_sync_client(python_sdk_server):
    with logged_in(python_sdk_server) as client:
        assert client.get_current_user().username == "admin"
        project = client.create_project(ProjectCreate(name=f"sdk-{uuid.uuid4().hex[:8]}"))
        assert project.status == "opened" and project.project_id in {p.project_id for p in client.list_projects()}
        with client.stream_chat(project.project_id, ChatRequest(message=TOOL_TURN)) as stream:
            events = list(stream)
        kinds = [type(event) for event in events]
        assert kinds[0] is ToolCallEvent and kinds[-1] is DoneEvent
        assert ToolStartEvent in kinds and ToolEndEvent in kinds
        assert kinds.index(ToolEndEvent) < kinds.index(ContentEvent)
        text = "".join(event.content for event in events if isinstance(event, ContentEvent))
        assert text == "The topology has two routers."
        session_id = stream.session_id
        assert session_id and all(event.session_id == session_id for event in events)

        [session] = client.list_sessions(project.project_id)
        assert (session.thread_id, session.message_count) == (session_id, 4)
        renamed = client.rename_session(project.project_id, session_id, RenameSessionRequest(title="Routers"))
        assert renamed.title == "Routers"
        assert client.pin_session(project.project_id, session_id).pinned is True
        history = client.get_session_history(project.project_id, session_id, limit=2)
        assert [m.role for m in history.messages] == ["tool", "assistant"] and history.title == "Routers"
        client.delete_session(project.project_id, session_id)
        with pytest.raises(NotFoundError) as unknown:
            client.get_session_history(project.project_id, session_id)
        assert (unknown.value.status, unknown.value.code) == (404, "session_not_found")
        client.delete_project(project.project_id)


def test_the_busy_session_gives_the_typed_409_and_abort_stops_the_turn(python_sdk_server):
    async def scenario() -> None:
        server, prefix = python_sdk_server
        async with AsyncCopilotClient(server.base_url, chat_prefix=prefix) as client:
            await client.login("admin", "admin")
            project = await client.create_project(ProjectCreate(name=f"sdk-busy-{uuid.uuid4().hex[:8]}"))
            session_id = f"sdk-busy-{uuid.uuid4().hex[:8]}"
            slow = ChatRequest(message="Are all links up? [[fake-llm:slow]]", session_id=session_id)
            async with await client.stream_chat(project.project_id, slow) as running:
                first = await anext(aiter(running))  # a heartbeat while the model is silent: the turn runs
                assert first.session_id == session_id
                with pytest.raises(ConflictError) as busy:
                    await client.stream_chat(project.project_id, slow)
                assert (busy.value.status, busy.value.code) == (409, "session_busy")
                assert busy.value.body is not None and busy.value.body.message
                assert (await client.abort_session_turn(project.project_id, session_id)).aborted is True
                rest = [event async for event in running]
            assert isinstance(rest[-1], DoneEvent)
            listed = await client.list_sessions(project.project_id)
            assert [s.thread_id for s in listed] == [session_id]
            await client.delete_project(project.project_id)

    asyncio.run(scenario())


def test_a_refused_turn_is_sent_once_and_raised_typed(python_sdk_server):
    """No retry: a refusal (here a closed project, 403) is one request, raised as its typed error with its body."""
    sent: list[str] = []
    http = httpx.Client(timeout=30, event_hooks={"request": [lambda request: sent.append(request.url.path)]})
    with logged_in(python_sdk_server, http_client=http) as client:
        project = client.create_project(ProjectCreate(name=f"sdk-closed-{uuid.uuid4().hex[:8]}"))
        client.close_project(project.project_id)
        sent.clear()
        with pytest.raises(ForbiddenError) as closed:
            client.stream_chat(project.project_id, ChatRequest(message="Hello? [[fake-llm:plain]]"))
        assert closed.value.code == "project_not_opened" and len(sent) == 1
        client.delete_project(project.project_id)
    server, prefix = python_sdk_server
    with CopilotClient(server.base_url, chat_prefix=prefix, token="not-a-token") as stranger:
        with pytest.raises(UnauthorizedError) as refused:
            stranger.list_projects()
        assert refused.value.code == "unauthorized"


def test_the_generated_parts_are_fresh_and_the_check_sees_a_spec_change(monkeypatch, capsys):
    assert generator.main(["--check"]) == 0
    original = generator.spec.load_openapi

    def changed(prefix=None):
        document = original(prefix)
        document["paths"][generator.spec.default_prefix() + "/sessions"]["get"]["operationId"] = "listAllSessions"
        return document

    monkeypatch.setattr(generator.spec, "load_openapi", changed)
    assert generator.main(["--check"]) == 1
    assert "operations.py" in capsys.readouterr().err


def test_an_operation_with_a_tag_the_sdk_has_not_decided_on_stops_the_generator(monkeypatch):
    original = generator.spec.load_openapi

    def with_new_tag(prefix=None):
        document = original(prefix)
        document["paths"]["/v3/version"]["get"]["tags"] = ["telemetry"]
        return document

    monkeypatch.setattr(generator.spec, "load_openapi", with_new_tag)
    with pytest.raises(SystemExit, match="getVersion has tags \\['telemetry'\\]"):
        generator.operations()


def mypy_strict(*paths: str | Path) -> subprocess.CompletedProcess[str]:
    """mypy --strict with the SDK's own settings (sdk/python/pyproject.toml: the pydantic plugin)."""
    command = [sys.executable, "-m", "mypy", "--strict", *map(str, paths)]
    return subprocess.run(command, cwd=ROOT / "sdk" / "python", capture_output=True, text=True, timeout=300)


def test_the_example_and_the_package_pass_mypy_strict(tmp_path):
    checked = mypy_strict("src/gns3_copilot_chat_client", "examples/quickstart.py")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    # the example's match is exhaustive: without one event class, mypy --strict refuses it
    example = (ROOT / "sdk" / "python" / "examples" / "quickstart.py").read_text()
    incomplete = tmp_path / "incomplete.py"
    incomplete.write_text(example.replace('        case HeartbeatEvent():\n            return "heartbeat"\n', ""))
    refused = mypy_strict(incomplete)
    assert refused.returncode == 1 and 'incompatible type "HeartbeatEvent"' in refused.stdout, refused.stdout


def test_the_readme_example(tmp_path):
    server = start_server_process(tmp_path / "data")  # the README's example: the default prefix
    try:
        script = tmp_path / "readme_python_sdk.py"
        code = readme_example("python sdk")
        script.write_text(code)
        environment = {**os.environ, "COPILOT_BASE_URL": server.base_url}
        ran = subprocess.run([sys.executable, str(script)], env=environment, capture_output=True, text=True, timeout=60)
    finally:
        server.stop()
    assert ran.returncode == 0, ran.stderr[-3000:]
    expected = [line.split("  # ", 1)[1] for line in code.splitlines() if line.lstrip().startswith("print(")]
    assert ran.stdout.splitlines() == expected


def test_closing_a_stream_early_disconnects_and_frees_the_session(python_sdk_server):
    """Leaving a stream early disconnects: the server stops the turn, so the session takes a new one soon after."""
    with logged_in(python_sdk_server) as client:
        project = client.create_project(ProjectCreate(name=f"sdk-cut-{uuid.uuid4().hex[:8]}"))
        with client.stream_chat(project.project_id, ChatRequest(message="Links? [[fake-llm:slow]]")) as stream:
            session_id = next(iter(stream)).session_id
        again = ChatRequest(message="And now? [[fake-llm:plain]]", session_id=session_id)
        for _ in range(50):  # the slow turn alone would hold the session 3 s
            try:
                with client.stream_chat(project.project_id, again) as second:
                    assert isinstance(list(second)[-1], DoneEvent)
                break
            except ConflictError:
                time.sleep(0.05)
        else:
            pytest.fail("the session stayed busy after the client went away")
        client.delete_project(project.project_id)
