"""Access entries name a path exactly as access is decided (issue 34): a path with a trailing newline or a control
character is refused, and a project id written in upper case is kept in its canonical form, so that the entry
takes effect (it was accepted, 201, and never matched)."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("path", ["/projects\n", "/\n", "/projects/\t", "/projects\r"])
async def test_a_path_with_a_line_end_or_control_character_is_refused(lab, path):
    user_id, _ = await lab.add_user("ctl-user", llm=False, access=None)
    body = {"ace_type": "user", "path": path, "user_id": user_id, "role_id": await lab.role_id("User")}
    refused = await lab.client.post("/v3/access/acl", json=body, headers=lab.headers)
    assert refused.status_code == 400, refused.text
    refused_project = {**body, "path": f"/projects/{lab.project_id}\n"}
    refused = await lab.client.post("/v3/access/acl", json=refused_project, headers=lab.headers)
    assert refused.status_code == 400, refused.text


async def test_an_upper_case_project_id_is_kept_canonical_and_takes_effect(lab):
    user_id, headers = await lab.add_user("case-user", access=None)
    assert (await lab.stream("hello [[fake-llm:plain]]", headers=headers)).status == 403
    ace_id = await lab.grant(user_id, f"/projects/{lab.project_id.upper()}")
    entry = (await lab.client.get(f"/v3/access/acl/{ace_id}", headers=lab.headers)).json()
    assert entry["path"] == f"/projects/{lab.project_id}"
    assert (await lab.stream("hello [[fake-llm:plain]]", headers=headers)).status == 200
