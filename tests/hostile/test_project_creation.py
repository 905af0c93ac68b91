"""Creating a project needs Project.Allocate on /projects, as in gns3-server 3.x (issue 34, ACCESS-005): any user
created projects, and learned from a 409 that a project they could not see held a name. The privilege is asked
before the body is read, so that a user without it learns nothing from the endpoint."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.anyio


async def _names(lab) -> list[str]:
    return [p["name"] for p in (await lab.client.get("/v3/projects", headers=lab.headers)).json()]


@pytest.mark.covers("ACCESS-005")
async def test_a_user_without_the_privilege_creates_nothing_and_learns_no_name(lab):
    _, headers = await lab.add_user("no-allocate", llm=False, access=None)
    taken = (await lab.client.get(f"/v3/projects/{lab.project_id}", headers=lab.headers)).json()["name"]
    before = await _names(lab)
    for body in ({"name": "mine"}, {"name": taken}, {"name": ""}, {"nom": 1}):
        answer = await lab.client.post("/v3/projects", json=body, headers=headers)
        assert answer.status_code == 403, (body, answer.text)
    malformed = await lab.client.post("/v3/projects", content=b"{not json", headers=headers)
    assert malformed.status_code == 403, malformed.text
    assert await _names(lab) == before


@pytest.mark.covers("ACCESS-005")
@pytest.mark.parametrize(("path", "propagate"), [("/projects", False), ("/", True)])
async def test_the_user_role_on_projects_creates_and_hears_of_taken_names(lab, path, propagate):
    user_id, headers = await lab.add_user(f"allocate-{path.strip('/') or 'root'}", llm=False, access=None)
    await lab.grant(user_id, path, propagate=propagate)
    made = await lab.client.post("/v3/projects", json={"name": f"made-under-{path}"}, headers=headers)
    assert made.status_code == 201, made.text
    again = await lab.client.post("/v3/projects", json={"name": f"made-under-{path}"}, headers=headers)
    assert again.status_code == 409, again.text


@pytest.mark.covers("ACCESS-005")
async def test_a_role_on_the_root_that_does_not_propagate_does_not_allow_creating(lab):
    user_id, headers = await lab.add_user("root-only", llm=False, access=None)
    await lab.grant(user_id, "/", propagate=False)
    assert (await lab.client.post("/v3/projects", json={"name": "root-only"}, headers=headers)).status_code == 403
