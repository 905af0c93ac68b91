"""The run's ledger: what the suite made on the target (users, their LLM configurations, projects, access control
entries, chat sessions and who streamed them), written as things are made and read by the clean-up (cleanup.py)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Ledger:
    projects: dict[str, str] = field(default_factory=dict)  # project id -> name
    users: dict[str, str] = field(default_factory=dict)  # user id -> username
    llm_configs: list[tuple[str, str]] = field(default_factory=list)  # (user id, config id)
    # (project id, session id) -> the user roles that streamed a turn of it (one of them owns it)
    sessions: dict[tuple[str, str], set[str]] = field(default_factory=dict)
    unidentified_llm_configs: list[str] = field(default_factory=list)  # user ids whose configuration had no id
    aces: dict[str, str] = field(default_factory=dict)  # access control entry id -> what it grants

    def session(self, role: str, project_id: str, session_id: str) -> None:
        self.sessions.setdefault((project_id, session_id), set()).add(role)
