"""Shared test set-up: tests run from the repository root, offline, against spec/ as it is on disk."""

from pathlib import Path

import pytest

from tests.postgres import postgres_server, postgres_url  # noqa: F401 - PostgreSQL fixtures for every test

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return ROOT
