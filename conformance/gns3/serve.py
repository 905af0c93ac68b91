"""`python -m conformance.gns3.serve --venv V --workdir W --port P`: write a lab, then become gns3server.

Used as the start command of the GNS3 target file; the suite stops it by pid (exec keeps the pid)."""

from __future__ import annotations

import os
from pathlib import Path

import click

from conformance.gns3.lab import write_lab


@click.command()
@click.option("--venv", "venv", required=True, type=click.Path(path_type=Path, exists=True, file_okay=False))
@click.option("--workdir", required=True, type=click.Path(path_type=Path))
@click.option("--port", required=True, type=int)
def main(venv: Path, workdir: Path, port: int) -> None:
    config = write_lab(workdir, port)
    server = venv / "bin" / "gns3server"
    env = {**os.environ, "HOME": str(workdir.resolve() / "home")}
    os.execve(server, [str(server), "--config", str(config), "--local", "--logfile", str(workdir / "server.log")], env)


if __name__ == "__main__":
    main()
