#!/usr/bin/env python3
"""The project's task runner: the two commands of the README, and the maintenance tasks behind them.

    python3 tasks.py conformance   main job: the conformance suite against the built-in reference server
    python3 tasks.py test          the project's tests (what .ci/run runs)
    python3 tasks.py generate      regenerate generated/ from spec/
    python3 tasks.py sdk           regenerate generated/ and the TypeScript and Python SDKs (sdk/) from spec/
    python3 tasks.py gns3          the suite against the real gns3-server (3.1.0a7; --version V, --matrix: README)
    python3 tasks.py peers         install the peers (third-party servers of our agent, peers/), then the suite
                                   against each (--install-only: install only)
    python3 tasks.py bench         benchmarks of the reference server (prints ratios; see bench/README.md)
    python3 tasks.py lock          re-resolve requirements/lock.txt from the ranges in pyproject.toml

Only the standard library is used here, because this file is what creates the environment: it makes
`.venv/` at the repository root and installs the pinned dependencies of requirements/lock.txt into it,
again only when the lock file or pyproject.toml changed since the last install.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
LOCK = ROOT / "requirements" / "lock.txt"
STAMP = VENV / ".installed-from"
PYTHON = VENV / ("Scripts/python.exe" if os.name == "nt" else "bin/python")

# pytest exit codes: 5 means "no tests were collected", which must never pass silently.
PYTEST_NO_TESTS = 5


def _run(*args: str | Path, check: bool = True, env: dict[str, str] | None = None) -> int:
    print("+", " ".join(str(a) for a in args), flush=True)
    result = subprocess.run([str(a) for a in args], cwd=ROOT, env=env)
    if check and result.returncode != 0:
        sys.exit(result.returncode)
    return result.returncode


def _install_fingerprint() -> str:
    digest = hashlib.sha256()
    for path in (LOCK, ROOT / "pyproject.toml"):
        digest.update(path.read_bytes())
    digest.update(sys.version.encode())
    return digest.hexdigest()


def ensure_venv() -> Path:
    """Create .venv and install the locked dependencies plus this project (editable), when needed."""
    if sys.version_info < (3, 11):  # noqa: UP036 - tasks.py runs under whatever python3 the user has
        sys.exit(f"Python 3.11 or newer is required; this is {sys.version.split()[0]}")
    if not LOCK.exists():
        sys.exit(f"{LOCK.relative_to(ROOT)} is missing; run `python3 tasks.py lock` once to create it")
    if not PYTHON.exists():
        print(f"creating {VENV.relative_to(ROOT)}/", flush=True)
        venv.EnvBuilder(with_pip=True, clear=True).create(VENV)
    fingerprint = _install_fingerprint()
    if not STAMP.exists() or STAMP.read_text() != fingerprint:
        _run(PYTHON, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "-r", LOCK)
        _run(PYTHON, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-deps", "-e", ".")
        STAMP.write_text(fingerprint)
    return PYTHON


NODE_LOCK = ROOT / "package-lock.json"
NODE_STAMP = ROOT / "node_modules" / ".installed-from"


def ensure_node_modules() -> None:
    """`npm ci` the pinned Node packages of package-lock.json (the protocols' real JavaScript clients, which the
    tests drive), again only when the lock file changed since the last install."""
    fingerprint = hashlib.sha256(NODE_LOCK.read_bytes()).hexdigest()
    if NODE_STAMP.exists() and NODE_STAMP.read_text() == fingerprint:
        return
    try:
        version = subprocess.run(["node", "--version"], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        sys.exit("Node.js 20 or newer and npm are required (the tests run the protocols' JavaScript clients)")
    if int(version.lstrip("v").split(".")[0]) < 20:
        sys.exit(f"Node.js 20 or newer is required; this is {version}")
    _run("npm", "ci", "--no-audit", "--no-fund", "--loglevel=error")
    NODE_STAMP.write_text(fingerprint)


def ensure_chromium() -> None:
    """The playground's browser test drives the distribution's Chromium (never a browser download): install Debian's
    `chromium` package where it is missing and the machine allows it (root with apt-get, as on CI). Elsewhere the
    test says what is missing."""
    if any(shutil.which(name) for name in CHROMIUM_NAMES):
        return
    if not shutil.which("apt-get") or not hasattr(os, "geteuid") or os.geteuid() != 0:
        print("Chromium is not installed and cannot be installed here (needs root and apt-get): the playground's "
              "browser test will fail; install the distribution's chromium package", flush=True)  # fmt: skip
        return
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = ("apt-get", "install", "-y", "-q", "--no-install-recommends", "chromium")
    if _run(*install, check=False, env=env) != 0:  # the package lists of a fresh machine may be missing or stale
        _run("apt-get", "update", "-q", env=env)
        _run(*install, env=env)


CHROMIUM_NAMES = ("chromium", "chromium-browser")


def ensure_python_sdk(python: Path) -> None:
    """The Python SDK (sdk/python) is its own package; the tests drive it installed, as its users do."""
    stamp = VENV / ".python-sdk-installed"
    if stamp.exists():
        return
    pip = (python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check")
    if _run(*pip, "--no-deps", "-e", "sdk/python") == 0:  # its dependencies are in requirements/lock.txt
        stamp.write_text("editable\n")


def ensure_playground() -> None:
    """Build the playground page (playground/) with the pinned Vite, again only when its sources changed."""
    _run(PYTHON, "tools/build_playground.py")


# The test command's groups, each one pytest process, all at the same time: most of the time of the slow groups is
# spent waiting on the servers and scripted silences of conformance runs, not computing. Together they are every
# test under tests/ (test_tasks.py holds that true); `python3 tasks.py test ARGS` runs one pytest with ARGS instead.
POSTGRES_TESTS = (
    "tests/reference_server/test_workers.py",
    "tests/reference_server/test_postgres_store.py",
    "tests/reference_server/test_with_postgres.py",
)
TEST_GROUPS: dict[str, list[str]] = {
    "mutants": ["tests/quality/test_mutants.py"],
    "quality+gns3": [
        "tests/quality",
        "tests/gns3",
        "--ignore",
        "tests/quality/test_mutants.py",
        "--ignore",
        "tests/quality/test_channel_mutants.py",
    ],
    # The channel mutants, the peers (installed, served, judged, benched), the SDKs, the playground in a browser, the
    # hostile inputs and the PostgreSQL deployment (several workers, the suite against it): apart, so that the others
    # keep their time (`rest` is the longest group still).
    "channels+peers+sdk+postgres": [
        *("tests/quality/test_channel_mutants.py", "tests/peers", "tests/sdk", "tests/playground", "tests/hostile"),
        *POSTGRES_TESTS,
    ],
    "rest": [
        "tests",
        *("--ignore", "tests/quality", "--ignore", "tests/gns3", "--ignore", "tests/peers"),
        *("--ignore", "tests/sdk", "--ignore", "tests/playground", "--ignore", "tests/hostile"),
        *(arg for test in POSTGRES_TESTS for arg in ("--ignore", test)),
    ],
}


def _pytest_status(code: int) -> int:
    if code == PYTEST_NO_TESTS:
        print("pytest collected no tests: treating that as a failure", file=sys.stderr)
        return 1
    return code


def _run_groups(python: Path, groups: dict[str, list[str]]) -> int:
    """Every group in its own pytest process at once; each line of output prefixed with its group's name."""
    print("+ " + "  |  ".join(f"pytest {' '.join(args)}" for args in groups.values()), flush=True)
    started = time.monotonic()
    running = {
        name: subprocess.Popen(
            [str(python), "-m", "pytest", "-p", "no:cacheprovider", *args],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            bufsize=1,
        )
        for name, args in groups.items()
    }
    width = max(map(len, groups))
    took: dict[str, float] = {}

    def relay(name: str, process: subprocess.Popen) -> None:
        for line in process.stdout:
            print(f"[{name:<{width}}] {line}", end="", flush=True)
        took[name] = time.monotonic() - started  # its output ends when it does

    threads = [threading.Thread(target=relay, args=item) for item in running.items()]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    codes = {name: process.wait() for name, process in running.items()}
    for name, code in codes.items():
        print(f"test group {name}: pytest exit {code} after {took[name]:.0f} s", flush=True)
    print(f"all groups done in {time.monotonic() - started:.0f} s", flush=True)
    return max(_pytest_status(code) for code in codes.values())


