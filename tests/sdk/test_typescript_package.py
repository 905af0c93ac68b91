"""The TypeScript SDK as its users install it: `npm pack` (which builds dist/ with tsc) gives a tarball that a new
project, outside the repository, installs and uses with a plain `tsc` (`module: NodeNext`) and Node, and with a
bundler (Vite) in a browser page. Both run the quick start of sdk/typescript/README.md against a live reference
server (the page from another origin, which the server names with --cors-origin)."""

from __future__ import annotations

import functools
import http.server
import json
import os
import re
import subprocess
import tarfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import sync_playwright

from tests.playground.conftest import CHROMIUM_ARGS, chromium_executable
from tests.readme import readme_example
from tests.reference_server.conftest import ServerProcess, start_server_process

pytestmark = pytest.mark.slow  # npm pack, npm install, tsc and Vite: left out of `python3 tasks.py test --quick`

ROOT = Path(__file__).resolve().parents[2]
SDK = ROOT / "sdk" / "typescript"
SDK_README = SDK / "README.md"
TSC = ROOT / "node_modules" / ".bin" / "tsc"  # the TypeScript of package.json's pin, as a user's own
VITE = ROOT / "node_modules" / ".bin" / "vite"
QUICKSTART_URL = "'http://127.0.0.1:3080'"  # the base URL the README's quick start names


