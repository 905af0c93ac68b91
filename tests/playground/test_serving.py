"""The playground's build (tools/build_playground.py) and how the reference server serves it (reference_server/
playground.py): exactly the built files, under a policy that allows nothing from elsewhere, a clear 404 when there
is no build, and the one JSON the page reads first. In-process; no browser."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import pytest

from fake_llm.scripts import ScriptLibrary
from fake_llm.selection import TAG
from gns3_copilot_generated.api.error_body import ErrorBody
from reference_server.app import create_app
from reference_server.playground import CONFIG_PATH, FILES
from reference_server.settings import Settings
from tests.readme import readme_command
from tools import build_playground

from .conftest import PREFIXES


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@asynccontextmanager
async def client_of(settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://reference") as client:
            yield client


def test_the_build_is_up_to_date_and_makes_exactly_the_files_the_server_serves():
    assert build_playground.is_fresh(), "playground/dist/ is stale: run `python3 tools/build_playground.py`"
    assert {relative for relative, _ in FILES.values()} == build_playground.EXPECTED


def test_the_readme_build_command_finds_the_build_up_to_date():
    command = readme_command("python3 tools/build_playground.py")
    result = subprocess.run(command, cwd=build_playground.ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip() == "playground: playground/dist/ is up to date"


def test_the_stamp_follows_the_sources_the_lock_and_the_build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The build is up to date exactly while nothing it is made of changed and it is whole."""
    root = tmp_path / "repo"
    shutil.copytree(build_playground.SOURCE, root / "playground", ignore=shutil.ignore_patterns("dist"))
    lock, tool = root / "package-lock.json", root / "tools" / "build_playground.py"
    tool.parent.mkdir()
    shutil.copyfile(build_playground.LOCK, lock)
    shutil.copyfile(build_playground.TOOL, tool)
    dist = root / "playground" / "dist"
    for name, value in {"ROOT": root, "SOURCE": root / "playground", "DIST": dist, "LOCK": lock, "TOOL": tool}.items():
        monkeypatch.setattr(build_playground, name, value)
    monkeypatch.setattr(build_playground, "STAMP", dist / ".built-from")

    assert not build_playground.is_fresh()  # no build
    for name in build_playground.EXPECTED:
        (dist / name).parent.mkdir(parents=True, exist_ok=True)
        (dist / name).write_text("built")
    (dist / ".built-from").write_text(build_playground.fingerprint() + "\n")
    assert build_playground.is_fresh()

    (dist / "assets" / "playground.css").unlink()  # not whole
    assert not build_playground.is_fresh()
    (dist / "assets" / "playground.css").write_text("built")
    assert build_playground.is_fresh()

    for changed in (root / "playground" / "src" / "App.tsx", lock, tool):
        original = changed.read_bytes()
        changed.write_bytes(original + b"\n")
        assert not build_playground.is_fresh(), changed
        changed.write_bytes(original)
        assert build_playground.is_fresh()

    (root / "playground" / "src" / "extra.ts").write_text("export {};\n")  # a new source counts too
    assert not build_playground.is_fresh()


@pytest.mark.anyio
async def test_the_built_files_are_served_no_cache_and_the_page_under_its_policy(tmp_path: Path):
    async with client_of(Settings(data_dir=tmp_path / "data")) as client:
        for url_path, (relative, media_type) in FILES.items():
            response = await client.get(url_path)
            assert response.status_code == 200, (url_path, response.text)
            assert response.headers["content-type"] == media_type
            assert response.headers["cache-control"] == "no-cache"
            assert response.content == (build_playground.DIST / relative).read_bytes()
        page = await client.get("/playground")
        policy = page.headers["content-security-policy"]
        assert "default-src 'self'" in policy and "unsafe" not in policy
        # The page loads the built script and style, from this server, and nothing else.
        loaded = set(re.findall(r'(?:src|href)="([^"]+)"', page.text))
        assert loaded == {"data:,"} | {path for path in FILES if path.startswith("/playground/assets/")}
        refused = await client.post("/playground")
        assert refused.status_code == 405 and refused.headers["allow"] == "GET"


@pytest.mark.anyio
async def test_without_a_build_the_page_is_a_404_saying_how_to_build_it(tmp_path: Path):
    async with client_of(Settings(data_dir=tmp_path / "data", playground_dir=tmp_path / "no-build")) as client:
        for url_path in FILES:
            response = await client.get(url_path)
            assert response.status_code == 404, url_path
            body = ErrorBody.model_validate(response.json())
            assert body.code == "playground_not_built"
            assert "python3 tools/build_playground.py" in body.message
        assert (await client.get(CONFIG_PATH)).status_code == 200  # the page's JSON needs no build


@pytest.mark.anyio
@pytest.mark.parametrize("prefix", list(PREFIXES.values()), ids=list(PREFIXES))
async def test_the_config_gives_the_chat_prefix_and_every_scenario_of_the_fake_llm(tmp_path: Path, prefix: str):
    async with client_of(Settings(data_dir=tmp_path / "data", chat_prefix=prefix)) as client:
        response = await client.get(CONFIG_PATH)
    assert response.status_code == 200 and response.headers["cache-control"] == "no-store"
    config = response.json()
    assert config["chat_prefix"] == prefix
    library = ScriptLibrary.from_folders()
    assert [scenario["name"] for scenario in config["scenarios"]] == library.names()
    for scenario in config["scenarios"]:
        assert scenario["description"] == library.get(scenario["name"]).description
        assert TAG.fullmatch(scenario["marker"]).group("script") == scenario["name"]  # the tag selects it
