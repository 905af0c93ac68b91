"""Access entries name a path exactly as access is decided (issue 34, ACCESS-006): a path with a trailing newline or
a control character is refused 400 (gns3-server's status for a path that names none of its endpoints), on creation
and on change alike, and a project id written in upper case is kept in its canonical form, so that the entry takes
effect (it was accepted, 201, and never matched)."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.anyio


@pytest.mark.covers("ACCESS-006")
@pytest.mark.parametrize("path", ["/projects\n", "/\n", "/projects/\t", "/projects\r", "/projects/", "/templates"])
async def test_a_path_with_a_line_end_or_control_character_is_refused(lab, path):
    user_id, _ = await lab.add_user("ctl-user", llm=False, access=None)
    body = {"ace_type": "user", "path": path, "user_id": user_id, "role_id": await lab.role_id("User")}
    refused = await lab.client.post("/v3/access/acl", json=body, headers=lab.headers)
    assert refused.status_code == 400, refused.text
    refused_project = {**body, "path": f"/projects/{lab.project_id}\n"}
    refused = await lab.client.post("/v3/access/acl", json=refused_project, headers=lab.headers)
    assert refused.status_code == 400, refused.text


@pytest.mark.covers("ACCESS-006")
async def test_a_change_to_a_path_that_names_nothing_is_refused_and_leaves_the_entry(lab):
    user_id, _ = await lab.add_user("put-user", llm=False, access=None)
    ace_id = await lab.grant(user_id, "/projects")
    url = f"/v3/access/acl/{ace_id}"
    before = (await lab.client.get(url, headers=lab.headers)).json()
    body = {"ace_type": "user", "user_id": user_id, "role_id": await lab.role_id("User")}
    for path in ("/projects\n", f"/projects/{lab.project_id}\x00", "/nowhere"):
        refused = await lab.client.put(url, json={**body, "path": path}, headers=lab.headers)
        assert (refused.status_code, refused.json()["code"]) == (400, "bad_request"), refused.text
    assert (await lab.client.get(url, headers=lab.headers)).json() == before


@pytest.mark.covers("ACCESS-006")
async def test_an_upper_case_project_id_is_kept_canonical_and_takes_effect(lab):
    user_id, headers = await lab.add_user("case-user", access=None)
    assert (await lab.stream("hello [[fake-llm:plain]]", headers=headers)).status == 403
    ace_id = await lab.grant(user_id, f"/projects/{lab.project_id.upper()}")
    entry = (await lab.client.get(f"/v3/access/acl/{ace_id}", headers=lab.headers)).json()
    assert entry["path"] == f"/projects/{lab.project_id}"
    assert (await lab.stream("hello [[fake-llm:plain]]", headers=headers)).status == 200
