#!/usr/bin/env python3
"""The project's task runner: the two commands of the README, and the maintenance tasks behind them.

    python3 tasks.py conformance   main job: the conformance suite against the built-in reference server
    python3 tasks.py test          the project's tests (what .ci/run runs; --quick: the fast subset for iteration;
                                   --under-load: beside two CPU-bound processes; other arguments: one pytest)
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
        # uv at the lock's version, by pip; then uv installs the lock (in seconds: pip took 45 s of CPU for it).
        _run(PYTHON, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", _locked("uv"))
        # Bytecode now, as pip would have compiled it: where PYTHONDONTWRITEBYTECODE is set (as on this project's
        # machines), Python never writes it itself, and every process would compile every module it imports.
        uv_install("--compile-bytecode", "-r", LOCK)
        uv_install("--no-deps", "-e", ".")
        STAMP.write_text(fingerprint)
    compile_sources()
    return PYTHON


# The project's own packages, imported from the working tree by every server, fake LLM and suite process.
SOURCES = ("spec", "generated", "conformance", "reference_server", "fake_llm", "peers", "bench", "tools", "tests")


def compile_sources() -> None:
    """Their bytecode, beside them (__pycache__/, ignored by git): where PYTHONDONTWRITEBYTECODE is set, Python
    would compile them again in each of the hundreds of processes a run or the test command starts (about 0.6 s of
    CPU for the reference server's and the suite's imports). Quick when nothing changed: it only compares times."""
    subprocess.run([str(PYTHON), "-m", "compileall", "-q", "-j", "0", *SOURCES], cwd=ROOT, stdout=subprocess.DEVNULL)


def _locked(name: str) -> str:
    """The lock's pin of `name`, e.g. "uv==0.13.9"."""
    for line in LOCK.read_text(encoding="utf-8").splitlines():
        if line.lower().startswith(f"{name}=="):
            return line.strip()
    sys.exit(f"{LOCK.relative_to(ROOT)} pins no {name}: run `python3 tasks.py lock`")


def uv_install(*arguments: str | Path) -> None:
    """`uv pip install` into .venv (uv is itself in .venv, from the lock)."""
    _run(VENV / "bin" / "uv", "pip", "install", "--quiet", "--python", PYTHON, *arguments)


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


def ensure_python_sdk() -> None:
    """The Python SDK (sdk/python) is its own package; the tests drive it installed, as its users do."""
    stamp = VENV / ".python-sdk-installed"
    if stamp.exists():
        return
    uv_install("--no-deps", "-e", "sdk/python")  # its dependencies are in requirements/lock.txt
    stamp.write_text("editable\n")


def ensure_playground() -> None:
    """Build the playground page (playground/) with the pinned Vite, again only when its sources changed."""
    _run(PYTHON, "tools/build_playground.py")


# The test command: one pytest over every test under tests/, its tests shared out to worker processes by
# pytest-xdist. `--dist loadgroup`: a module's tests stay on one worker, so its servers are started once
# (tests/conftest.py groups them; a module whose tests each make their own run spreads them), and the groups are
# taken by whichever worker is free, longest first. Much of a test's time is spent waiting on servers and scripted
# silences, so there are more workers than cores, but not many more: on 2 cores, the same 2 804 tests cost the
# machine 2 045 CPU-s with 6 workers, 1 717 with 5, 1 361 with 4 and 1 310 with 3 (contention costs CPU: the kernel's,
# and the suite judging again alone every timed check a busy machine made fail), for 987, 877, 785 and 910 s of pytest.
TEST_WORKERS = 4
# `--no-loadscope-reorder`: the units go out in the collection's order, longest first (tests/scheduling.py).
WORKERS = ("-n", str(TEST_WORKERS), "--dist", "loadgroup", "--no-loadscope-reorder")
# The pytest plugins the tests use, and no other: pytest loads every installed one otherwise (langsmith's, typeguard's,
# platformdirs'...) and rewrites the asserts of every module of their distributions as each process imports them,
# again in each process where PYTHONDONTWRITEBYTECODE is set (some 860 modules: LangSmith, Schemathesis, Hypothesis,
# and the project's own packages, through its plugin's entry point). Measured side by side on the `--quick` tests:
# 196 CPU-s and 106 s with this list, 205 CPU-s and 115 s without it.
_USED_PLUGINS = ("xdist.plugin", "syrupy", "anyio.pytest_plugin", "_hypothesis_pytestplugin",
                 "schemathesis.pytest.plugin", "conformance.pytest_plugin")  # fmt: skip
