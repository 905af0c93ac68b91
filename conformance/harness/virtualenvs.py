"""A virtual environment with a pinned requirements file installed, for the third-party servers the suite starts (a
gns3-server release, a peer). With uv beside this Python (the project's .venv has it, from the lock), uv installs
them, bytecode included: a few seconds where pip took some 40 s of CPU each. Where PYTHONDONTWRITEBYTECODE is set,
Python never writes bytecode itself, so without it every start of the server would compile all it imports.
Elsewhere (the suite installed from its wheel), pip does, without byte-compiling every module (40 % of its CPU;
Python compiles what the server imports, at its first start, where it may write it)."""

from __future__ import annotations

import subprocess
import sys
import venv
from pathlib import Path


def uv_beside_python() -> Path | None:
    found = Path(sys.executable).with_name("uv")
    return found if found.exists() else None


def installer() -> str:
    """The name of what create_with installs with, for messages."""
    return "uv" if uv_beside_python() else "pip"


def create_with(env_dir: Path, requirements: Path, **run_options) -> subprocess.CompletedProcess:
    """Create `env_dir` and install `requirements` into it; `run_options` go to subprocess.run."""
    uv = uv_beside_python()
    venv.EnvBuilder(with_pip=uv is None).create(env_dir)  # uv installs without pip in the environment
    python = env_dir / "bin" / "python"
    if uv is not None:
        command = [str(uv), "pip", "install", "--quiet", "--compile-bytecode", "--python", str(python)]
        command += ["-r", str(requirements)]
    else:
        pip = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-compile"]
        command = [*pip, "-r", str(requirements)]
    return subprocess.run(command, **run_options)
