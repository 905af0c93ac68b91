"""A bearer token alone cannot change its user's password (issue 34): users changing their own password give the
current one (`current_password`); an administrator changing another user's does not."""

from __future__ import annotations

import pytest

from tests.reference_server.test_login import login

pytestmark = pytest.mark.anyio


@pytest.mark.covers("CONTROLLER-002")
async def test_an_own_password_change_needs_the_current_password(lab):
    user_id, headers = await lab.add_user("pat", llm=False, access=None)
    url = f"/v3/access/users/{user_id}"
    missing = await lab.client.put(url, json={"password": "taken-over-1"}, headers=headers)
    assert missing.status_code == 422 and missing.json()["details"]["errors"][0]["loc"] == ["body", "current_password"]
    wrong = await lab.client.put(url, json={"password": "taken-over-1", "current_password": "guess-1"}, headers=headers)
    assert (wrong.status_code, wrong.json()["code"]) == (403, "forbidden")
    assert (await login(lab.client, "pat", "password-1")).status_code == 200  # nothing changed
    body = {"password": "password-2", "current_password": "password-1"}
    right = await lab.client.put(url, json=body, headers=headers)
    assert right.status_code == 200, right.text
    assert (await login(lab.client, "pat", "password-2")).status_code == 200


@pytest.mark.covers("CONTROLLER-002")
async def test_an_administrator_sets_another_user_s_password_without_it(lab):
    user_id, _ = await lab.add_user("quinn", llm=False, access=None)
    changed = await lab.client.put(f"/v3/access/users/{user_id}", json={"password": "password-9"}, headers=lab.headers)
    assert changed.status_code == 200, changed.text
    assert (await login(lab.client, "quinn", "password-9")).status_code == 200


@pytest.mark.covers("CONTROLLER-002")
async def test_wrong_current_passwords_are_throttled_per_user_as_failed_logins_are(make_settings):
    """A stolen token guessed the current password without limit (403 after 403); now `login_max_failures` wrong
    ones within the window answer 429 with Retry-After, the right one included, and a rename (which needs no
    password) does not start the count again. The user's logins are a door of their own."""
    from tests.reference_server.conftest import in_process_lab

    async with in_process_lab(make_settings(login_max_failures=3)) as lab:
        user_id, headers = await lab.add_user("guessed", llm=False, access=None)
        url = f"/v3/access/users/{user_id}"

        async def change(current: str):
            body = {"password": "taken-over-1", "current_password": current}
            return await lab.client.put(url, json=body, headers=headers)

        for guess in ("guess-1", "guess-2"):
            assert (await change(guess)).status_code == 403
        renamed = await lab.client.put(url, json={"username": "guessed-again"}, headers=headers)
        assert renamed.status_code == 200, renamed.text
        assert (await change("guess-3")).status_code == 403
        throttled = await change("password-1")
        assert (throttled.status_code, throttled.json()["code"]) == (429, "too_many_password_attempts")
        assert int(throttled.headers["Retry-After"]) >= 1
        assert (await login(lab.client, "guessed-again", "password-1")).status_code == 200  # unchanged, and logs in
        other_id, other = await lab.add_user("not-guessed", llm=False, access=None)
        body = {"password": "password-2", "current_password": "password-1"}
        assert (await lab.client.put(f"/v3/access/users/{other_id}", json=body, headers=other)).status_code == 200