PLUGINS = ("--disable-plugin-autoload", *(arg for plugin in _USED_PLUGINS for arg in ("-p", plugin)))
FULL_TEST = (*PLUGINS, *WORKERS, "--durations=25", "--junitxml", ".cache/tests.xml")
# `--quick`: every package's unit and contract tests, for iteration (no mutant batches, no GNS3, peer, SDK or browser
# runs; the modules that have them are marked `slow`); the full command still runs everything.
QUICK_TEST = (*PLUGINS, *WORKERS, "-m", "not slow", "--durations=10")
# `--under-load`: the whole command beside this many CPU-bound processes of its own, stopped at its end: the
# tests must pass on a machine busy with other work (tests/README.md).
LOAD_PROCESSES = 2
CPU_BOUND = "while True: pass"


def _pytest_status(code: int) -> int:
    if code == PYTEST_NO_TESTS:
        print("pytest collected no tests: treating that as a failure", file=sys.stderr)
        return 1
    return code


def _pytest(python: Path, args: list[str] | tuple[str, ...]) -> int:
    """One pytest (its own closing line totals every worker's tests); "no tests ran" fails."""
    return _pytest_status(_run(python, "-m", "pytest", "-p", "no:cacheprovider", *args, check=False))


class _Load:
    """LOAD_PROCESSES CPU-bound processes beside the test command, stopped by pid when it ends."""

    def __enter__(self) -> _Load:
        self.processes = [subprocess.Popen([sys.executable, "-c", CPU_BOUND]) for _ in range(LOAD_PROCESSES)]
        pids = ", ".join(str(p.pid) for p in self.processes)
        print(f"under load: {LOAD_PROCESSES} CPU-bound processes (pids {pids}) on {os.cpu_count()} cores", flush=True)
        return self

    def __exit__(self, *exc_info: object) -> None:
        for process in self.processes:  # silently: pytest's own total stays the command's last line
            process.kill()
            process.wait()


def cmd_test(extra: list[str]) -> int:
    python = ensure_venv()
    quick, under_load = "--quick" in extra, "--under-load" in extra
    rest = [a for a in extra if a not in ("--quick", "--under-load")]
    full = not quick and not rest or under_load
    (ROOT / ".cache").mkdir(exist_ok=True)
    # The GNS3 releases and peers the full command judges, installed side by side in the background from the start:
    # mostly waiting on the package registry, beside the other set-up and the first tests. A test that needs one
    # waits for its install (each environment is installed by one process at a time: install_lock); a failed install
    # fails its own tests, with pip's words (in .cache/third-party.log).
    installs = _background(python, "-m", "tests.third_party", log=ROOT / ".cache" / "third-party.log") if full else None
    ensure_node_modules()
    ensure_python_sdk()
    ensure_playground()
    ensure_chromium()
    if rest and not (quick or under_load):  # a chosen subset, for iteration: one pytest as asked
        return _pytest(python, rest)
    args = [*(QUICK_TEST if quick else FULL_TEST), *rest, "tests"]
    try:
        if not under_load:
            return _pytest(python, args)
        with _Load():
            return _pytest(python, args)
    finally:
        if installs is not None:
            installs.wait()  # long done by the end of the tests; never left running


def _background(*args: str | Path, log: Path) -> subprocess.Popen:
    where = f"(in the background, its output in {log.relative_to(ROOT)})"
    print("+", " ".join(str(a) for a in args), where, flush=True)
    with open(log, "w") as out:
        return subprocess.Popen([str(a) for a in args], cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)


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