def cmd_test(extra: list[str]) -> int:
    python = ensure_venv()
    ensure_node_modules()
    ensure_python_sdk(python)
    ensure_playground()
    ensure_chromium()
    if extra:  # a chosen subset, for iteration: one pytest as asked
        return _pytest_status(_run(python, "-m", "pytest", *extra, check=False))
    return _run_groups(python, TEST_GROUPS)


def cmd_conformance(extra: list[str]) -> int:
    python = ensure_venv()
    ensure_node_modules()  # the UI and AG-UI checks run those protocols' Node clients
    return _run(python, "-m", "conformance", *extra, check=False)


def cmd_sdk(extra: list[str]) -> int:
    """Regenerate both SDKs from the contract (`--check`: change nothing, exit 1 when either is stale). generated/
    first: the Python SDK's models are copies of its models."""
    python = ensure_venv()
    ensure_node_modules()  # @hey-api/openapi-ts and the TypeScript it works with
    steps = ["tools/generate.py", "tools/generate_typescript_sdk.py", "tools/generate_python_sdk.py"]
    return max(_run(python, step, *extra, check=False) for step in steps)


def cmd_generate(extra: list[str]) -> int:
    python = ensure_venv()
    return _run(python, "tools/generate.py", *extra, check=False)


def cmd_gns3(extra: list[str]) -> int:
    python = ensure_venv()
    return _run(python, "-m", "conformance.gns3.run", *extra, check=False)


