"""Issue 34's first two findings, over HTTP as they were found: a denying entry removed only the privileges its own
role holds, so that with User on /projects and a deny of Auditor on a project Q the user could not see Q but closed
it (204), opened it (200) and deleted it (204), wiping every user's chat sessions in it; and the built-in role
No Access forbade nothing, the chat answering 200 with it as a deny or as an allowing entry (ACCESS-003, ACCESS-004).
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.anyio

DENIED = "project_access_denied"


async def _status(lab, project_id: str) -> int | str:
    """The project's status as the administrator reads it, or the status code when it cannot be read."""
    response = await lab.client.get(f"/v3/projects/{project_id}", headers=lab.headers)
    return response.json()["status"] if response.status_code == 200 else response.status_code


def _refused(response) -> None:
    assert response.status_code == 403, (response.status_code, response.text[:300])
    assert response.json()["code"] == DENIED, response.text


async def _admin_sessions(lab, project_id: str) -> list[str]:
    response = await lab.client.get(f"{lab.prefix(project_id)}/sessions", headers=lab.headers)
    assert response.status_code == 200, response.text
    return [session["thread_id"] for session in response.json()]


@pytest.mark.covers("ACCESS-004")
async def test_a_deny_of_auditor_under_user_on_projects_leaves_no_close_open_or_delete(lab):
    project = await lab.new_project()
    kept = await lab.stream("the administrator's session [[fake-llm:plain]]", project_id=project)
    assert kept.status == 200
    user_id, user = await lab.add_user("auditor-denied")  # User on /projects, propagating
    await lab.grant(user_id, f"/projects/{project}", role="Auditor", allowed=False)
    url = f"/v3/projects/{project}"
    assert (await lab.client.get(url, headers=user)).status_code == 403  # the part that held before the fix
    assert project not in {p["project_id"] for p in (await lab.client.get("/v3/projects", headers=user)).json()}

    closing = await lab.client.post(f"{url}/close", headers=user)
    _refused(closing)  # was 204
    assert await _status(lab, project) == "opened"

    assert (await lab.client.post(f"{url}/close", headers=lab.headers)).status_code == 204
    opening = await lab.client.post(f"{url}/open", headers=user)
    _refused(opening)  # was 200
    assert await _status(lab, project) == "closed"

    deleting = await lab.client.delete(url, headers=user)
    _refused(deleting)  # was 204
    assert await _status(lab, project) == "closed"
    assert (await lab.client.post(f"{url}/open", headers=lab.headers)).status_code == 200
    assert kept.session_id in await _admin_sessions(lab, project)  # every user's sessions still there


@pytest.mark.covers("ACCESS-003")
@pytest.mark.parametrize("allowed", [False, True], ids=["no-access-denying", "no-access-allowing"])
async def test_an_entry_of_no_access_on_the_project_refuses_the_chat(lab, allowed):
    user_id, user = await lab.add_user(f"no-access-{str(allowed).lower()}")  # User on /projects, propagating
    served = await lab.stream("before the entry [[fake-llm:plain]]", headers=user)
    assert served.status == 200  # the grant on /projects reaches the project
    await lab.grant(user_id, f"/projects/{lab.project_id}", role="No Access", allowed=allowed)
    refused = await lab.stream("after the entry [[fake-llm:plain]]", headers=user)
    assert refused.status == 403 and DENIED in refused.text, (refused.status, refused.text[:300])  # was 200
