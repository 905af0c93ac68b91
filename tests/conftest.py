"""Shared test set-up: tests run from the repository root, offline, against spec/ as it is on disk."""

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return ROOT
