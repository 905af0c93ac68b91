"""`python -m fake_llm serve` (or `fake-llm serve`): run the fake LLM as an OpenAI-compatible server;
`python -m fake_llm scripts export DIR`: write its built-in scripts (stream shapes included) into a folder."""

from __future__ import annotations

import shutil
import socket
from pathlib import Path

import click
import uvicorn

from fake_llm.errors import ScriptFileError
from fake_llm.openai_server import create_app
from fake_llm.scripts import ScriptLibrary


@click.group()
def main() -> None:
    """The scripted, deterministic fake LLM of the GNS3 Copilot Chat API conformance project."""


@main.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on (keep it loopback).")
@click.option(
    "--port",
    default=8099,
    show_default=True,
    type=click.IntRange(0, 65535),
    help="Port; 0 picks a free one and prints it.",
)
@click.option(
    "--scripts",
    "folders",
    multiple=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="A folder of extra script files (repeatable); the built-in scripts are always loaded.",
)
@click.option(
    "--log-level",
    default="warning",
    show_default=True,
    type=click.Choice(["critical", "error", "warning", "info", "debug"]),
)
def serve(host: str, port: int, folders: tuple[Path, ...], log_level: str) -> None:
    """Serve /v1/chat/completions, /v1/models and the /control API."""
    try:
        library = ScriptLibrary.from_folders(folders)
    except ScriptFileError as error:
        raise click.ClickException(str(error)) from error
    # IPPROTO_TCP explicitly: asyncio sets TCP_NODELAY only on such sockets (no delayed-ACK stalls).
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as error:
        raise click.ClickException(f"cannot listen on {host}:{port}: {error}") from error
    actual_port = sock.getsockname()[1]
    # Listening before the line that says so: a client that connects as soon as it reads it (the suite's preflight,
    # a server it started) is queued, never refused while uvicorn starts (it listens again, with its backlog).
    sock.listen(2048)
    click.echo(f"fake-llm listening on http://{host}:{actual_port}/v1 ({len(library.names())} scripts)", err=False)
    config = uvicorn.Config(create_app(library), log_level=log_level, timeout_graceful_shutdown=2)
    uvicorn.Server(config).run(sockets=[sock])


@main.group()
def scripts() -> None:
    """The built-in scripts."""


@scripts.command("export")
@click.argument("folder", type=click.Path(file_okay=False, path_type=Path))
def export_scripts(folder: Path) -> None:
    """Copy every built-in script file into FOLDER, as shipped (for a fake LLM elsewhere, or to read them)."""
    library = ScriptLibrary.from_folders()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for name in library.names():
            source = Path(library.get(name).source)
            shutil.copyfile(source, folder / source.name)
    except OSError as error:
        raise click.ClickException(f"cannot write the scripts to {folder}: {error}") from error
    click.echo(f"wrote {len(library.names())} scripts to {folder}")
