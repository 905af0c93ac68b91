"""Stock Schemathesis, its command line as the README runs it, over the whole of spec/openapi.yaml (the controller
and the channels, data that fits the schemas and data that does not) against a running reference server, in every
default phase (examples, coverage, fuzzing, and stateful over the document's links): no failure. What
spec/schemathesis.toml allows beyond Schemathesis's defaults is a 422 on the four channel turns and a 413 (the
contract's rules JSON Schema cannot state); everything else the server answers must be what the document says."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import uuid
from pathlib import Path

import httpx
import pytest

import gns3_copilot_spec as spec
from tests.readme import readme_line
from tests.reference_server.conftest import start_server_process

pytestmark = pytest.mark.slow  # a server and a Schemathesis run: left out of `python3 tasks.py test --quick`

ROOT = Path(__file__).resolve().parents[2]
BUDGET = ["--seed", "1", "--max-examples", "10"]  # every operation and phase, positive and negative, in about a minute
PHASES = ("Examples", "Coverage", "Fuzzing", "Stateful")


def _identifiers(base_url: str) -> dict[str, str]:
    """What spec/schemathesis.toml reads from the environment, made through the API."""
    with httpx.Client(base_url=base_url, timeout=60) as client:
        login = client.post("/v3/access/users/authenticate", json={"username": "admin", "password": "admin"})
        token = login.json()["access_token"]
        headers = {"Authorization": f"Bearer {token}"}
        user_id = client.get("/v3/access/users/me", headers=headers).json()["user_id"]

        def project() -> str:
            made = client.post("/v3/projects", json={"name": f"st-{uuid.uuid4().hex[:8]}"}, headers=headers)
            assert made.status_code == 201, made.text
            return made.json()["project_id"]

        def session(project_id: str) -> str:
            answer = client.post(f"/v3/projects/{project_id}/chat/stream", json={"message": "hello"}, headers=headers)
            events = [json.loads(line[6:]) for line in answer.text.splitlines() if line.startswith("data: ")]
            return events[-1]["session_id"]

        kept = project()
        spare = {"username": f"st-{uuid.uuid4().hex[:8]}", "password": "password-1"}
        spare_user = client.post("/v3/access/users", json=spare, headers=headers)
        assert spare_user.status_code == 201, spare_user.text
        return {
            "COPILOT_TOKEN": token,
            "COPILOT_USER_ID": user_id,
            "COPILOT_SPARE_USER_ID": spare_user.json()["user_id"],
            "COPILOT_PROJECT_ID": kept,
            "COPILOT_SESSION_ID": session(kept),
            "COPILOT_SPARE_SESSION_ID": session(kept),
        }


def test_stock_schemathesis_finds_nothing_over_the_whole_document(tmp_path):
    line = readme_line(
        ".venv/bin/schemathesis --config-file spec/schemathesis.toml run spec/openapi.yaml --url http://127.0.0.1:3080"
    )
    server = start_server_process(tmp_path / "data")
    try:
        env = {**os.environ, **_identifiers(server.base_url)}
        command = [sys.executable, "-m", "schemathesis.cli", *line.split()[1:], *BUDGET]
        command[command.index("http://127.0.0.1:3080")] = server.base_url
        completed = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    finally:
        server.stop()
    output = completed.stdout + completed.stderr
    assert completed.returncode == 0, output[-6000:]
    operations = sum(len([m for m in item if m != "parameters"]) for item in spec.load_openapi()["paths"].values())
    assert f"{operations} selected / {operations} total" in output, output[-3000:]  # every operation of the document
    summary = output.split("SUMMARY")[-1]
    assert " passed" in output and "failures" not in summary, output[-3000:]
    assert all(f"✅ {phase}" in summary for phase in PHASES), summary  # each default phase ran, none skipped
    followed = re.search(r"API Links:\s+(\d+) covered", output)
    assert followed and int(followed.group(1)) > 0, output[-3000:]  # the stateful phase went from a link to its target
