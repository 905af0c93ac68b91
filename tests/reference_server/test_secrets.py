"""Secrets at rest: API keys and bearer tokens never reach the project database (SECRET-001, SECRET-002); the
controller database keeps passwords as Argon2 hashes and API keys Fernet-encrypted under a 0600 key file."""

from __future__ import annotations

import base64
import sqlite3
import stat
import uuid
from pathlib import Path

import httpx
import pytest
from argon2 import PasswordHasher
from cryptography.fernet import Fernet
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from gns3_copilot_generated.constants import DB_LOCATION
from reference_server.agent.context import LlmSettings
from tests.reference_server.conftest import Lab, in_process_lab
from tests.reference_server.test_controller import configs_url, fake_llm_server  # noqa: F401 - a fixture

pytestmark = pytest.mark.anyio


# --- scanning files for a secret -------------------------------------------------------------------------------


def base64_needles(secret: bytes) -> set[bytes]:
    """Substrings that any standard or urlsafe base64 encoding of data containing `secret` must contain,
    whatever the offset of `secret` in that data: one needle per alignment (offset modulo 3), keeping only
    the characters that depend on the secret's bytes alone."""
    needles = set()
    for skip in range(3):
        tail = secret[skip:]
        whole = len(tail) // 3 * 3
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            needle = encode(tail[:whole])
            assert len(needle) >= 16, "the secret is too short to be searched for in base64"
            needles.add(needle)
    return needles


def needles_for(secret: str) -> dict[bytes, str]:
    clear = secret.encode()
    found = {clear: "in the clear"}
    found.update({needle: "in base64" for needle in base64_needles(clear)})
    return found


def database_files(database: Path) -> list[Path]:
    return [
        path
        for path in (database, Path(f"{database}-wal"), Path(f"{database}-shm"), Path(f"{database}-journal"))
        if path.exists()
    ]


def leaks(files: list[Path], secrets: dict[str, str]) -> list[str]:
    found = []
    for path in files:
        data = path.read_bytes()
        for label, secret in secrets.items():
            for needle, how in needles_for(secret).items():
                if needle in data:
                    found.append(f"{label} {how} in {path.name}")
    return found


def test_the_base64_scan_finds_a_secret_at_every_offset():
    secret = f"sk-secret-{uuid.uuid4().hex}"
    for offset in range(6):
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            blob = encode(b"x" * offset + b'{"api_key": "' + secret.encode() + b'"}' + b"y" * offset)
            assert any(needle in blob for needle in base64_needles(secret.encode())), (offset, encode)
    assert leaks([], {"key": secret}) == []


# --- the scenario ----------------------------------------------------------------------------------------------


async def new_user_with_remote_llm(lab: Lab, base_url: str, api_key: str, password: str) -> tuple[str, str]:
    """A user whose LLM is the fake LLM over HTTP with `api_key`; returns (user_id, bearer token)."""
    username = f"user-{uuid.uuid4().hex[:8]}"
    response = await lab.client.post(
        "/v3/access/users", json={"username": username, "password": password}, headers=lab.headers
    )
    assert response.status_code == 201, response.text
    user_id = response.json()["user_id"]
    await lab.grant(user_id, "/projects")
    token = (
        await lab.client.post("/v3/access/users/authenticate", json={"username": username, "password": password})
    ).json()["access_token"]
    response = await lab.client.post(
        configs_url(user_id),
        headers={"Authorization": f"Bearer {token}"},
        json={"name": "remote", "provider": "openai", "base_url": base_url, "model": "fake-model", "api_key": api_key},
    )
    assert response.status_code == 201, response.text
    assert response.json()["has_api_key"] is True and api_key not in response.text
    return user_id, token


async def run_turns(lab: Lab, headers: dict[str, str], canary: str) -> list[str]:
    first = await lab.stream(f"hi {canary} [[fake-llm:plain]]", headers=headers)
    assert first.status == 200 and first.types[-1] == "done", first.text
    assert "error" not in first.types and first.content == "The lab looks healthy."
    second = await lab.stream("and the topology? [[fake-llm:tool-round-trip]]", first.session_id, headers=headers)
    assert second.types[-1] == "done" and "error" not in second.types, second.events
    assert second.content == "The topology has two routers."
    assert {"tool_call", "tool_start", "tool_end"} <= set(second.types), second.types
    third = await lab.stream("again [[fake-llm:plain]]", headers=headers)  # a second session
    assert third.types[-1] == "done" and third.content == "The lab looks healthy."
    return [first.session_id, third.session_id]


