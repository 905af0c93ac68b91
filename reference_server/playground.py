"""The playground page (playground/, built by tools/build_playground.py) served at /playground as static files, and
the one JSON it reads first: the chat prefix and the fake LLM's scenarios (`/playground/config.json`).

Each file is its own route rather than a mount: every path the app serves is then a route with its methods, so a
wrong method gets the usual 405 with `Allow` (errors.py) and the walkers of the app's routes (tests/hostile) see
them. The build gives its files fixed names for that (playground/vite.config.ts); they are served `no-cache`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import FileResponse, JSONResponse

from .errors import ApiError
from .settings import Settings

# URL path -> (the file in the build, its media type); tools/build_playground.py checks the build makes exactly these.
FILES: dict[str, tuple[str, str]] = {
    "/playground": ("index.html", "text/html; charset=utf-8"),
    "/playground/": ("index.html", "text/html; charset=utf-8"),
    "/playground/assets/playground.js": ("assets/playground.js", "text/javascript; charset=utf-8"),
    "/playground/assets/playground.css": ("assets/playground.css", "text/css; charset=utf-8"),
}
CONFIG_PATH = "/playground/config.json"

# Fixed names: the browser must ask again after a rebuild. The page loads nothing from elsewhere, and the policy
# holds it to that (no CDN, no font, no inline script).
HEADERS = {"Cache-Control": "no-cache", "X-Content-Type-Options": "nosniff"}
PAGE_POLICY = (
    "default-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'; "
    "object-src 'none'"
)


def not_built(playground_dir: Path, missing: str) -> ApiError:
    return ApiError(
        404,
        "playground_not_built",
        f"The playground page is not built ({playground_dir / missing} is missing): run "
        "`python3 tools/build_playground.py` in the repository (`python3 tasks.py test` does), "
        "or start the server with --playground-dir pointing at a build.",
    )


def scenarios(request: Request) -> list[dict[str, str]]:
    """The scripts the server's in-process fake LLM plays (built-in and `--fake-llm-scripts` folders), each with
    the tag that selects it (spec/fake-llm/selection.yaml)."""
    library = request.app.state.services.manager.models.library
    return [
        {"name": name, "description": library.get(name).description, "marker": f"[[fake-llm:{name}]]"}
        for name in library.names()
    ]


def settings_of(request: Request) -> Settings:
    return request.app.state.services.settings


router = APIRouter(include_in_schema=False)  # not part of the contract (spec/openapi.yaml)


def serve(relative: str, media_type: str):
    async def static_file(request: Request) -> FileResponse:
        folder = settings_of(request).playground_dir
        path = folder / relative
        if not path.is_file():
            raise not_built(folder, relative)
        headers = {**HEADERS, "Content-Security-Policy": PAGE_POLICY} if relative == "index.html" else HEADERS
        return FileResponse(path, media_type=media_type, headers=headers)

    return static_file


for url_path, (relative, media_type) in FILES.items():
    router.add_api_route(url_path, serve(relative, media_type), methods=["GET"])


@router.get(CONFIG_PATH)
async def playground_config(request: Request) -> JSONResponse:
    body: dict[str, Any] = {"chat_prefix": settings_of(request).chat_prefix, "scenarios": scenarios(request)}
    return JSONResponse(body, headers={"Cache-Control": "no-store"})
