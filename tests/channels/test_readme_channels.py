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


def test_the_snapshot_example_is_stable_across_runs(quiet_live: LiveLab, tmp_path: Path):
    """The README's snapshot test: written once with --snapshot-update, it passes on the next run, whose turns have
    other ids, times and heartbeats; each stream keeps its protocol's framing."""
    (tmp_path / "pytest.ini").write_text("[pytest]\n")  # its own root, away from this repository's configuration
    (tmp_path / "test_my_streams.py").write_text(readme_example("python snapshots"))
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_my_streams.py"]
    env = {k: v for k, v in environment(quiet_live).items() if k != "PYTEST_ADDOPTS"}
    for extra in (["--snapshot-update"], []):
        completed = subprocess.run(
            [*command, *extra], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
        )
        assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-2000:]
    texts = [path.read_text() for path in (tmp_path / "__snapshots__" / "test_my_streams").glob("*.sse")]
    [openai] = [text for text in texts if "chat.completion.chunk" in text]
    [gns3] = [text for text in texts if text is not openai]
    assert '"session_id": "<session_id:1>"' in gns3 and "# framing" not in gns3
    assert openai.rstrip().endswith("data: [DONE]") and '"id": "<id:1>"' in openai and '"<created:1>"' in openai
