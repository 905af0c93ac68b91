"""Project access control, shaped like gns3-server 3.x's role-based access control (ACCESS-001..005).

The part a chat client meets: privileges, built-in roles that hold them, and access control entries (ACEs) that
give a user a role on a resource path (`/`, `/projects`, `/projects/{project_id}`). A privilege on a path is
decided as gns3-server decides it (gns3server/db/repositories/rbac.py): the user's entries are compared from the
most specific path up to `/`; at the first level with an entry that counts, a denying entry refuses, and an
allowing one whose role holds the privilege grants when it is on the path itself or propagates. A denying entry
is one with `allowed: false` or of the built-in role `No Access`, and it refuses every privilege, whatever its
role holds: gns3-server looks up only the entries whose role holds the privilege asked, so that there a deny of
`Auditor` leaves `Project.Allocate` (close, delete) to a parent grant and `No Access`, holding nothing, forbids
nothing (ACCESS-003, ACCESS-004; issue 34). Superadmins hold every privilege. The creator of a project gets the
`User` role on it when it is created, so a project belongs to its creator and an administrator can still take that
away. Groups and resource pools are not modelled.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import asdict, dataclass
from typing import Any

from reference_server.timestamps import utc_now

from .roles import CREATOR_ROLE, NO_ACCESS_ROLE, builtin_id
from .store import ControllerStore, User

UUID_PATTERN = "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
# The resource paths this server controls access to (gns3-server accepts the path of any of its endpoints).
NO_ACCESS_ID = builtin_id(NO_ACCESS_ROLE)  # its entries deny, allowing or not (ACCESS-003)
# Matched whole (re.fullmatch: `$` would let a trailing newline through, an entry that never matches anything).
RESOURCE_PATH = re.compile(rf"/|/projects|/projects/{UUID_PATTERN}")


def canonical_path(path: str) -> str | None:
    """The resource path an entry is kept under, or None when it names none: a project id in its canonical form,
    lower case, as projects are named (an entry written with another case would never match; issue 34, ACCESS-006)."""
    if not RESOURCE_PATH.fullmatch(path):
        return None
    return path.lower()


PROJECTS_PATH = "/projects"  # where Project.Allocate lets a user create projects (ACCESS-005)


def project_path(project_id: str) -> str:
    return f"/projects/{project_id}"


@dataclass(frozen=True)
class Ace:
    ace_id: str
    ace_type: str
    path: str
    propagate: bool
    allowed: bool
    user_id: str
    group_id: None
    role_id: str
    created_at: str
    updated_at: str

    def public(self) -> dict[str, Any]:
        return asdict(self)


def _ace(row: Any) -> Ace:
    data = dict(row)
    return Ace(
        ace_id=data["ace_id"],
        ace_type=data["ace_type"],
        path=data["path"],
        propagate=bool(data["propagate"]),
        allowed=bool(data["allowed"]),
        user_id=data["user_id"],
        group_id=None,
        role_id=data["role_id"],
        created_at=data["created_at"],
        updated_at=data["updated_at"],
    )


def decide(path: str, entries: list[tuple[str, bool, bool, bool]]) -> bool:
    """gns3-server's rule over the user's (path, propagate, allowed, holds) entries, `holds` saying whether the
    entry's role holds the privilege asked and `allowed` false for a denying entry. A deny refuses every privilege
    (ACCESS-003, ACCESS-004), on its path and, as in gns3-server, below it whether it propagates or not; on one path
    it wins over a grant (gns3-server: whichever row comes first); a grant reaches below only when it propagates."""
    components = path.rstrip("/").split("/")
    for end in range(len(components), 0, -1):
        level = "/".join(components[:end]) or "/"
        here = [(propagate, allowed, holds) for ace_path, propagate, allowed, holds in entries if ace_path == level]
        if any(not allowed for _, allowed, _ in here):
            return False
        if any(holds and (level == path or propagate) for propagate, _, holds in here):
            return True
    return False


class AccessControl:
    """Privileges, roles and ACEs, kept in the controller database next to the users."""

    def __init__(self, store: ControllerStore) -> None:
        self.store = store

    async def has_privilege(self, user: User, path: str, privilege: str) -> bool:
        if user.is_superadmin:
            return True
        # Every entry of the user, not only those whose role holds the privilege: a deny refuses whatever its role
        # holds, and the role No Access, holding nothing, denies (ACCESS-003, ACCESS-004).
        rows = await self.store._rows(
            "SELECT acl.path, acl.propagate, acl.allowed, acl.role_id, EXISTS (SELECT 1 FROM role_privileges rp "
            "JOIN privileges p ON p.privilege_id = rp.privilege_id WHERE rp.role_id = acl.role_id AND p.name = ?) "
            "FROM acl WHERE acl.user_id = ?",
            (privilege, user.user_id),
        )
        return decide(
            path,
            [(row[0], bool(row[1]), bool(row[2]) and row[3] != NO_ACCESS_ID, bool(row[4])) for row in rows],
        )

    # --- privileges and roles ---------------------------------------------------------------------------

    async def privileges(self) -> list[dict[str, Any]]:
        return [dict(row) for row in await self.store._rows("SELECT * FROM privileges ORDER BY name")]

    async def roles(self) -> list[dict[str, Any]]:
        roles = [dict(row) for row in await self.store._rows("SELECT * FROM roles ORDER BY name")]
        for role in roles:
            role["is_builtin"] = bool(role["is_builtin"])
            role["privileges"] = [
                dict(row)
                for row in await self.store._rows(
                    "SELECT p.* FROM privileges p JOIN role_privileges rp ON rp.privilege_id = p.privilege_id "
                    "WHERE rp.role_id = ? ORDER BY p.name",
                    (role["role_id"],),
                )
            ]
        return roles

    async def role(self, role_id: str) -> dict[str, Any] | None:
        return next((role for role in await self.roles() if role["role_id"] == role_id), None)

    # --- access control entries ---------------------------------------------------------------------------

    async def aces(self) -> list[Ace]:
        return [_ace(row) for row in await self.store._rows("SELECT * FROM acl ORDER BY created_at, ace_id")]

    async def ace(self, ace_id: str) -> Ace | None:
        rows = await self.store._rows("SELECT * FROM acl WHERE ace_id = ?", (ace_id,))
        return _ace(rows[0]) if rows else None

    async def add_ace(self, *, path: str, user_id: str, role_id: str, propagate: bool, allowed: bool) -> Ace:
        now = utc_now()
        ace_id = str(uuid.uuid4())
        await self.store.db.execute(
            "INSERT INTO acl VALUES (?, 'user', ?, ?, ?, ?, ?, ?, ?)",
            (ace_id, path, propagate, allowed, user_id, role_id, now, now),
        )
        await self.store.db.commit()
        return await self.ace(ace_id)

    async def update_ace(
        self, ace_id: str, *, path: str, user_id: str, role_id: str, propagate: bool, allowed: bool
    ) -> Ace | None:
        await self.store.db.execute(
            "UPDATE acl SET path = ?, user_id = ?, role_id = ?, propagate = ?, allowed = ?, updated_at = ? "
            "WHERE ace_id = ?",
            (path, user_id, role_id, propagate, allowed, utc_now(), ace_id),
        )
        await self.store.db.commit()
        return await self.ace(ace_id)

    async def remove_ace(self, ace_id: str) -> bool:
        cursor = await self.store.db.execute("DELETE FROM acl WHERE ace_id = ?", (ace_id,))
        await self.store.db.commit()
        return cursor.rowcount > 0

    async def grant_creator(self, project_id: str, user: User) -> None:
        if not user.is_superadmin:  # a superadmin has access already; an entry would only clutter the ACL
            await self.add_ace(
                path=project_path(project_id),
                user_id=user.user_id,
                role_id=builtin_id(CREATOR_ROLE),
                propagate=True,
                allowed=True,
            )

    async def forget_project(self, project_id: str) -> None:
        """A deleted project's entries go with it, as in gns3-server."""
        path = project_path(project_id)
        await self.store.db.execute("DELETE FROM acl WHERE path = ? OR path LIKE ?", (path, path + "/%"))
        await self.store.db.commit()
