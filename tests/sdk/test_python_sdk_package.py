"""The Python SDK as its users install it: the wheel that sdk/python/README.md builds, installed into a new virtual
environment with its dependencies (at the versions of the project's lock), runs the README's quick start from a
folder outside the repository against a live reference server, and is typed (py.typed) for mypy."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.readme import readme_example
from tests.reference_server.conftest import ServerProcess, start_server_process

pytestmark = pytest.mark.slow  # builds and installs a wheel: left out of `python3 tasks.py test --quick`

ROOT = Path(__file__).resolve().parents[2]
SDK = ROOT / "sdk" / "python"
SDK_README = SDK / "README.md"
WHEEL = "gns3_copilot_chat_client-1.3.0-py3-none-any.whl"
QUICKSTART_URL = '"http://127.0.0.1:3080"'  # the base URL the README's quick start names


def command(arguments: list[str], cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess:
    """A command outside the project's environment; pip without its version check and without byte-compiling every
    installed file (what the run imports is compiled when imported)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_COMPILE="0")
    return subprocess.run(arguments, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The README's `python3 -m pip wheel --no-deps -w dist sdk/python`, from a copy of the SDK's folder (a build
    leaves build/ and egg-info behind)."""
    readme = SDK_README.read_text(encoding="utf-8")
    assert "python3 -m pip wheel --no-deps -w dist sdk/python" in readme and f"pip install dist/{WHEEL}" in readme
    checkout = tmp_path_factory.mktemp("checkout")
    shutil.copytree(SDK, checkout / "sdk" / "python", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    built = command([sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", "dist", "sdk/python"], cwd=checkout)
    assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-2000:]
    path = checkout / "dist" / WHEEL  # the name the README installs
    assert path.exists(), sorted(p.name for p in (checkout / "dist").iterdir())
    return path


@pytest.fixture(scope="module")
def environment(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A new virtual environment with the wheel and its dependencies, pinned by the project's lock: its bin/."""
    venv = tmp_path_factory.mktemp("sdk-user") / "env"
    made = command([sys.executable, "-m", "venv", str(venv)], cwd=venv.parent)
    assert made.returncode == 0, made.stderr
    lock = ROOT / "requirements" / "lock.txt"
    installed = command([str(venv / "bin" / "pip"), "install", str(wheel), "-c", str(lock)], cwd=venv.parent)
    assert installed.returncode == 0, installed.stdout[-2000:] + installed.stderr[-2000:]
    return venv / "bin"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    started = start_server_process(tmp_path_factory.mktemp("python-sdk-package-server"))
    yield started
    started.stop()


def test_the_wheel_holds_the_package_its_types_marker_and_readme(wheel: Path):
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        metadata = archive.read("gns3_copilot_chat_client-1.3.0.dist-info/METADATA").decode()
    assert {"gns3_copilot_chat_client/__init__.py", "gns3_copilot_chat_client/py.typed"} <= names
    assert not [name for name in names if name.startswith(("tests/", "examples/"))]
    assert "## Quick start" in metadata  # the README is the package's description
    requires = sorted(re.findall(r"^Requires-Dist: ([\w-]+)", metadata, flags=re.M))
    assert requires == ["httpx", "httpx-sse", "pydantic"]


def test_installed_outside_the_repository_the_readme_quick_start_runs(environment, server, tmp_path):
    code = readme_example("python quickstart", SDK_README)
    assert QUICKSTART_URL in code
    script = tmp_path / "quickstart.py"
    script.write_text(code.replace(QUICKSTART_URL, repr(server.base_url)))
    ran = command([str(environment / "python"), str(script)], cwd=tmp_path, timeout=120)
    assert ran.returncode == 0, ran.stderr[-3000:]
    expected = [line.split("  # ", 1)[1] for line in code.splitlines() if line.lstrip().startswith("print(")]
    assert ran.stdout.splitlines() == expected
    imported = "import gns3_copilot_chat_client as c; print(c.__file__)"
    where = command([str(environment / "python"), "-c", imported], tmp_path)
    assert str(environment.parent) in where.stdout and str(ROOT) not in where.stdout  # the installed copy ran
