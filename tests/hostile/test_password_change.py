"""A bearer token alone cannot change its user's password (issue 34): users changing their own password give the
current one (`current_password`); an administrator changing another user's does not."""

from __future__ import annotations

import pytest

from tests.reference_server.test_login import login

pytestmark = pytest.mark.anyio


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


async def test_an_administrator_sets_another_user_s_password_without_it(lab):
    user_id, _ = await lab.add_user("quinn", llm=False, access=None)
    changed = await lab.client.put(f"/v3/access/users/{user_id}", json={"password": "password-9"}, headers=lab.headers)
    assert changed.status_code == 200, changed.text
    assert (await login(lab.client, "quinn", "password-9")).status_code == 200
