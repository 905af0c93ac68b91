"""The TypeScript SDK (sdk/typescript/): generated from the contract and not stale, strictly typed, and proven end to
end against a live reference server under both chat prefixes by a TypeScript driver (tests/sdk/ts/), run with tsx
from inside the repository so that node_modules/ resolves. The README's TypeScript example runs too."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from unittest.mock import ANY

import pytest
import yaml

from tests.readme import readme_example
from tests.reference_server.conftest import ServerProcess, start_server_process
from tools import derive_openapi31

pytestmark = pytest.mark.slow  # a live server and the TypeScript compiler: left out of `python3 tasks.py test --quick`

ROOT = Path(__file__).resolve().parents[2]
SDK = ROOT / "sdk" / "typescript"
GENERATOR = ROOT / "tools" / "generate_typescript_sdk.py"
TSC = ROOT / "node_modules" / ".bin" / "tsc"
TSX = ROOT / "node_modules" / ".bin" / "tsx"
DRIVER = ROOT / "tests" / "sdk" / "ts" / "typescript_driver.ts"

# chat prefix -> the SDK's chatRoot for it (the `chat_root` server variable of the 3.1 copy)
PREFIXES = {
    "/v3/projects/{project_id}/chat": "/v3",
    "/v3/copilot/projects/{project_id}/chat": "/v3/copilot",
}


def run(command: list[str], env: dict[str, str] | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(
        command, cwd=ROOT, env={**os.environ, **(env or {})}, capture_output=True, text=True, timeout=timeout
    )


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, ServerProcess]]:
    """One reference server per chat prefix, started when first asked for (127.0.0.1 only)."""
    started: dict[str, ServerProcess] = {}

    class Lazy(dict):
        def __missing__(self, prefix: str) -> ServerProcess:
            data_dir = tmp_path_factory.mktemp("ts-sdk-server")
            server = start_server_process(data_dir, "--heartbeat-interval", "0.2", "--chat-prefix", prefix)
            started[prefix] = self[prefix] = server
            return server

    yield Lazy()
    for server in started.values():
        server.stop()


# --- generated from the contract, and not stale ----------------------------------------------------------------


def test_the_generated_client_is_what_the_contract_generates():
    completed = run([sys.executable, str(GENERATOR), "--check"])
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "up to date" in completed.stdout


def test_the_check_fails_when_the_openapi_copy_changes(tmp_path: Path):
    document = derive_openapi31.derive()
    document["components"]["schemas"]["DoneEvent"]["properties"]["finish_reason"] = {"type": "string"}
    changed = tmp_path / "openapi-3.1.yaml"
    changed.write_text(yaml.dump(document, Dumper=yaml.CSafeDumper, sort_keys=False))
    completed = run([sys.executable, str(GENERATOR), "--check", "--input", str(changed)])
    assert completed.returncode == 1, completed.stdout + completed.stderr
    assert "differs: types.gen.ts" in completed.stdout and "finish_reason" in completed.stdout


def test_the_sdk_chat_roots_are_the_copys_chat_root_values():
    copy = yaml.load((ROOT / "generated" / "openapi-3.1.yaml").read_text(encoding="utf-8"), Loader=yaml.CSafeLoader)
    servers = copy["paths"]["/projects/{project_id}/chat/stream"]["servers"]
    declared = servers[0]["variables"]["chat_root"]["enum"]
    facade = (SDK / "src" / "index.ts").read_text(encoding="utf-8")
    roots = re.search(r"export const CHAT_ROOTS = \[(.*?)\] as const;", facade)
    assert roots and re.findall(r"'([^']*)'", roots.group(1)) == declared == list(PREFIXES.values())


def test_the_package_has_no_runtime_dependency():
    package = json.loads((SDK / "package.json").read_text(encoding="utf-8"))
    assert package["name"] == "@gns3-copilot/chat-client" and package["private"] is False
    assert package["type"] == "module"
    assert not package.get("dependencies") and not package.get("peerDependencies")  # the client is bundled


# --- strict types -----------------------------------------------------------------------------------------------


def test_strict_tsc_passes_over_the_sdk_the_example_and_the_driver():
    config = json.loads((SDK / "tsconfig.json").read_text(encoding="utf-8"))["compilerOptions"]
    assert config["strict"] and config["noEmit"] and config["noUncheckedIndexedAccess"]
    for project in (SDK, DRIVER.parent):
        completed = run([str(TSC), "-p", str(project), "--noEmit"])
        assert completed.returncode == 0, completed.stdout + completed.stderr


def test_the_examples_exhaustive_switch_fails_to_compile_when_an_event_type_is_not_handled():
    """The `never` check is real: drop one `case` from the quickstart and tsc refuses it."""
    example = (SDK / "examples" / "quickstart.ts").read_text(encoding="utf-8")
    broken = example.replace("    case 'heartbeat':\n      break;\n", "")
    assert broken != example
    # beside examples/ (same imports) but outside the SDK's tsconfig `include`
    folder = SDK / f".unhandled-{uuid.uuid4().hex[:8]}"
    folder.mkdir()
    try:
        (folder / "quickstart.ts").write_text(broken)
        (folder / "tsconfig.json").write_text(json.dumps({"extends": "../tsconfig.json", "include": ["*.ts"]}))
        completed = run([str(TSC), "-p", str(folder), "--noEmit"])
    finally:
        for path in folder.iterdir():
            path.unlink()
        folder.rmdir()
    assert completed.returncode != 0
    (error,) = completed.stdout.splitlines()
    assert "HeartbeatEvent' is not assignable to type 'never'" in error and "quickstart.ts" in error, error


# --- end to end, under each prefix ----------------------------------------------------------------------------------


@pytest.mark.parametrize("prefix", PREFIXES)
def test_the_sdk_end_to_end_against_the_reference_server(servers: dict[str, ServerProcess], prefix: str):
    server = servers[prefix]
    completed = run(
        [str(TSX), str(DRIVER)], env={"COPILOT_BASE_URL": server.base_url, "COPILOT_CHAT_ROOT": PREFIXES[prefix]}
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    result = json.loads(completed.stdout.strip().splitlines()[-1])

    # the controller, through the SDK: log in (a refused login is the typed 401), who am I, a project
    assert result["badLogin"] == typed("UnauthorizedError", 401, "unauthorized")
    assert result["me"] == "admin" and result["projectStatus"] == "opened" and result["projectListed"]

    # a tool turn, read as typed events
    turn = result["turn"]
    assert turn["types"] == ["tool_call", "tool_start:get_topology", "tool_end:get_topology", "content", "done"]
    assert turn["tools"] == ["get_topology"] and turn["text"] == "The topology has two routers."
    assert turn["sessions"] == 1

    # the session: listed, renamed, pinned, its history, deleted
    assert [(s["title"], s["messages"]) for s in result["listed"]] == [("Topology overview", 4)]
    assert result["renamed"] == "Renamed by the SDK" and result["pinned"] is True
    assert result["history"] == {"title": "Renamed by the SDK", "roles": ["user", "assistant", "tool", "assistant"]}
    assert result["otherRoot"] == typed("NotFoundError", 404, "not_found")  # the root is really the server's
    assert result["afterDelete"] == {"listed": False, "history": typed("NotFoundError", 404, "session_not_found")}

    # typed refusals: before any event on a stream
    assert result["unknownSession"] == typed("NotFoundError", 404, "session_not_found")
    assert result["unknownProjectStream"] == typed("NotFoundError", 404, "project_not_found")
    assert result["busy"] == typed("ConflictError", 409, "session_busy")
    assert result["busyEventsBeforeError"] == []

    # sent once: the refused turn reached the server once; a turn cut mid-stream is thrown, not re-sent; a refusal
    # keeps its body; hey-api's own defaults would have sent the cut turn again
    assert result["busyRequests"] == 1
    assert result["cut"] == {"thrown": "CopilotStreamError", "code": "stream_interrupted"}
    assert result["cutEvents"] == ["content"] and result["cutRequests"] == 1
    assert result["refused"] == typed("UnavailableError", 503, "storage_unavailable")
    assert result["refusedRequests"] == 1
    assert result["defaultRetries"] >= 2

    # abort: the running turn's loop throws the AbortError before `done`; an aborted signal sends nothing
    assert result["aborted"] == {"thrown": "AbortError", "sawDone": False}
    assert result["preAborted"] == {"thrown": "AbortError"} and result["preAbortedRequests"] == 0

    # the channels, read typed
    ui = result["ui"]
    assert ui["types"][0] == "start" and ui["types"][-1] == "finish"
    assert {"tool-input-available", "tool-output-available", "text-delta"} <= set(ui["types"])
    assert ui["tools"] == ["get_topology"] and ui["text"] == "The topology has two routers."
    assert ui["sessionHeader"].startswith("ui-")
    assert result["agUi"]["types"][0] == "RUN_STARTED" and result["agUi"]["types"][-1] == "RUN_FINISHED"
    assert "TOOL_CALL_RESULT" in result["agUi"]["types"] and result["agUi"]["text"] == "The topology has two routers."
    assert result["openaiChat"] == "The lab looks healthy."

    assert result["projectDeleted"] == typed("NotFoundError", 404, "project_not_found")


def test_the_quickstart_example_runs(servers: dict[str, ServerProcess]):
    prefix = "/v3/copilot/projects/{project_id}/chat"
    env = {"COPILOT_BASE_URL": servers[prefix].base_url, "COPILOT_CHAT_ROOT": PREFIXES[prefix]}
    completed = run([str(TSX), str(SDK / "examples" / "quickstart.ts")], env=env)
    assert completed.returncode == 0, completed.stderr[-3000:]
    lines = completed.stdout.splitlines()
    assert lines[:3] == ["calls get_topology", "runs get_topology", "get_topology answered"]
    assert lines[3].startswith("done (session ") and lines[4:] == [
        "answer: The topology has two routers.",
        "sessions: Topology overview (4 messages)",
    ]


def typed(name: str, status: int, code: str) -> dict:
    """What the driver reports for a typed error (its message aside)."""
    return {"thrown": name, "status": status, "code": code, "message": ANY, "typed": True}


# --- the README's example -------------------------------------------------------------------------------------------


def expected_lines(code: str) -> list[str]:
    """What each `console.log(...)` line says it prints, in its trailing comment (`console.log(x);  // 42`)."""
    return [m.group(1) for m in re.finditer(r"^\s*console\.log\(.*\);?  // (.+)$", code, flags=re.M)]


def test_the_readme_typescript_example(servers: dict[str, ServerProcess]):
    code = readme_example("ts sdk")
    folder = ROOT / ".cache" / "readme-examples"  # inside the repository, so that node_modules/ resolves
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / f"sdk-{uuid.uuid4().hex[:8]}.ts"
    # the README imports the package by its name; here it is the checkout's source
    script.write_text(code.replace("'@gns3-copilot/chat-client'", repr(str(SDK / "src" / "index.ts"))))
    try:
        completed = run([str(TSX), str(script)], env={"COPILOT_BASE_URL": servers[next(iter(PREFIXES))].base_url})
    finally:
        script.unlink()
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert completed.stdout.splitlines() == expected_lines(code)
