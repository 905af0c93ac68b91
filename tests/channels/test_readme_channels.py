"""The README's channel examples run against a live reference server and print what their comments say: the
`openai` Python client, `useChat`'s `Chat` with `DefaultChatTransport`, and `@ag-ui/client`'s HttpAgent."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from tests.readme import readme_example

from .conftest import LiveLab

ROOT = Path(__file__).resolve().parents[2]


def expected_lines(code: str, comment: str) -> list[str]:
    """What each printing line says it prints, in its trailing comment (`print(x)  # 42`)."""
    call = r"print\(" if comment == "#" else r"console\.log\("
    return [m.group(1) for m in re.finditer(rf"^\s*{call}.*\)[;]?  {re.escape(comment)} (.+)$", code, flags=re.M)]


def environment(live: LiveLab) -> dict[str, str]:
    """The two values every example reads: the chat URL (base and prefix) and a bearer token."""
    return {
        **os.environ,
        "COPILOT_CHAT_URL": live.base_url + live.prefix(),
        "COPILOT_TOKEN": live.token,
        "SESSION_ID": f"readme-{uuid.uuid4().hex[:8]}",
    }


def run(command: list[str], live: LiveLab) -> list[str]:
    completed = subprocess.run(command, cwd=ROOT, env=environment(live), capture_output=True, text=True, timeout=60)
    assert completed.returncode == 0, completed.stderr[-3000:]
    return completed.stdout.splitlines()


@pytest.mark.covers("OPENAI-001", "OPENAI-002", "CHANNEL-008")
def test_the_openai_python_example(live: LiveLab, tmp_path: Path):
    code = readme_example("python openai")
    script = tmp_path / "openai_example.py"
    script.write_text(code)
    assert run([sys.executable, str(script)], live) == expected_lines(code, "#")


def run_typescript(code: str, live: LiveLab) -> None:
    folder = ROOT / ".cache" / "readme-examples"  # inside the repository, so that node_modules/ resolves
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / f"example-{uuid.uuid4().hex[:8]}.ts"
    script.write_text(code)
    try:
        assert run([str(ROOT / "node_modules" / ".bin" / "tsx"), str(script)], live) == expected_lines(code, "//")
    finally:
        script.unlink()


@pytest.mark.covers("UI-001", "UI-003")
def test_the_use_chat_example(live: LiveLab):
    run_typescript(readme_example("ts use-chat"), live)


@pytest.mark.covers("AGUI-001", "AGUI-002")
def test_the_ag_ui_example(live: LiveLab):
    run_typescript(readme_example("ts ag-ui"), live)
