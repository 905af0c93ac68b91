"""The project as people install it: a wheel built from the working tree, installed into a new virtual environment
with its runtime dependencies only, used from a directory outside the repository. The console scripts, the pytest
plugin and `python -m fake_llm` / `python -m reference_server` work there; the contract and the generated models
are importable only by their distinctive names (nothing called `spec` or `generated` at the top level)."""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest
from packaging.requirements import Requirement

import gns3_copilot_spec as spec
from tests.readme import readme_line

pytestmark = pytest.mark.slow  # builds and installs the wheel: left out of `python3 tasks.py test --quick`

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
# Repository folder -> the name it is installed and imported under (pyproject.toml, [tool.setuptools]).
INSTALLED_AS = {
    "spec": "gns3_copilot_spec",
    "generated": "gns3_copilot_generated",
    "conformance": "conformance",
    "reference_server": "reference_server",
    "fake_llm": "fake_llm",
}


def runtime_dependencies() -> dict[str, Requirement]:
    requirements = [Requirement(line) for line in PYPROJECT["project"]["dependencies"]]
    return {r.name.lower().replace("_", "-"): r for r in requirements}


def third_party_imports() -> dict[str, set[str]]:
    """Top-level module -> the files of the installed packages that import it (standard library and project
    modules left out)."""
    own = set(INSTALLED_AS) | set(INSTALLED_AS.values())
    found: dict[str, set[str]] = {}
    for folder in INSTALLED_AS:
        for path in (ROOT / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                    names = [node.module]
                else:
                    continue
                for name in names:
                    top = name.split(".")[0]
                    if top not in sys.stdlib_module_names and top not in own:
                        found.setdefault(top, set()).add(str(path.relative_to(ROOT)))
    return found


def test_every_runtime_import_is_a_declared_runtime_dependency():
    declared = runtime_dependencies()
    distributions = packages_distributions()
    missing = []
    for module, files in sorted(third_party_imports().items()):
        names = {d.lower().replace("_", "-") for d in distributions.get(module, [])}
        if not names & set(declared):
            missing.append(f"{module} (from {', '.join(sorted(names)) or '?'}), imported by {sorted(files)[:3]}")
    assert missing == [], "add these to [project.dependencies] (not only to dev): " + "; ".join(missing)


def test_pytest_is_capped_in_the_runtime_dependencies():
    """pytest 9.2.0 breaks schemathesis 4.32.5, which the suite runs: an install must never get it."""
    pytest_requirement = runtime_dependencies()["pytest"]
    assert not pytest_requirement.specifier.contains("9.2.0") and pytest_requirement.specifier.contains("9.1.1")


# --- the built wheel, installed -----------------------------------------------------------------------------------


def repository_files() -> list[str]:
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", *INSTALLED_AS, "pyproject.toml", "README.md"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return [name for name in listed if (ROOT / name).is_file()]


@pytest.fixture(scope="module")
def clone(tmp_path_factory) -> Path:
    """A copy of the working tree's files, as a clone has them (no stale build/ folder can add to the wheel)."""
    source = tmp_path_factory.mktemp("clone")
    for name in repository_files() + ["requirements/lock.txt"]:
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, source / name)
    return source