def cmd_peers(extra: list[str]) -> int:
    """Install every peer into its own pinned environment (peers/install.py); then, unless --install-only, hand the
    other arguments to `python -m peers.run` (the suite against each peer), once that module exists."""
    python = ensure_venv()
    install_only = "--install-only" in extra
    code = _run(python, "-m", "peers.install", check=False)
    if code != 0 or install_only:
        return code
    if not (ROOT / "peers" / "run.py").exists():
        print("peers/run.py does not exist yet: the peers are installed, nothing was run", flush=True)
        return code
    return _run(python, "-m", "peers.run", *(a for a in extra if a != "--install-only"), check=False)


def cmd_bench(extra: list[str]) -> int:
    python = ensure_venv()
    return _run(python, "-m", "bench", *extra, check=False)


def cmd_lock(extra: list[str]) -> int:
    """Resolve the newest versions the pyproject ranges allow, in a throw-away venv, and freeze them."""
    with tempfile.TemporaryDirectory() as tmp:
        builder = venv.EnvBuilder(with_pip=True)
        builder.create(tmp)
        python = Path(tmp) / "bin" / "python"
        _run(python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "-e", ".[dev]")
        frozen = subprocess.run(
            [str(python), "-m", "pip", "freeze", "--exclude-editable", "--all"],
            cwd=ROOT,
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    pins = [line for line in frozen.splitlines() if line and not line.startswith(("pip==", "setuptools=="))]
    LOCK.parent.mkdir(exist_ok=True)
    LOCK.write_text(
        "# Exact versions installed by `python3 tasks.py test|conformance`.\n"
        "# Generated by `python3 tasks.py lock` from the ranges in pyproject.toml; do not edit by hand.\n"
        + "\n".join(sorted(pins, key=str.lower))
        + "\n"
    )
    print(f"wrote {LOCK.relative_to(ROOT)} ({len(pins)} packages)")
    return 0


COMMANDS = {
    "test": cmd_test,
    "conformance": cmd_conformance,
    "generate": cmd_generate,
    "sdk": cmd_sdk,
    "gns3": cmd_gns3,
    "peers": cmd_peers,
    "bench": cmd_bench,
    "lock": cmd_lock,
}


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in COMMANDS:
        print(__doc__)
        return 2
    return COMMANDS[argv[0]](argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
