"""The reference server's login against abuse: the same work and the same 401 for every failure, throttling of failed
logins per username (429 + Retry-After), and revoked tokens (logout, deactivation, password change), kept across a
restart and in a controller.db made by an older version."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import httpx
import pytest

from reference_server.controller import users as users_routes
from reference_server.controller.security import LoginThrottle, hash_password, verify_password
from tests.reference_server.conftest import Lab, in_process_lab

pytestmark = pytest.mark.anyio

FAILED = {"message": "Authentication was unsuccessful.", "code": "unauthorized"}


async def login(client: httpx.AsyncClient, username: str, password: str) -> httpx.Response:
    return await client.post("/v3/access/users/authenticate", json={"username": username, "password": password})


async def token_of(client: httpx.AsyncClient, username: str, password: str) -> dict[str, str]:
    response = await login(client, username, password)
    assert response.status_code == 200, response.text
    return {"Authorization": f"Bearer {response.json()['access_token']}"}


def assert_failed_login(response: httpx.Response) -> None:
    """The one answer of every refused login, whatever the reason."""
    assert (response.status_code, response.json()) == (401, FAILED), response.text
    assert response.headers["www-authenticate"] == "Bearer"


def assert_throttled(response: httpx.Response, window: float) -> int:
    assert response.status_code == 429, response.text
    body = response.json()
    assert set(body) == {"message", "code"} and body["code"] == "too_many_login_attempts", body
    retry_after = response.headers["retry-after"]
    assert retry_after.isdigit() and 1 <= int(retry_after) <= window, retry_after
    return int(retry_after)


async def refused_everywhere(lab: Lab, headers: dict[str, str]) -> None:
    """401 unauthorized on the controller's and the chat API's authenticated endpoints, logout included."""
    user_id = (await lab.client.get("/v3/access/users/me", headers=lab.headers)).json()["user_id"]
    calls = [
        ("GET", "/v3/access/users/me"),
        ("GET", "/v3/projects"),
        ("GET", f"/v3/access/users/{user_id}/llm-model-configs"),
        ("GET", f"{lab.prefix()}/sessions"),
        ("POST", "/v3/access/users/logout"),
    ]
    for method, path in calls:
        response = await lab.client.request(method, path, headers=headers)
        assert response.status_code == 401 and response.json()["code"] == "unauthorized", (path, response.text)
        assert response.headers["www-authenticate"].startswith("Bearer")


async def accepted(lab: Lab, headers: dict[str, str]) -> bool:
    me = await lab.client.get("/v3/access/users/me", headers=headers)
    sessions = await lab.client.get(f"{lab.prefix()}/sessions", headers=headers)
    return me.status_code == 200 and sessions.status_code == 200


async def user_row(lab: Lab, user_id: str) -> dict:
    users = (await lab.client.get("/v3/access/users", headers=lab.headers)).json()
    return next(user for user in users if user["user_id"] == user_id)


# --- the same work for every failure -------------------------------------------------------------------------


async def test_an_unknown_user_costs_as_much_as_a_wrong_password(make_settings, monkeypatch):
    """Judged on the work done, not on a stopwatch (which a busy machine skews): every refused login, whatever the
    reason, makes one Argon2 verification against a hash of the same parameters as a real user's."""
    verified: list[str] = []

    def counting(password_hash: str, password: str) -> bool:
        verified.append(password_hash)
        return verify_password(password_hash, password)

    monkeypatch.setattr(users_routes, "verify_password", counting)
    async with in_process_lab(make_settings(login_max_failures=1000)) as lab:
        user_id, _ = await lab.add_user("known", llm=False, access=None)
        inactive_id, _ = await lab.add_user("inactive", llm=False, access=None)
        await lab.client.put(f"/v3/access/users/{inactive_id}", json={"is_active": False}, headers=lab.headers)
        for username, password in (("known", "wrong-password"), ("never-registered", "x"), ("inactive", "password-1")):
            verified.clear()
            assert_failed_login(await login(lab.client, username, password))
            assert len(verified) == 1, (username, verified)
            profile = lab.settings.password_hash_profile
            assert argon2_parameters(verified[0]) == argon2_parameters(hash_password("any", profile)), (
                username,
                verified,
            )
        verified.clear()
        await lab.client.get("/v3/version")
        assert verified == []  # control: the counting sees verifications only where they happen


