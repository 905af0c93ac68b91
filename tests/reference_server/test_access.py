"""Project access control of the reference server (ACCESS-001..004): a project belongs to its creator, others
need an access control entry, a caller without access gets one refusal everywhere, and the ACL API itself."""

from __future__ import annotations

import uuid

import pytest

from reference_server.controller.access import decide

from .conftest import Lab
from .test_controller import assert_error

pytestmark = pytest.mark.anyio

DENIED = "project_access_denied"


def chat_calls(lab: Lab, project_id: str, session_id: str) -> list[tuple[str, str, dict]]:
    """Every chat endpoint, with a valid request naming `session_id`."""
    prefix = lab.prefix(project_id)
    session = f"{prefix}/sessions/{session_id}"
    return [
        ("POST", f"{prefix}/stream", {"json": {"message": "hi [[fake-llm:plain]]", "session_id": session_id}}),
        ("GET", f"{prefix}/sessions", {}),
        ("GET", f"{session}/history", {}),
        ("PATCH", session, {"json": {"title": "mine now"}}),
        ("PUT", f"{session}/pin", {}),
        ("DELETE", f"{session}/pin", {}),
        ("POST", f"{session}/abort", {}),
        ("DELETE", session, {}),
    ]


async def project_status(lab: Lab, project_id: str) -> str:
    response = await lab.client.get(f"/v3/projects/{project_id}", headers=lab.headers)
    assert response.status_code == 200, response.text
    return response.json()["status"]


@pytest.mark.covers("ACCESS-001", "ACCESS-002", "PRECHECK-001")
async def test_a_caller_without_access_gets_one_refusal_on_every_chat_endpoint(lab: Lab):
    first = await lab.stream("hi [[fake-llm:plain]]")  # the admin's session in the admin's project
    assert first.status == 200
    _, bob = await lab.add_user("bob-noaccess", access=None)
    closed = await lab.new_project()
    assert (await lab.client.post(f"/v3/projects/{closed}/close", headers=lab.headers)).status_code == 204
    for project_id in (lab.project_id, str(uuid.uuid4()), closed, "not-a-uuid"):
        for session_id in (first.session_id, "never-made", "bad id!"):
            for method, url, extra in chat_calls(lab, project_id, session_id):
                response = await lab.client.request(method, url, headers=bob, **extra)
                assert_error(response, 403, DENIED)
        response = await lab.client.post(f"{lab.prefix(project_id)}/stream", headers=bob, content=b"{not json")
        assert_error(response, 403, DENIED)  # before the body is read
    history = await lab.history(first.session_id)
    assert len(history["messages"]) == 2 and history["title"] != "mine now"  # nothing changed


@pytest.mark.covers("ACCESS-001", "ACCESS-003", "ISOLATION-001")
async def test_a_project_belongs_to_its_creator_and_others_need_a_grant(lab: Lab):
    alice_id, alice = await lab.add_user("alice", access=None)
    _, bob = await lab.add_user("bob", access=None)
    await lab.grant(alice_id, "/projects", propagate=False)  # she may create projects (ACCESS-005), see none
    response = await lab.client.post("/v3/projects", json={"name": "alices-lab"}, headers=alice)
    assert response.status_code == 201, response.text
    project = response.json()["project_id"]
    own = await lab.stream("hi [[fake-llm:plain]]", headers=alice, project_id=project)
    assert own.status == 200 and own.types[-1] == "done"
    assert_error(await lab.client.get(f"{lab.prefix(project)}/sessions", headers=bob), 403, DENIED)
    assert_error(await lab.client.get(f"{lab.prefix()}/sessions", headers=alice), 403, DENIED)  # the admin's
    # The admin sees every project.
    assert (await lab.client.get(f"{lab.prefix(project)}/sessions", headers=lab.headers)).status_code == 200
    # A grant works from the next request, with sessions of bob's own; its removal too.
    bob_id = (await lab.client.get("/v3/access/users/me", headers=bob)).json()["user_id"]
    ace = await lab.grant(bob_id, f"/projects/{project}")
    mine = await lab.stream("hi [[fake-llm:plain]]", headers=bob, project_id=project)
    assert mine.status == 200 and mine.types[-1] == "done"
    listed = (await lab.client.get(f"{lab.prefix(project)}/sessions", headers=bob)).json()
    assert [s["thread_id"] for s in listed] == [mine.session_id]
    history = f"{lab.prefix(project)}/sessions/{own.session_id}/history"
    assert_error(await lab.client.get(history, headers=bob), 404, "session_not_found")
    assert (await lab.client.delete(f"/v3/access/acl/{ace}", headers=lab.headers)).status_code == 204
    assert_error(await lab.client.get(f"{lab.prefix(project)}/sessions", headers=bob), 403, DENIED)
    assert alice_id != bob_id


