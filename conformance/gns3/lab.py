"""A GNS3 lab folder: configuration, data directories and a minimal local skills repository (our own text).

Layout and settings follow ../shared/notes/gns3-runbook.md (sections 2 to 5): the controller database and the
skills clone go beside the config file; projects under data/projects/<project_id>/.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

TITLE_PROMPT = (
    "Write a short title of at most six words for the conversation below. Reply with the title only, with no "
    "quotes, no trailing punctuation and no explanation.\n"
)
TEACHING_PROMPT = (
    "You are a teaching assistant in a GNS3 network lab used by a conformance test. Answer briefly and prefer "
    "read-only checks. {{topology_info}}\n"
)


def make_skills_repo(folder: Path) -> None:
    """One commit on `main` with the two prompts the copilot reads (the title prompt is required)."""
    prompts = folder / "prompts"
    prompts.mkdir(parents=True, exist_ok=True)
    (prompts / "title.md").write_text(TITLE_PROMPT, encoding="utf-8")
    (prompts / "teaching_assistant.md").write_text(TEACHING_PROMPT, encoding="utf-8")
    git = ["git", "-C", str(folder), "-c", "user.name=conformance", "-c", "user.email=conformance@localhost"]
    subprocess.run([*git, "init", "-q", "-b", "main"], check=True)
    subprocess.run([*git, "add", "prompts"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "minimal copilot skills for the conformance suite"], check=True)


def write_lab(lab: Path, port: int) -> Path:
    """Create the lab folders and `conf/gns3_server.conf`; returns the config file's path."""
    lab = lab.resolve()
    data = lab / "data"
    for name in ("images", "projects", "appliances", "symbols", "configs", "secrets"):
        (data / name).mkdir(parents=True, exist_ok=True)
    (lab / "home").mkdir(parents=True, exist_ok=True)
    (lab / "conf").mkdir(parents=True, exist_ok=True)
    if not (lab / "skills-src" / ".git").exists():
        make_skills_repo(lab / "skills-src")
    config = lab / "conf" / "gns3_server.conf"
    config.write_text(
        "[Controller]\n"
        "jwt_secret_key = 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\n"
        "default_admin_username = admin\n"
        "default_admin_password = admin\n\n"
        "[Server]\n"
        "host = 127.0.0.1\n"
        f"port = {port}\n"
        f"secrets_dir = {data / 'secrets'}\n"
        f"images_path = {data / 'images'}\n"
        f"projects_path = {data / 'projects'}\n"
        f"appliances_path = {data / 'appliances'}\n"
        f"symbols_path = {data / 'symbols'}\n"
        f"configs_path = {data / 'configs'}\n"
        "report_errors = False\n"
        "auto_discover_images = False\n"
        "install_builtin_appliances = False\n"
        f"skills_repo_url = {lab / 'skills-src'}\n"
        "skills_repo_branch = main\n"
        "skills_auto_update = False\n\n"
        "[WebWireshark]\n"
        "enabled = False\n",
        encoding="utf-8",
    )
    return config