def argon2_parameters(password_hash: str) -> str:
    """The algorithm, version and cost parameters of an encoded Argon2 hash: `$argon2id$v=19$m=...,t=...,p=...`."""
    return "$".join(password_hash.split("$")[:4])


async def test_an_inactive_user_and_a_wrong_password_get_the_same_401(lab):
    user_id, _ = await lab.add_user("ivy", llm=False, access=None)
    put = await lab.client.put(f"/v3/access/users/{user_id}", json={"is_active": False}, headers=lab.headers)
    assert put.status_code == 200, put.text
    for username, password in (("ivy", "password-1"), ("ivy", "wrong-password"), ("nobody", "password-1")):
        assert_failed_login(await login(lab.client, username, password))


# --- throttling ------------------------------------------------------------------------------------------------


async def test_the_11th_failed_login_within_a_minute_is_429_even_with_the_right_password(lab):
    await lab.add_user("mallory-target", llm=False, access=None)
    for username in ("mallory-target", "never-registered"):  # an unknown user is throttled alike: nothing told
        for _ in range(10):
            assert_failed_login(await login(lab.client, username, "wrong-password"))
        assert_throttled(await login(lab.client, username, "wrong-password"), 60)
    assert_throttled(await login(lab.client, "mallory-target", "password-1"), 60)  # the right one waits too
    await token_of(lab.client, "admin", "admin")  # other usernames are not concerned


async def test_a_successful_login_clears_the_failures(make_settings):
    async with in_process_lab(make_settings(login_max_failures=3)) as lab:
        for _ in range(2):  # 2 failures and a success, twice: 4 failures in the window, never 3 in a row
            for _ in range(2):
                assert_failed_login(await login(lab.client, "admin", "wrong-password"))
            await token_of(lab.client, "admin", "admin")


async def test_a_throttled_username_may_try_again_after_retry_after(make_settings):
    """On the throttle's own clock, moved by the test: a busy machine's slow logins cannot move the window."""
    clock = FakeClock()
    async with in_process_lab(make_settings()) as lab:
        lab.app.state.login_throttle = LoginThrottle(max_failures=2, window_seconds=60, clock=clock)
        for _ in range(2):
            assert_failed_login(await login(lab.client, "admin", "wrong-password"))
            clock.now += 10
        retry_after = assert_throttled(await login(lab.client, "admin", "admin"), 60)
        assert retry_after == 40  # the oldest failure leaves the window 60 s after it began
        clock.now += retry_after - 1
        assert_throttled(await login(lab.client, "admin", "admin"), 1)
        clock.now += 1
        await token_of(lab.client, "admin", "admin")


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


# --- revoked tokens ------------------------------------------------------------------------------------------


async def test_logout_revokes_the_presented_token_only(lab):
    first, second = await token_of(lab.client, "admin", "admin"), await token_of(lab.client, "admin", "admin")
    response = await lab.client.post("/v3/access/users/logout", headers=first)
    assert (response.status_code, response.content) == (204, b"")
    await refused_everywhere(lab, first)
    assert await accepted(lab, second)  # the admin's other sessions stay logged in
    assert (await lab.client.post("/v3/access/users/logout")).status_code == 401