@pytest.mark.covers("ACCESS-003")
async def test_roles_privileges_deny_entries_and_propagation(lab: Lab):
    auditor_id, auditor = await lab.add_user("audrey", access=None)
    await lab.grant(auditor_id, "/projects", role="Auditor")
    # Project.Audit: sees and chats; no Project.Allocate: cannot close or delete.
    assert (await lab.stream("hi [[fake-llm:plain]]", headers=auditor)).status == 200
    assert (await lab.client.get(f"/v3/projects/{lab.project_id}", headers=auditor)).status_code == 200
    assert_error(await lab.client.post(f"/v3/projects/{lab.project_id}/close", headers=auditor), 403, DENIED)
    # A denying entry on the project wins over the allowing one on /projects.
    await lab.grant(auditor_id, f"/projects/{lab.project_id}", role="Auditor", allowed=False)
    assert_error(await lab.client.get(f"{lab.prefix()}/sessions", headers=auditor), 403, DENIED)
    other = await lab.new_project()
    assert (await lab.client.get(f"{lab.prefix(other)}/sessions", headers=auditor)).status_code == 200
    # An entry that does not propagate grants its own path only.
    quiet_id, quiet = await lab.add_user("quentin", access=None)
    await lab.grant(quiet_id, "/projects", propagate=False)
    assert_error(await lab.client.get(f"{lab.prefix()}/sessions", headers=quiet), 403, DENIED)
    # The role without privileges grants nothing.
    nobody_id, nobody = await lab.add_user("nadia", access=None)
    await lab.grant(nobody_id, "/", role="No Access")
    assert_error(await lab.client.get(f"{lab.prefix()}/sessions", headers=nobody), 403, DENIED)


@pytest.mark.covers("ACCESS-003", "ACCESS-004")
async def test_a_deny_or_no_access_on_the_project_forbids_all_a_parent_grants(lab: Lab):
    """Issue 34: a deny of Auditor on the project left the parent's Project.Allocate (close, open, delete), and
    No Access, holding no privilege, forbade nothing, allowing or denying."""
    for role, allowed in (("Auditor", False), ("No Access", False), ("No Access", True)):
        project = await lab.new_project()
        user_id, user = await lab.add_user(f"dana-{role.replace(' ', '')}-{allowed}".lower(), access=None)
        await lab.grant(user_id, "/projects")
        await lab.grant(user_id, f"/projects/{project}", role=role, allowed=allowed)
        for method, url, extra in chat_calls(lab, project, "never-made"):
            assert_error(await lab.client.request(method, url, headers=user, **extra), 403, DENIED)
        for method in ("GET", "DELETE"):
            assert_error(await lab.client.request(method, f"/v3/projects/{project}", headers=user), 403, DENIED)
        assert_error(await lab.client.post(f"/v3/projects/{project}/close", headers=user), 403, DENIED)
        assert await project_status(lab, project) == "opened"
        assert project not in {p["project_id"] for p in (await lab.client.get("/v3/projects", headers=user)).json()}
        assert (await lab.client.get(f"{lab.prefix(lab.project_id)}/sessions", headers=user)).status_code == 200


def test_the_privilege_rule_is_gns3_servers():
    # (path, propagate, allowed, the role holds the privilege)
    entries = [("/projects", True, True, True), ("/projects/p1", True, False, True)]
    assert decide("/projects/p2", entries) is True
    assert decide("/projects/p1", entries) is False  # denied at the most specific level
    assert decide("/projects", [("/projects", False, True, True)]) is True  # no propagation needed on the path itself
    assert decide("/projects/p1", [("/projects", False, True, True)]) is False
    assert decide("/projects/p1", [("/", True, True, True)]) is True
    assert decide("/projects/p1", []) is False
    assert decide("/projects/p1", [("/projects/p1", True, True, False)]) is False  # a role without the privilege


@pytest.mark.covers("ACCESS-003", "ACCESS-004")
def test_a_deny_refuses_every_privilege_whatever_its_role_holds():
    """Unlike gns3-server, which looks up only the entries whose role holds the privilege asked (issue 34)."""
    parent = ("/projects", True, True, True)
    assert decide("/projects/p1", [parent, ("/projects/p1", True, False, False)]) is False
    assert decide("/projects/p2", [parent, ("/projects/p1", True, False, False)]) is True
    assert decide("/projects/p1", [("/projects", False, False, False), ("/", True, True, True)]) is False


@pytest.mark.covers("ACCESS-003")
def test_the_precedence_of_deny_specificity_and_propagation():
    """The contract's order (spec/behaviour.md, Project access): the first level from the path up that decides wins,
    a deny at a level whatever its propagate, and on one path the deny, in whichever order the entries come."""
    grant, deny = (True, True, True), (True, False, True)
    quiet_deny = (False, False, True)  # a deny that does not propagate still refuses below its path
    assert decide("/projects/p1", [("/projects", *quiet_deny), ("/", *grant)]) is False
    assert decide("/projects/p1", [("/projects", *quiet_deny), ("/projects/p1", *grant)]) is True  # more specific
    assert decide("/projects/p1", [("/projects", *deny), ("/projects/p1", *grant)]) is True
    assert decide("/projects/p1", [("/", *grant), ("/projects/p1", *deny)]) is False
    both = [("/projects/p1", *grant), ("/projects/p1", *deny)]
    for entries in (both, both[::-1]):
        assert decide("/projects/p1", entries) is False  # one path: the deny wins (gns3-server: row order)
    # A grant that does not reach the path decides nothing: the level above still may.
    assert decide("/projects/p1", [("/projects", False, True, True), ("/", *grant)]) is True
    assert decide("/projects/p1", [("/projects/p1", True, True, False), ("/projects", *grant)]) is True


