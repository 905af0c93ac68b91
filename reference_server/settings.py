"""Settings of the reference server: defaults < config file (YAML) < environment < command line."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import Field, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

import gns3_copilot_spec as spec

from .controller.security import DEFAULT_PASSWORD_HASH_PROFILE, PASSWORD_HASH_PROFILES
from .llm_url_allow import parse_allowed, url_allowed

ENV_PREFIX = "COPILOT_REF_"


def _default_playground_dir() -> Path:
    """A checkout's build (tools/build_playground.py); an installed package has none, and /playground says so."""
    return Path(__file__).resolve().parent.parent / "playground" / "dist"


def _default_data_dir() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share"
    return Path(base) / "gns3-copilot-reference-server"


class Settings(BaseSettings):
    """Every setting can come from `--config FILE`, from `COPILOT_REF_<NAME>` or from `--<name>`."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="forbid", validate_assignment=True)

    host: str = Field("127.0.0.1", description="Interface to listen on.")
    port: int = Field(3080, ge=0, le=65535, description="TCP port (0 picks a free one).")
    data_dir: Path = Field(
        default_factory=_default_data_dir,
        description="Controller database, secrets and project directories.",
    )
    chat_prefix: str = Field(spec.default_prefix(), description="Chat path prefix; must contain {project_id}.")
    # The heartbeat interval (HEARTBEAT-002) and whether the title generation counts in the statistics
    # (STATS-006) are the server's declarations; conformance/targets/reference.yaml states them to the suite.
    heartbeat_interval: float = Field(15.0, gt=0, le=3600, description="Seconds of silence before a heartbeat.")
    title_counts_in_stats: bool = Field(True, description="Count the title generation in the statistics.")
    admin_username: str = Field("admin", min_length=3, description="Seeded when the controller database is new.")
    admin_password: str = Field("admin", min_length=1, description="Seeded when the controller database is new.")
    token_ttl_seconds: int = Field(86400, gt=0, description="Lifetime of access tokens.")
    login_max_failures: int = Field(
        10, ge=1, description="Failed logins for one username within the window before its logins answer 429."
    )
    login_failure_window_seconds: float = Field(
        60.0, gt=0, le=86400, description="Seconds a failed login counts against its username."
    )
    fake_llm_scripts: list[Path] = Field(
        default_factory=list, description="Extra script folders for the in-process fake LLM."
    )
    playground_dir: Path = Field(
        default_factory=_default_playground_dir,
        description="The built playground page served at /playground (default: the checkout's playground/dist).",
    )
    log_level: str = Field("info", description="uvicorn log level.")
    database_url: str | None = Field(
        None,
        description="postgresql://... keeps every project's chat data in that PostgreSQL database, shared by the "
        "workers; without it, each project has its own SQLite file.",
    )
    workers: int = Field(
        1, ge=1, le=64, description="Server processes on the one port (more than 1 needs --database-url)."
    )
    cors_origin: list[str] = Field(
        default_factory=list,
        description="A browser origin (scheme://host[:port]) whose pages may call the API, for a chat UI served "
        "elsewhere (useChat, HttpAgent in development); repeatable; * allows any origin. None by default: no CORS.",
    )

    password_hash_profile: Literal[PASSWORD_HASH_PROFILES] = Field(
        DEFAULT_PASSWORD_HASH_PROFILE,
        description="The Argon2 parameters of new password hashes, one of argon2-cffi's profiles. CHEAPEST is for "
        "test suites, which make and log in thousands of users; never for a server people log into.",
    )
    llm_base_url_allow: list[str] = Field(
        default_factory=list,
        description="An LLM provider's URL (scheme://host[:port][/path]) an LLM configuration's base_url must be "
        "under: the same scheme, host and port, no user, and the path below this one, segment by segment; "
        "repeatable. None by default: users point their configurations at any server, as in GNS3 (the server then "
        "calls that URL for them: give the URLs of your LLM providers to forbid the rest).",
    )

    def allows_llm_base_url(self, base_url: str | None) -> bool:
        """Whether the server may call `base_url` for a user: any URL without an allow-list, else one under it."""
        allowed = self.llm_base_url_allow
        return not allowed or not base_url or url_allowed(base_url, [parse_allowed(entry) for entry in allowed])

    @field_validator("llm_base_url_allow")
    @classmethod
    def _allowed_urls(cls, values: list[str]) -> list[str]:
        for value in values:
            parse_allowed(value)  # a ValueError naming the entry: the server does not start
        return values

    @field_validator("cors_origin")
    @classmethod
    def _origins(cls, values: list[str]) -> list[str]:
        # An origin is what a browser sends in Origin: no path, no trailing slash (it would never match one).
        for value in values:
            if value != "*" and not re.fullmatch(r"https?://[^/\s]+", value):
                raise ValueError(f"{value!r} is not an origin: give scheme://host[:port] (no path), or *")
        return values

    @field_validator("chat_prefix")
    @classmethod
    def _prefix_has_project(cls, value: str) -> str:
        # The one chat path prefix holds the {project_id} path parameter (PREFIX-001).
        if "{project_id}" not in value or not value.startswith("/") or value.endswith("/"):
            raise ValueError("must start with '/', contain '{project_id}' and not end with '/'")
        return value

    @field_validator("database_url")
    @classmethod
    def _postgresql_url(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("postgresql://", "postgres://")):
            raise ValueError("must be a postgresql:// URL")
        return value

    @model_validator(mode="after")
    def _workers_share_a_database(self) -> Settings:
        # The busy lock and the stop requests of several processes live in PostgreSQL (agent/stores/postgres*.py).
        if self.workers > 1 and self.database_url is None:
            raise ValueError("--workers above 1 needs --database-url postgresql://...: SQLite files are one process's")
        return self

    @property
    def projects_dir(self) -> Path:
        return self.data_dir / "projects"


def load_settings(config_file: Path | None = None, **overrides: Any) -> Settings:
    """Build settings; `overrides` (from the command line) win over the environment, which wins over the file."""
    file_values: dict[str, Any] = {}
    if config_file is not None:
        loaded = yaml.safe_load(config_file.read_text(encoding="utf-8")) or {}
        if not isinstance(loaded, dict):
            raise ValueError(f"{config_file}: expected a mapping of setting names to values")
        file_values = {key.replace("-", "_"): value for key, value in loaded.items()}
    env_names = {name for name in Settings.model_fields if f"{ENV_PREFIX}{name}".upper() in os.environ}
    merged = {k: v for k, v in file_values.items() if k not in env_names}
    merged.update({k: v for k, v in overrides.items() if v is not None})
    return Settings(**merged)