async def test_deactivation_refuses_every_token_and_reactivation_restores_them(lab):
    user_id, headers = await lab.add_user("dana")
    assert await accepted(lab, headers) and (await user_row(lab, user_id))["is_active"] is True
    # only a superadmin changes is_active, and not his own
    own = await lab.client.put(f"/v3/access/users/{user_id}", json={"is_active": True}, headers=headers)
    assert (own.status_code, own.json()["code"]) == (403, "forbidden")
    admin_id = (await lab.client.get("/v3/access/users/me", headers=lab.headers)).json()["user_id"]
    self_off = await lab.client.put(f"/v3/access/users/{admin_id}", json={"is_active": False}, headers=lab.headers)
    assert (self_off.status_code, self_off.json()["code"]) == (403, "forbidden")

    off = await lab.client.put(f"/v3/access/users/{user_id}", json={"is_active": False}, headers=lab.headers)
    assert off.status_code == 200 and off.json()["is_active"] is False, off.text
    await refused_everywhere(lab, headers)
    assert_failed_login(await login(lab.client, "dana", "password-1"))
    assert (await user_row(lab, user_id))["is_active"] is False

    on = await lab.client.put(f"/v3/access/users/{user_id}", json={"is_active": True}, headers=lab.headers)
    assert on.status_code == 200 and on.json()["is_active"] is True, on.text
    assert await accepted(lab, headers)  # the same token again
    assert await accepted(lab, await token_of(lab.client, "dana", "password-1"))
    me = (await lab.client.get("/v3/access/users/me", headers=headers)).json()
    assert me["is_active"] is True


async def test_a_password_change_revokes_the_older_tokens(lab):
    user_id, older = await lab.add_user("paul")
    oldest = await token_of(lab.client, "paul", "password-1")
    # a user changes his own fields, not another user's
    admin_id = (await lab.client.get("/v3/access/users/me", headers=lab.headers)).json()["user_id"]
    other = await lab.client.put(f"/v3/access/users/{admin_id}", json={"full_name": "x"}, headers=older)
    assert (other.status_code, other.json()["code"]) == (403, "forbidden")

    body = {"password": "password-2", "full_name": "Paul", "current_password": "password-1"}
    changed = await lab.client.put(f"/v3/access/users/{user_id}", json=body, headers=older)
    assert changed.status_code == 200 and changed.json()["full_name"] == "Paul", changed.text
    assert "password" not in changed.text
    for headers in (older, oldest):
        await refused_everywhere(lab, headers)
    assert_failed_login(await login(lab.client, "paul", "password-1"))
    assert await accepted(lab, await token_of(lab.client, "paul", "password-2"))
    assert await accepted(lab, lab.headers)  # the other users' tokens are not concerned

    # a change without a new password keeps the tokens
    newer = await token_of(lab.client, "paul", "password-2")
    renamed = await lab.client.put(f"/v3/access/users/{user_id}", json={"email": "p@example.org"}, headers=newer)
    assert renamed.status_code == 200 and await accepted(lab, newer)


async def test_user_update_errors(lab):
    user_id, _ = await lab.add_user("erin", llm=False, access=None)
    url = f"/v3/access/users/{user_id}"
    for body in ({"password": "short"}, {"username": "a b"}, {"is_active": "false"}, {"username": None}):
        response = await lab.client.put(url, json=body, headers=lab.headers)
        assert (response.status_code, response.json()["code"]) == (422, "validation_error"), (body, response.text)
    taken = await lab.client.put(url, json={"username": "admin"}, headers=lab.headers)
    assert (taken.status_code, taken.json()["code"]) == (400, "bad_request")
    missing = await lab.client.put("/v3/access/users/no-such-user", json={"full_name": "x"}, headers=lab.headers)
    assert (missing.status_code, missing.json()["code"]) == (404, "user_not_found")
    assert (await lab.client.put(url, json={"full_name": "x"})).status_code == 401


async def test_revocation_survives_a_restart(make_settings):
    settings = make_settings()
    async with in_process_lab(settings) as lab:
        logged_out = await token_of(lab.client, "admin", "admin")
        assert (await lab.client.post("/v3/access/users/logout", headers=logged_out)).status_code == 204
        user_id, deactivated = await lab.add_user("rita")
        await lab.client.put(f"/v3/access/users/{user_id}", json={"is_active": False}, headers=lab.headers)
        other_id, before_change = await lab.add_user("sam")
        await lab.client.put(f"/v3/access/users/{other_id}", json={"password": "password-2"}, headers=lab.headers)
    async with in_process_lab(settings) as lab:
        for headers in (logged_out, deactivated, before_change):
            await refused_everywhere(lab, headers)
        assert (await user_row(lab, user_id))["is_active"] is False
        assert await accepted(lab, await token_of(lab.client, "sam", "password-2"))


