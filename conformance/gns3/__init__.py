"""Running the conformance suite against the real gns3-server, one 3.1 pre-release at a time.

`python3 tasks.py gns3 [--version V]` (this package's `run` module) installs the pinned server into a cached
virtual environment, enters a network namespace with loopback only, and runs the suite with the target file
`conformance/targets/gns3-<V>.yaml`, whose start command is `python -m conformance.gns3.serve`: it writes the
server's configuration and a minimal skills repository of our own text, then becomes the server.
`python3 tasks.py gns3 --matrix` runs every supported release and writes docs/gns3-versions.md (`matrix`).
"""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

# Every gns3-server 3.1 pre-release on PyPI (`pip index versions gns3-server --pre`), oldest first, with the pip
# extra that brings the copilot's AI stack (the wheels' `Provides-Extra`): `ai-copilot` up to 3.1.0a3,
# `ai-features` from 3.1.0a4. Without it the server installs, but every copilot path answers 501.
EXTRAS: dict[str, str] = {
    "3.1.0a1": "ai-copilot",
    "3.1.0a2": "ai-copilot",
    "3.1.0a3": "ai-copilot",
    "3.1.0a4": "ai-features",
    "3.1.0a5": "ai-features",
    "3.1.0a6": "ai-features",
    "3.1.0a7": "ai-features",
}
VERSIONS: tuple[str, ...] = tuple(EXTRAS)
VERSION = VERSIONS[-1]
"""The default: the newest supported release."""


def check_version(version: str) -> str:
    if version not in EXTRAS:
        raise ValueError(f"gns3-server {version} is not supported; supported releases: {', '.join(VERSIONS)}")
    return version


def requirements_file(version: str) -> Path:
    """The committed pin list of one release (`pins.resolve_pins` writes it)."""
    return Path(__file__).with_name(f"requirements-{version}.txt")


def venv_dir(version: str) -> Path:
    return REPO / ".cache" / f"gns3-{version}" / "venv"


def target_name(version: str) -> str:
    """Built-in target file conformance/targets/gns3-<V>.yaml; also the report folder and findings doc name."""
    return f"gns3-{version}"