@pytest.mark.covers("ACCESS-003")
async def test_a_grant_on_the_project_stands_under_a_deny_on_projects(lab: Lab):
    user_id, user = await lab.add_user("petra", access=None)
    await lab.grant(user_id, "/projects", allowed=False, propagate=False)
    await lab.grant(user_id, "/", role="User")
    assert_error(await lab.client.get(f"{lab.prefix()}/sessions", headers=user), 403, DENIED)
    await lab.grant(user_id, f"/projects/{lab.project_id}")
    assert (await lab.client.get(f"{lab.prefix()}/sessions", headers=user)).status_code == 200
    assert_error(await lab.client.get(f"{lab.prefix(await lab.new_project())}/sessions", headers=user), 403, DENIED)


@pytest.mark.covers("ACCESS-004")
async def test_the_controller_refuses_a_caller_without_access_and_changes_nothing(lab: Lab):
    session = await lab.stream("hi [[fake-llm:plain]]")
    _, bob = await lab.add_user("bob-ctl", access=None)
    closed = await lab.new_project()
    assert (await lab.client.post(f"/v3/projects/{closed}/close", headers=lab.headers)).status_code == 204
    assert (await lab.client.get("/v3/projects", headers=bob)).json() == []
    for method, path in (
        ("GET", f"/v3/projects/{lab.project_id}"),
        ("POST", f"/v3/projects/{lab.project_id}/close"),
        ("DELETE", f"/v3/projects/{lab.project_id}"),
        ("POST", f"/v3/projects/{closed}/open"),
        ("DELETE", f"/v3/projects/{closed}"),
        ("GET", f"/v3/projects/{uuid.uuid4()}"),  # the same answer for a project that does not exist
    ):
        assert_error(await lab.client.request(method, path, headers=bob), 403, DENIED)
    assert await project_status(lab, lab.project_id) == "opened"
    assert await project_status(lab, closed) == "closed"
    assert len((await lab.history(session.session_id))["messages"]) == 2
    # The admin still gets 404 for a project that does not exist.
    assert_error(await lab.client.get(f"/v3/projects/{uuid.uuid4()}", headers=lab.headers), 404, "project_not_found")


async def test_the_acl_api(lab: Lab):
    user_id, user = await lab.add_user("acl-user", access=None)
    role = await lab.role_id("User")
    entry = {"ace_type": "user", "path": f"/projects/{lab.project_id}", "user_id": user_id, "role_id": role}
    assert_error(await lab.client.post("/v3/access/acl", json=entry, headers=user), 403, "forbidden")
    assert_error(await lab.client.get("/v3/access/roles", headers=user), 403, "forbidden")
    bad = [
        ({**entry, "path": "/templates"}, 400, "bad_request"),
        ({**entry, "user_id": str(uuid.uuid4())}, 404, "user_not_found"),
        ({**entry, "role_id": str(uuid.uuid4())}, 404, "role_not_found"),
        ({**entry, "ace_type": "group"}, 422, "validation_error"),
        ({**entry, "allowed": "yes"}, 422, "validation_error"),
    ]
    for body, status, code in bad:
        assert_error(await lab.client.post("/v3/access/acl", json=body, headers=lab.headers), status, code)
    made = await lab.client.post("/v3/access/acl", json=entry, headers=lab.headers)
    assert made.status_code == 201, made.text
    ace = made.json()
    assert ace["propagate"] is True and ace["allowed"] is True and ace["group_id"] is None
    url = f"/v3/access/acl/{ace['ace_id']}"
    assert (await lab.client.get(url, headers=lab.headers)).json() == ace
    changed = await lab.client.put(url, json={**entry, "allowed": False}, headers=lab.headers)
    assert changed.status_code == 200 and changed.json()["allowed"] is False
    assert ace["ace_id"] in {a["ace_id"] for a in (await lab.client.get("/v3/access/acl", headers=lab.headers)).json()}
    names = {p["name"] for p in (await lab.client.get("/v3/access/privileges", headers=lab.headers)).json()}
    assert {"Project.Audit", "Project.Allocate", "Project.Modify"} <= names
    # A deleted project's entries go with it.
    assert (await lab.client.delete(f"/v3/projects/{lab.project_id}", headers=lab.headers)).status_code == 204
    assert_error(await lab.client.get(url, headers=lab.headers), 404, "ace_not_found")
    # And a deleted user's.
    other = await lab.grant(user_id, "/projects")
    assert (await lab.client.delete(f"/v3/access/users/{user_id}", headers=lab.headers)).status_code == 204
    assert_error(await lab.client.get(f"/v3/access/acl/{other}", headers=lab.headers), 404, "ace_not_found")
    assert_error(await lab.client.delete(f"/v3/access/acl/{other}", headers=lab.headers), 404, "ace_not_found")
