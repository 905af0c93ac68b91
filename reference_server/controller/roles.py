"""The privileges and built-in roles of project access control, as gns3-server 3.x names them, and the tables
that hold them with the access control entries (ACCESS-001..005; the rule that decides is access.py's)."""

from __future__ import annotations

import uuid

PROJECT_PRIVILEGES = {
    "Project.Allocate": "Create, open, close or delete a project",
    "Project.Audit": "View a project and use its chat",
    "Project.Modify": "Update a project",
}
# The built-in roles of gns3-server that concern projects, with the project privileges each holds there.
BUILTIN_ROLES = {
    "Administrator": ("Administrator role", list(PROJECT_PRIVILEGES)),
    "User": ("User role", ["Project.Allocate", "Project.Audit", "Project.Modify"]),
    "Auditor": ("Role with read only access", ["Project.Audit"]),
    "No Access": ("Role with no privileges (used to forbid access)", []),
}
CREATOR_ROLE = "User"
NO_ACCESS_ROLE = "No Access"  # an entry of it denies every privilege, whether it allows or not (access.py)
ALLOCATE_PRIVILEGE = "Project.Allocate"  # on /projects: create a project (ACCESS-005); on one: open, close, delete
CHAT_PRIVILEGE = "Project.Audit"  # seeing a project is enough to chat about it: the sessions are the user's own

# Fixed ids (uuid5 of the name), so that every data directory names the built-in roles alike.
_NAMESPACE = uuid.UUID("6f0c3d2e-5b1a-4c1e-9a57-0d5e2f7b8c11")


def builtin_id(name: str) -> str:
    return str(uuid.uuid5(_NAMESPACE, name))


_seed_privileges = "\n".join(
    f"INSERT OR IGNORE INTO privileges VALUES ('{builtin_id(n)}', '{n}', '{d}');" for n, d in PROJECT_PRIVILEGES.items()
)
_seed_roles = "\n".join(
    f"INSERT OR IGNORE INTO roles VALUES ('{builtin_id(n)}', '{n}', '{d}', TRUE);"
    for n, (d, _) in BUILTIN_ROLES.items()
)
_seed_grants = "\n".join(
    f"INSERT OR IGNORE INTO role_privileges VALUES ('{builtin_id(r)}', '{builtin_id(p)}');"
    for r, (_, privileges) in BUILTIN_ROLES.items()
    for p in privileges
)

ACCESS_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS privileges (
    privilege_id TEXT PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    description TEXT
);
CREATE TABLE IF NOT EXISTS roles (
    role_id TEXT PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    description TEXT,
    is_builtin BOOLEAN NOT NULL DEFAULT FALSE
);
CREATE TABLE IF NOT EXISTS role_privileges (
    role_id TEXT NOT NULL REFERENCES roles(role_id) ON DELETE CASCADE,
    privilege_id TEXT NOT NULL REFERENCES privileges(privilege_id) ON DELETE CASCADE,
    PRIMARY KEY (role_id, privilege_id)
);
CREATE TABLE IF NOT EXISTS acl (
    ace_id TEXT PRIMARY KEY,
    ace_type TEXT NOT NULL CHECK (ace_type = 'user'),
    path TEXT NOT NULL,
    propagate BOOLEAN NOT NULL DEFAULT TRUE,
    allowed BOOLEAN NOT NULL DEFAULT TRUE,
    user_id TEXT NOT NULL REFERENCES users(user_id) ON DELETE CASCADE,
    role_id TEXT NOT NULL REFERENCES roles(role_id) ON DELETE CASCADE,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_acl_user ON acl(user_id);
{_seed_privileges}
{_seed_roles}
{_seed_grants}
"""
