"""`python -m reference_server` / `copilot-reference-server`: serve the reference implementation."""

from __future__ import annotations

import asyncio
import socket
import sys
from pathlib import Path

import click
import uvicorn
from pydantic import ValidationError

from .app import create_app
from .services import Services
from .settings import ENV_PREFIX, Settings, load_settings
from .workers import DealtConnections, supervise

# The settings given as often as needed on the command line (lists in the environment and the file).
REPEATABLE = ("fake_llm_scripts", "cors_origin", "llm_base_url_allow")


def _option(name: str):
    field = Settings.model_fields[name]
    flag = "--" + name.replace("_", "-")
    env = f"{ENV_PREFIX}{name.upper()}"
    default = field.default if field.default_factory is None else "(see below)"
    help_text = f"{field.description} [env {env}; default {default}]"
    if field.annotation is bool:
        return click.option(flag + "/--no-" + name.replace("_", "-"), default=None, help=help_text)
    if name == "fake_llm_scripts":
        return click.option(flag, multiple=True, type=click.Path(path_type=Path), help=help_text)
    if name in REPEATABLE:
        return click.option(flag, multiple=True, help=help_text)
    return click.option(flag, default=None, help=help_text)


def _with_setting_options(command):
    for name in reversed(list(Settings.model_fields)):
        command = _option(name)(command)
    return command


@click.command(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 120})
@click.option(
    "--config",
    "config_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="YAML file of settings (same names as the options, with underscores).",
)
@_with_setting_options
def main(config_file: Path | None, **options) -> None:
    """Serve the GNS3 Copilot Chat API reference server.

    Precedence: command line > COPILOT_REF_* environment > --config file > defaults. The data directory
    defaults to $XDG_DATA_HOME/gns3-copilot-reference-server (~/.local/share/...). A new data directory
    gets the admin account (admin/admin) whose LLM is the in-process scripted fake LLM.
    """
    for repeatable in REPEATABLE:  # not given: the environment or the file may say
        if not options.get(repeatable):
            options.pop(repeatable, None)
    try:
        settings = load_settings(config_file, **options)
    except (ValidationError, ValueError) as exc:
        raise click.BadParameter(str(exc)) from exc
    # IPPROTO_TCP explicitly: asyncio sets TCP_NODELAY only on such sockets, and without it small SSE frames
    # wait for the client's delayed ACK (about 40 ms per frame on a kept-alive connection).
    family = socket.AF_INET6 if ":" in settings.host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((settings.host, settings.port))
    host, port = sock.getsockname()[:2]
    prefix = settings.chat_prefix
    chat_data = (
        _database_shown(settings.database_url)
        if settings.database_url
        else f"SQLite per project in {settings.data_dir}"
    )
    click.echo(
        f"reference server listening on http://{host}:{port} (chat prefix {prefix}, data {settings.data_dir}, "
        f"chat data {chat_data}, {settings.workers} worker{'s' if settings.workers > 1 else ''})"
    )
    sys.stdout.flush()
    if settings.workers == 1:
        _serve(settings, sock, prepared=False)
        return
    _prepare(settings)
    sys.exit(supervise(lambda s: _serve(settings, s, prepared=True), sock, settings.workers))


def _serve(settings: Settings, sock: socket.socket, *, prepared: bool) -> None:
    """Serve the one process's listening socket, or, in a worker, the connections the supervisor deals over
    `sock`, the worker's channel (workers.py)."""
    config = uvicorn.Config(create_app(settings, prepared=prepared), log_level=settings.log_level, lifespan="on")
    if settings.workers > 1:
        DealtConnections(config, sock).run()
    else:
        uvicorn.Server(config).run(sockets=[sock])


def _prepare(settings: Settings) -> None:
    """Before the workers: data directory, controller database and its admin, the PostgreSQL tables, and the
    recovery of turns a crash cut, done once rather than raced by every worker."""

    async def once() -> None:
        services = await Services.start(settings)
        await services.stop()

    try:
        asyncio.run(once())
    except Exception as exc:
        raise click.ClickException(f"start-up failed: {type(exc).__name__}: {exc}") from exc


def _database_shown(url: str) -> str:
    """The database's place without its password."""
    from psycopg.conninfo import conninfo_to_dict  # psycopg only where PostgreSQL is used: a start-up cost otherwise

    info = conninfo_to_dict(url)
    return f"PostgreSQL database {info.get('dbname', '?')} at {info.get('host', 'localhost')}:{info.get('port', 5432)}"


if __name__ == "__main__":
    main()