@pytest.mark.covers("SECRET-001", "SECRET-002", "TESTABILITY-001")
async def test_api_keys_and_tokens_never_reach_the_project_database(make_settings, fake_llm_server):  # noqa: F811
    control = fake_llm_server.removesuffix("/v1")
    httpx.delete(f"{control}/control/requests").raise_for_status()
    api_key = f"sk-secret-{uuid.uuid4().hex}"
    password = f"pw-{uuid.uuid4().hex}"
    canary = f"canary-{uuid.uuid4().hex}"
    settings = make_settings()
    context = in_process_lab(settings)
    lab = await context.__aenter__()
    try:
        user_id, token = await new_user_with_remote_llm(lab, fake_llm_server, api_key, password)
        headers = {"Authorization": f"Bearer {token}"}
        session_ids = await run_turns(lab, headers, canary)
        admin_token = lab.headers["Authorization"].split()[1]
        secrets = {"API key": api_key, "bearer token": token, "admin bearer token": admin_token, "password": password}

        # the turns really used the key: every LLM request carried it
        records = httpx.get(f"{control}/control/requests").json()["requests"]
        assert len(records) == 6  # plain + title; tool call + answer (one title per session); plain + title
        assert {r["extra"]["authorization"] for r in records} == {f"Bearer {api_key}"}

        project_db = Path(DB_LOCATION.format(project_dir=settings.data_dir / "projects" / lab.project_id))
        files = database_files(project_db)
        assert project_db in files and Path(f"{project_db}-wal") in files
        # while the server runs (WAL not checkpointed): the conversation is there, the secrets are not
        assert any(canary.encode() in path.read_bytes() for path in files), "the scan does not see the chat data"
        assert leaks(files, secrets) == []
    finally:
        await context.__aexit__(None, None, None)

    # after the server stopped (connections closed, WAL checkpointed)
    files = database_files(project_db)
    assert any(canary.encode() in path.read_bytes() for path in files)
    assert b"The topology has two routers." in b"".join(path.read_bytes() for path in files)
    assert leaks(files, secrets) == []

    # the checkpoints themselves, deserialised: config, metadata, state and pending writes
    async with AsyncSqliteSaver.from_conn_string(str(project_db)) as saver:
        seen = []
        for session_id in session_ids:
            async for checkpoint in saver.alist({"configurable": {"thread_id": session_id}}):
                seen.append(checkpoint)
    assert len(seen) >= 6, len(seen)
    dumped = "\n".join(repr(c) for c in seen)
    assert canary in dumped and "The topology has two routers." in dumped
    for label, secret in secrets.items():
        assert secret not in dumped, label
    for checkpoint in seen:  # LangGraph copies the run's configurable values into the metadata
        assert not {"api_key", "jwt_token", "token", "llm", "llm_settings"} & set(checkpoint.metadata), checkpoint
        assert "api_key" not in repr(checkpoint.metadata)

    controller_checks(settings.data_dir, user_id, api_key, password)


def controller_checks(data_dir: Path, user_id: str, api_key: str, password: str) -> None:
    controller_db = data_dir / "controller.db"
    files = database_files(controller_db)
    assert leaks(files, {"API key": api_key, "password": password}) == []
    assert b"admin" in controller_db.read_bytes()  # the scan reads the users table

    with sqlite3.connect(controller_db) as db:
        hashes = dict(db.execute("SELECT user_id, password_hash FROM users").fetchall())
        [sealed] = db.execute("SELECT api_key_sealed FROM llm_model_configs WHERE user_id = ?", (user_id,)).fetchone()
    db.close()
    assert len(hashes) == 2
    for password_hash in hashes.values():
        assert password_hash.startswith("$argon2id$"), password_hash
    assert PasswordHasher().verify(hashes[user_id], password)

    key_file = data_dir / "secrets" / "encryption_key"
    assert sealed != api_key and sealed.startswith("gAAAAA")  # a Fernet token (version byte 0x80)
    assert Fernet(key_file.read_bytes().strip()).decrypt(sealed.encode()).decode() == api_key
    for name in ("encryption_key", "jwt_secret_key"):
        mode = stat.S_IMODE((data_dir / "secrets" / name).stat().st_mode)
        assert mode == 0o600, (name, oct(mode))


@pytest.mark.covers("SECRET-001", "SECRET-002")
async def test_a_failed_turn_does_not_leak_the_key_either(make_settings, fake_llm_server):  # noqa: F811
    """A scripted LLM failure becomes an in-stream error; its text and the stored state must not hold the key."""
    api_key = f"sk-secret-{uuid.uuid4().hex}"
    settings = make_settings()
    async with in_process_lab(settings) as lab:
        _, token = await new_user_with_remote_llm(lab, fake_llm_server, api_key, f"pw-{uuid.uuid4().hex}")
        stream = await lab.stream("boom [[fake-llm:llm-error]]", headers={"Authorization": f"Bearer {token}"})
        assert stream.status == 200 and stream.types[-2:] == ["error", "done"], stream.types
        assert api_key not in stream.text and token not in stream.text
        project_db = Path(DB_LOCATION.format(project_dir=settings.data_dir / "projects" / lab.project_id))
        assert leaks(database_files(project_db), {"API key": api_key, "bearer token": token}) == []
    assert leaks(database_files(project_db), {"API key": api_key, "bearer token": token}) == []


def test_llm_settings_never_print_the_key():
    api_key = f"sk-secret-{uuid.uuid4().hex}"
    llm = LlmSettings(
        provider="openai", model="fake-model", temperature=0.5, base_url="http://127.0.0.1:1/v1", api_key=api_key
    )
    for text in (repr(llm), str(llm), f"{llm}", repr([llm]), repr({"llm": llm})):
        assert api_key not in text
        assert "fake-model" in text and "openai" in text
    assert llm.api_key == api_key  # the key is there, only hidden


def test_password_hashes_use_argon2_cffi_s_default_parameters_unless_a_profile_is_chosen():
    """The server's default is argon2-cffi's (RFC 9106 low memory: 64 MiB, 3 passes, 4 lanes); the tests choose
    CHEAPEST for every server they start (tests/conftest.py), and a hash of either profile verifies."""
    from reference_server.controller.security import hash_password, verify_password
    from reference_server.settings import Settings

    assert Settings.model_fields["password_hash_profile"].default == "RFC_9106_LOW_MEMORY"
    assert hash_password("secret").split("$")[3] == "m=65536,t=3,p=4"
    cheap = hash_password("secret", "CHEAPEST")
    assert cheap.split("$")[3] == "m=8,t=1,p=1"
    assert verify_password(cheap, "secret") and not verify_password(cheap, "other")