def readme_step(line: str, *, cwd: Path, home: Path, timeout: float = 900) -> subprocess.CompletedProcess:
    """One README line (tests.readme.readme_line) in bash, with HOME a temporary folder (its `~`), pip's and npm's
    download caches where they were, and no byte-compiling of every installed package (PIP_COMPILE=0: 40% of an
    install's CPU; Python compiles what the runs import, once, and keeps it: PYTHONDONTWRITEBYTECODE is not passed
    on)."""
    own = (
        "PYTHONPATH",
        "PYTHONDONTWRITEBYTECODE",  # a user's Python writes the bytecode of what it imports, once (see `outside`)
        "VIRTUAL_ENV",
        "XDG_CACHE_HOME",
        "COPILOT_CONFORMANCE_CACHE",
        "COPILOT_CONFORMANCE_NODE_MODULES",
    )
    env = {k: v for k, v in os.environ.items() if k not in own}  # HOME alone says where the user's caches are
    cache = subprocess.run([sys.executable, "-m", "pip", "cache", "dir"], capture_output=True, text=True).stdout
    env.update(
        HOME=str(home),
        PIP_CACHE_DIR=cache.strip() or str(home / ".pip-cache"),
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        PIP_COMPILE="0",
        npm_config_cache=str(Path.home() / ".npm"),  # npm's downloads where they were, as pip's
    )
    if (Path.home() / ".pyenv").is_dir():  # a pyenv `python3` looks for its versions under the real HOME
        env.setdefault("PYENV_ROOT", str(Path.home() / ".pyenv"))
    return subprocess.run(["bash", "-c", line], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def home(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("home")


@pytest.fixture(scope="module")
def wheel(clone, home) -> Path:
    built = readme_step(readme_line("python3 -m pip wheel --no-deps -w dist ."), cwd=clone, home=home)
    assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-2000:]
    [path] = (clone / "dist").glob("*.whl")
    assert path.name == "gns3_copilot_chat_conformance-0.1.0-py3-none-any.whl"  # the name the README installs
    return path


@pytest.fixture(scope="module")
def installed(wheel, clone, home) -> Path:
    """A new environment with the wheel and its runtime dependencies (at the versions of the lock file)."""
    for line in (
        readme_line("python3 -m venv ~/copilot-env"),
        readme_line(
            "~/copilot-env/bin/pip install dist/gns3_copilot_chat_conformance-0.1.0-py3-none-any.whl "
            "-c requirements/lock.txt"
        ),
    ):
        done = readme_step(line, cwd=clone, home=home)
        assert done.returncode == 0, f"{line}: {done.stdout[-2000:]}{done.stderr[-2000:]}"
    return home / "copilot-env" / "bin"


def outside(bin_dir: Path, *command: str, cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess:
    # As a user's: Python writes the bytecode of what it imports (pip compiled nothing, PIP_COMPILE=0), so each of
    # the many processes a run starts does not compile LangChain, the OpenAI client and FastAPI from source again.
    drop = ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONDONTWRITEBYTECODE")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env["PATH"] = f"{bin_dir}{os.pathsep}{env['PATH']}"
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def test_the_wheel_holds_every_file_under_its_installed_name(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    tops = {name.split("/")[0] for name in names if not name.split("/")[0].endswith(".dist-info")}
    assert tops == set(INSTALLED_AS.values())
    expected = set()
    for name in repository_files():
        folder, _, rest = name.partition("/")
        if folder in INSTALLED_AS and rest:
            expected.add(f"{INSTALLED_AS[folder]}/{rest}")
    assert sorted(expected - names) == []


def test_installed_outside_the_repository_everything_imports_and_runs(installed, tmp_path):
    python = str(installed / "python")
    for name in ("spec", "generated"):
        refused = outside(installed, python, "-c", f"import {name}", cwd=tmp_path)
        assert refused.returncode == 1 and f"No module named '{name}'" in refused.stderr
    walk = (
        "import importlib, pkgutil\n"
        "names = []\n"
        f"for top in {sorted(INSTALLED_AS.values())!r}:\n"
        "    package = importlib.import_module(top)\n"
        "    names.append(top)\n"
        "    for info in pkgutil.walk_packages(package.__path__, top + '.'):\n"
        "        if not info.name.endswith('.__main__'):  # runs the command line when imported\n"
        "            importlib.import_module(info.name)\n"
        "        names.append(info.name)\n"
        "print(len(names))\n"
    )
    imported = outside(installed, python, "-c", walk, cwd=tmp_path)
    assert imported.returncode == 0, imported.stderr[-3000:]
    assert int(imported.stdout) > 80  # every module of the five packages, with runtime dependencies only
    for command in (
        [python, "-m", "fake_llm", "serve", "--help"],
        [python, "-m", "reference_server", "--help"],
        ["copilot-conformance", "--help"],
        ["fake-llm", "--help"],
        ["copilot-reference-server", "--help"],
    ):
        completed = outside(installed, *command, cwd=tmp_path, timeout=120)
        assert completed.returncode == 0, f"{command}: {completed.stderr[-2000:]}"


def test_installed_the_suite_needs_its_clients_installed_then_passes_the_built_in_reference_server(
    installed, clone, home
):
    """From the wheel, outside the clone, with HOME a new folder: without the real clients the run stops before
    anything starts (exit 2, naming the command); `clients install` puts them in the user's cache (npm ci of the
    lock the wheel carries); then the whole suite passes, every requirement judged."""
    run = readme_line("cd ~ && ~/copilot-env/bin/copilot-conformance run")
    missing = readme_step(run, cwd=clone, home=home)
    assert missing.returncode == 2, missing.stdout[-3000:] + missing.stderr[-3000:]
    assert "run `copilot-conformance clients install` once" in " ".join(missing.stderr.split())
    assert "Traceback" not in missing.stderr and not (home / "reports").exists()

    install = readme_step(
        readme_line("cd ~ && ~/copilot-env/bin/copilot-conformance clients install"), cwd=clone, home=home
    )
    assert install.returncode == 0, install.stdout[-3000:] + install.stderr[-3000:]
    [place] = (home / ".cache" / "copilot-conformance").glob("clients-*")
    assert f"in {place / 'node_modules'}" in install.stdout
    completed = readme_step(run, cwd=clone, home=home)
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-3000:]
    assert "RESULT: PASSED" in completed.stdout and "nothing left behind" in completed.stdout
    data = json.loads((home / "reports" / "conformance.json").read_text())
    judged = {r["id"] for r in data["requirements"] if r["findings"]}
    expected = {r["id"] for r in spec.load_requirements()["requirements"] if "excluded" not in r}
    assert data["passed"] and sorted(expected - judged) == []


def test_the_clients_lock_the_wheel_carries_pins_the_repository_lock_s_versions():
    """js/clients/package-lock.json is the repository's lock cut down to the clients: the same version of every
    package it holds (the versions the tests ran the clients at)."""
    clients = json.loads((ROOT / "conformance/channels/js/clients/package-lock.json").read_text())["packages"]
    repository = json.loads((ROOT / "package-lock.json").read_text())["packages"]
    declared = json.loads((ROOT / "conformance/channels/js/clients/package.json").read_text())["dependencies"]
    assert {"ai", "@ag-ui/client"} <= set(declared)
    assert {name: repository[f"node_modules/{name}"]["version"] for name in declared} == declared
    differing = {
        k: (v["version"], repository.get(k, {}).get("version"))
        for k, v in clients.items()
        if k and v["version"] != repository.get(k, {}).get("version")
    }
    assert differing == {}


def test_installed_the_pytest_plugin_runs_the_checks_of_the_selected_requirements(installed, tmp_path):
    completed = outside(
        installed,
        str(installed / "python"),
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        "--pyargs",
        "conformance",
        "--copilot-target",
        "reference",
        "-k",
        "TITLE-004",
        "--copilot-report-dir",
        "reports",
        cwd=tmp_path,
    )
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-3000:]
    others = len(spec.load_requirements()["requirements"]) - 1  # one test per requirement: all but TITLE-004
    assert f"1 passed, {others} deselected" in completed.stdout
    data = json.loads((tmp_path / "reports" / "conformance.json").read_text())
    assert [c["id"] for c in data["checks"]] == ["titles.once"]