def npm(arguments: list[str], cwd: Path, timeout: float = 240) -> subprocess.CompletedProcess:
    """npm, never asking the network for what its cache (filled by the repository's `npm ci`) already holds."""
    env = {**os.environ, "npm_config_prefer_offline": "true", "npm_config_audit": "false", "npm_config_fund": "false"}
    return subprocess.run(["npm", *arguments], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def run(command: list[str], cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def tarball(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The README's `cd sdk/typescript && npm pack`, into a temporary folder instead of the SDK's."""
    readme = SDK_README.read_text(encoding="utf-8")
    assert "cd sdk/typescript && npm pack" in readme
    destination = tmp_path_factory.mktemp("ts-sdk-pack")
    packed = npm(["pack", "--pack-destination", str(destination)], cwd=SDK)
    assert packed.returncode == 0, packed.stdout + packed.stderr
    (path,) = destination.glob("*.tgz")
    assert f"npm install /path/to/{path.name}" in readme  # the name the README tells users to install
    return path


class QuietFiles(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base class's name
        pass


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str]]:
    """A static server of a folder on its own port of 127.0.0.1 (as a web app is served): (folder, origin)."""
    root = tmp_path_factory.mktemp("ts-package-site")
    files = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(QuietFiles, directory=str(root)))
    threading.Thread(target=files.serve_forever, daemon=True).start()
    try:
        yield root, f"http://127.0.0.1:{files.server_address[1]}"
    finally:
        files.shutdown()
        files.server_close()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, site: tuple[Path, str]) -> Iterator[ServerProcess]:
    """The reference server, which lets the site's pages call it (--cors-origin)."""
    started = start_server_process(tmp_path_factory.mktemp("ts-package-server"), "--cors-origin", site[1])
    yield started
    started.stop()


def new_project(folder: Path, tarball: Path, server: ServerProcess, source: str) -> Path:
    """A new ESM project with the tarball installed and the README's quick start as `src/main.ts`, aimed at the
    live server."""
    folder.mkdir()
    (folder / "package.json").write_text(json.dumps({"name": folder.name, "private": True, "type": "module"}))
    installed = npm(["install", str(tarball)], cwd=folder)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    code = readme_example("ts quickstart", SDK_README)
    assert QUICKSTART_URL in code
    (folder / "src").mkdir()
    (folder / "src" / source).write_text(code.replace(QUICKSTART_URL, repr(server.base_url)))
    return folder


def expected_lines(code: str) -> list[str]:
    """What each `console.log(...)` line says it prints, in its trailing comment (`console.log(x);  // 42`)."""
    return [m.group(1) for m in re.finditer(r"console\.log\(.*\);?  // (.+)$", code, flags=re.M)]


def test_the_tarball_holds_the_built_javascript_its_types_and_readme_and_no_source(tarball: Path):
    with tarfile.open(tarball) as archive:
        names = {name.removeprefix("package/") for name in archive.getnames()}
        manifest = json.load(archive.extractfile("package/package.json"))
    assert {"README.md", "package.json", "dist/index.js", "dist/index.d.ts", "dist/generated/sdk.gen.js"} <= names
    assert not [name for name in names if name.endswith(".ts") and not name.endswith(".d.ts")]
    assert manifest["exports"]["."] == {"types": "./dist/index.d.ts", "default": "./dist/index.js"}


def test_a_plain_tsc_project_with_nodenext_compiles_and_runs_the_quick_start(tarball, server, tmp_path):
    project = new_project(tmp_path / "plain-tsc", tarball, server, "main.ts")
    # What `tsc --init` suggests for Node, with the package's declarations checked too (skipLibCheck off).
    config = {"module": "NodeNext", "target": "ES2022", "strict": True, "skipLibCheck": False, "outDir": "dist"}
    (project / "tsconfig.json").write_text(json.dumps({"compilerOptions": config, "include": ["src"]}))
    compiled = run([str(TSC), "-p", str(project)], cwd=project)
    assert compiled.returncode == 0, compiled.stdout + compiled.stderr
    ran = run(["node", "dist/main.js"], cwd=project)
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert ran.stdout.splitlines() == expected_lines(readme_example("ts quickstart", SDK_README))


def test_the_types_are_the_contracts_a_wrong_call_does_not_compile(tarball, server, tmp_path):
    project = new_project(tmp_path / "wrong-call", tarball, server, "main.ts")  # npm takes it from its cache now
    main = project / "src" / "main.ts"
    main.write_text(main.read_text().replace("{ message: 'Any routers?", "{ mesage: 'Any routers?"))
    config = {"module": "NodeNext", "target": "ES2022", "strict": True, "noEmit": True}
    (project / "tsconfig.json").write_text(json.dumps({"compilerOptions": config, "include": ["src"]}))
    compiled = run([str(TSC), "-p", str(project)], cwd=project)
    assert compiled.returncode != 0 and "'mesage' does not exist in type" in compiled.stdout, compiled.stdout


def test_a_vite_project_bundles_the_package_and_the_page_runs_in_chromium(tarball, server, site, tmp_path):
    project = new_project(tmp_path / "vite-app", tarball, server, "main.ts")
    (project / "index.html").write_text('<!doctype html><script type="module" src="/src/main.ts"></script>\n')
    root, origin = site
    # es2022: the quick start awaits at the top level, which Vite's default browser targets do not all allow
    build = ["build", str(project), "--outDir", str(root / "app"), "--base", "/app/", "--target", "es2022"]
    built = run([str(VITE), *build, "--logLevel", "warn"], cwd=project)
    assert built.returncode == 0, built.stdout + built.stderr
    (bundle,) = (root / "app" / "assets").glob("*.js")
    assert not re.search(r"""^\s*import\s.*from\s*["']""", bundle.read_text(), flags=re.M), "an import left unbundled"

    expected = expected_lines(readme_example("ts quickstart", SDK_README))
    logged, errors = [], []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_executable(), headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            # the page's console.log lines (the browser's own notes, such as the expected 404, are errors)
            page.on("console", lambda message: message.type == "log" and logged.append(message.text))
            page.on("pageerror", lambda error: errors.append(str(error)))
            page.goto(f"{origin}/app/index.html")
            deadline = time.monotonic() + 60  # the test's own limit on a turn of a few scripted events
            while len(logged) < len(expected) and not errors and time.monotonic() < deadline:
                page.wait_for_timeout(100)
        finally:
            browser.close()
    assert not errors, errors
    assert logged == expected
