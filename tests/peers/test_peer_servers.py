"""The peers (peers/): installed from their pin lists, once; each started exactly as the suite starts it (its
target file's start command, `conformance.harness.processes.start_target`, the fake LLM of `start_fake_llm`) inside a
loopback-only network namespace; one plain turn over the peer's protocol with a real client; stopped by pid, with
nothing left running.

The namespace part runs this module as a program under `unshare -rn` (`python -m tests.peers.test_peer_servers
PEER WORKDIR`), which prints what it saw as one JSON line; the tests judge that.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from conformance.harness.machine_load import stretched
from conformance.harness.netns import network_namespace_available
from peers import PEERS, REPO, get_peer
from peers.install import ensure, home, installed

pytestmark = pytest.mark.slow  # installs and serves the peers: left out of `python3 tasks.py test --quick`

PLAIN = "[[fake-llm:plain]]"
PLAIN_TEXT = "The lab looks healthy."  # fake_llm/scripts/plain.yaml


# --- inside the namespace -----------------------------------------------------------------------------------------


def _openai_turn(base_url: str, channel: dict) -> dict:
    import openai

    with httpx.Client(trust_env=False, timeout=20) as http:
        client = openai.OpenAI(base_url=base_url + channel["path"], api_key="unused", http_client=http, max_retries=0)
        stream = client.chat.completions.create(
            model=channel["model"], messages=[{"role": "user", "content": f"Is the lab healthy? {PLAIN}"}], stream=True
        )
        chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    return {"texts": [text], "frames": [c.model_dump(exclude_none=True) for c in chunks]}


def _ag_ui_turn(base_url: str, channel: dict) -> dict:
    body = {
        "threadId": "thread-1",
        "runId": "run-1",
        "messages": [{"id": "user-1", "role": "user", "content": f"Is the lab healthy? {PLAIN}"}],
        "tools": [],
        "context": [],
        "state": {},
        "forwardedProps": {},
    }
    events = []
    with httpx.Client(trust_env=False, timeout=20) as http:
        with http.stream("POST", base_url + channel["path"], json=body, headers={"accept": "text/event-stream"}) as r:
            r.raise_for_status()
            for line in r.iter_lines():
                if line.startswith("data:"):
                    events.append(json.loads(line[5:]))
    texts: dict[str, str] = {}
    for event in events:
        if event["type"] == "TEXT_MESSAGE_CONTENT":
            texts[event["messageId"]] = texts.get(event["messageId"], "") + event["delta"]
    return {"texts": list(texts.values()), "frames": [e["type"] for e in events if e["type"] != "RAW"]}


def _ui_turn(base_url: str, channel: dict) -> dict:
    """The body useChat's DefaultChatTransport posts; the UI message stream's text parts, joined per id."""
    message = {"id": "user-1", "role": "user", "parts": [{"type": "text", "text": f"Is the lab healthy? {PLAIN}"}]}
    body = {"id": "chat-1", "messages": [message], "trigger": "submit-message", "messageId": "user-1"}
    chunks = []
    with httpx.Client(trust_env=False, timeout=20) as http:
        with http.stream("POST", base_url + channel["path"], json=body) as r:
            r.raise_for_status()
            for line in r.iter_lines():
                if line.startswith("data:") and line[5:].strip() != "[DONE]":
                    chunks.append(json.loads(line[5:]))
    texts: dict[str, str] = {}
    for chunk in chunks:
        if chunk["type"] == "text-delta":
            texts[chunk["id"]] = texts.get(chunk["id"], "") + chunk["delta"]
    return {"texts": list(texts.values()), "frames": [c["type"] for c in chunks]}


TURNS = {"openai": _openai_turn, "ag_ui": _ag_ui_turn, "ui": _ui_turn}


def _children(pid: int) -> set[int]:
    """Every live descendant of pid (from /proc)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    found, frontier = set(), {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def _inside(peer_name: str, workdir: Path) -> dict:
    import yaml

    from conformance.harness.processes import free_port, start_fake_llm, start_target
    from peers.serve import loopback_only

    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    peer = get_peer(peer_name)
    target = yaml.safe_load(peer.target_file.read_text())
    (workdir / "scripts").mkdir(parents=True)
    fake, fake_url = start_fake_llm(workdir / "scripts")
    try:
        port = free_port()
        mapping = {"python": sys.executable, "port": str(port), "workdir": str(workdir), "fake_llm_url": fake_url}
        mapping["repo"] = str(REPO)

        def fill(value: str) -> str:
            for key, replacement in mapping.items():
                value = value.replace("{" + key + "}", replacement)
            return value

        start = target["start"]
        base_url = f"http://127.0.0.1:{port}"
        started = time.monotonic()
        process = start_target(
            [fill(part) for part in start["command"]],
            env={k: fill(v) for k, v in start.get("env", {}).items()},
            base_url=base_url,
            ready_path=start["ready_path"],
            timeout=start["timeout_seconds"],
            workdir=workdir,
        )
        ready = time.monotonic() - started
        try:
            [(protocol, channel)] = target["channels"].items()
            seen = TURNS[protocol](base_url, channel)
            descendants = _children(process.popen.pid)
        finally:
            code = process.stop(grace=10)
        try:
            httpx.get(base_url + start["ready_path"], timeout=2, trust_env=False)
            still_listening = True
        except httpx.TransportError:
            still_listening = False
    finally:
        fake.stop()
    return {
        "loopback_only": loopback_only(),
        "ready_seconds": round(ready, 2),
        **seen,
        "exit": code,
        "descendants_left": sorted(pid for pid in descendants if Path(f"/proc/{pid}").exists()),
        "still_listening": still_listening,
        "children_left": sorted(_children(os.getpid())),
        "output": process.tail(),
    }


# --- the tests ----------------------------------------------------------------------------------------------------


def test_installing_a_peer_twice_installs_it_once():
    for peer in PEERS.values():
        python = ensure(peer)  # needs the package registry the first time; cached in .cache/peers/ afterwards
        assert python == home(peer) and installed(peer) == python  # a Node peer's: its node_modules
        started = time.monotonic()
        assert ensure(peer) == python
        assert time.monotonic() - started < stretched(1), "an unchanged pin list must not reinstall"


@pytest.mark.parametrize("peer", sorted(PEERS))
def test_a_peer_started_as_the_suite_starts_it_answers_a_plain_turn(peer, tmp_path):
    if not network_namespace_available():
        pytest.skip("no network namespace here (`unshare -rn` and `ip` are needed): a peer runs only inside one")
    ensure(peer)
    workdir = tmp_path / "work"
    completed = subprocess.run(
        ["unshare", "-rn", sys.executable, "-m", "tests.peers.test_peer_servers", peer, str(workdir)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-3000:]
    seen = json.loads(completed.stdout.strip().splitlines()[-1])
    assert seen["loopback_only"]
    assert seen["texts"] == [PLAIN_TEXT], seen  # the answer alone: the harness streams no title of ours
    # stopped by pid: the server was that pid (no process of its own left), it exited, its port is closed
    assert seen["exit"] is not None and seen["descendants_left"] == [] and seen["children_left"] == []
    assert not seen["still_listening"]
    assert "listening on http://127.0.0.1:" in seen["output"]
    leftovers = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and str(workdir) in (entry / "cmdline").read_bytes().decode(errors="replace"):
                leftovers.append(entry.name)
        except OSError:
            continue
    assert leftovers == [], "processes of the run are still there"


def test_a_peer_refuses_to_start_outside_a_loopback_only_namespace(tmp_path):
    from peers.serve import loopback_only

    if loopback_only():
        pytest.skip("this test runs inside a loopback-only namespace already")
    completed = subprocess.run(
        [sys.executable, "-m", "peers.serve", "ag-ui-langgraph", "--port", "9", "--fake-llm", "http://127.0.0.1:9/v1"]
        + ["--workdir", str(tmp_path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert completed.returncode != 0 and "network namespace with loopback only" in completed.stderr
    assert not (tmp_path / "ag-ui-langgraph").exists()


if __name__ == "__main__":
    print(json.dumps(_inside(sys.argv[1], Path(sys.argv[2]))))