# --- an older controller database --------------------------------------------------------------------------------

OLD_USERS_TABLE = """
CREATE TABLE users (
    user_id TEXT PRIMARY KEY,
    username TEXT NOT NULL UNIQUE,
    password_hash TEXT NOT NULL,
    full_name TEXT,
    email TEXT,
    is_superadmin BOOLEAN NOT NULL DEFAULT FALSE,
    created_at TEXT NOT NULL
);
"""


def columns(database: Path, table: str) -> set[str]:
    with sqlite3.connect(database) as db:
        return {row[1] for row in db.execute(f"PRAGMA table_info({table})")}


async def test_a_controller_db_of_the_old_schema_gets_the_new_columns(make_settings):
    settings = make_settings()
    settings.data_dir.mkdir(mode=0o700, parents=True)
    database = settings.data_dir / "controller.db"
    with sqlite3.connect(database) as db:
        db.executescript(OLD_USERS_TABLE)
        for user_id, username, password, superadmin in (("u-admin", "admin", "admin", 1), ("u-old", "old", "pw", 0)):
            db.execute(
                "INSERT INTO users VALUES (?, ?, ?, NULL, NULL, ?, '2024-01-01T00:00:00Z')",
                (user_id, username, hash_password(password), superadmin),
            )
    db.close()
    assert not {"is_active", "token_version"} & columns(database, "users")

    async with in_process_lab(settings) as lab:  # logs the old admin in
        assert {"is_active", "token_version"} <= columns(database, "users")
        assert all(
            user["is_active"] is True for user in (await lab.client.get("/v3/access/users", headers=lab.headers)).json()
        )
        old = await token_of(lab.client, "old", "pw")
        assert (await lab.client.get("/v3/access/users/me", headers=old)).json()["username"] == "old"
        off = await lab.client.put("/v3/access/users/u-old", json={"is_active": False}, headers=lab.headers)
        assert off.status_code == 200, off.text
        await refused_everywhere(lab, old)
    async with in_process_lab(settings) as lab:  # opened again: nothing to add, nothing lost
        assert (await user_row(lab, "u-old"))["is_active"] is False


async def test_a_hash_of_another_profile_takes_the_server_s_at_the_next_login_and_keeps_its_tokens(make_settings):
    """A data directory first served with CHEAPEST, then with argon2-cffi's default: each user's hash takes the
    default's parameters at their next successful login, and a token issued before stays valid."""
    async with in_process_lab(make_settings(password_hash_profile="CHEAPEST")) as lab:
        user_id, headers = await lab.add_user("rehashed", llm=False, access=None)
    controller_db = make_settings().data_dir / "controller.db"

    def stored() -> str:
        with sqlite3.connect(controller_db) as db:
            return db.execute("SELECT password_hash FROM users WHERE user_id = ?", (user_id,)).fetchone()[0]

    assert stored().split("$")[3] == "m=8,t=1,p=1"
    async with in_process_lab(make_settings(password_hash_profile="RFC_9106_LOW_MEMORY")) as lab:
        assert (await lab.client.get("/v3/access/users/me", headers=headers)).status_code == 200
        assert (await login(lab.client, "rehashed", "wrong")).status_code == 401
        assert stored().split("$")[3] == "m=8,t=1,p=1"  # a failed login changes nothing
        assert (await login(lab.client, "rehashed", "password-1")).status_code == 200
        assert stored().split("$")[3] == "m=65536,t=3,p=4"
        assert (await lab.client.get("/v3/access/users/me", headers=headers)).status_code == 200
        assert (await login(lab.client, "rehashed", "password-1")).status_code == 200
