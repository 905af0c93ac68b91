#!/usr/bin/env python3
"""Build the playground page (playground/) into playground/dist/, only when what it is built from changed.

    python3 tools/build_playground.py           build when the sources changed since the last build
    python3 tools/build_playground.py --force   build even so

`python3 tasks.py test` runs it; the reference server serves the result at /playground
(reference_server/playground.py). The build type-checks the sources with the pinned TypeScript (`tsc --noEmit`,
strict: playground/tsconfig.json), then runs the pinned `vite build` into a staging folder, which replaces
playground/dist/ only once it is whole: a failed build leaves the previous one in place. playground/dist/.built-from
holds a hash of what the build is made of (the sources, package-lock.json, which pins the tools and libraries, and
this file); a build whose hash matches is up to date. The tools and libraries come from node_modules/ (`npm ci`):
nothing is fetched here. Standard library only, like tasks.py.
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "playground"
DIST = SOURCE / "dist"
STAMP = DIST / ".built-from"
STAGING = ROOT / ".cache" / "playground-build"  # on the same file system as DIST, for the final rename
BIN = ROOT / "node_modules" / ".bin"
LOCK = ROOT / "package-lock.json"
TOOL = Path(__file__).resolve()
# The files the reference server serves, each its own route (reference_server/playground.py, FILES): the build must
# make exactly these (playground/vite.config.ts names them).
EXPECTED = {"index.html", "assets/playground.js", "assets/playground.css"}


class BuildError(Exception):
    """The build cannot be made; the message says why and what to do."""


def sources() -> list[Path]:
    """Every file the build is made from: the page's sources (not its output, nothing hidden), the lock file
    of the Node packages, and this file."""
    page = [
        path
        for path in SOURCE.rglob("*")
        if path.is_file()
        and path.relative_to(SOURCE).parts[0] != DIST.name
        and not any(part.startswith(".") or part == "node_modules" for part in path.relative_to(SOURCE).parts)
    ]
    return sorted(page) + [LOCK, TOOL]


def fingerprint() -> str:
    digest = hashlib.sha256()
    for path in sources():
        data = path.read_bytes()
        digest.update(f"{path.relative_to(ROOT).as_posix()}\0{len(data)}\0".encode())
        digest.update(data)
    return digest.hexdigest()


def built_files(folder: Path) -> set[str]:
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file() and p.name != STAMP.name}


def is_fresh() -> bool:
    """True when playground/dist/ is a whole build of the current sources."""
    if not STAMP.is_file() or STAMP.read_text(encoding="utf-8").strip() != fingerprint():
        return False
    return built_files(DIST) == EXPECTED


def _run(step: str, *args: str | Path) -> None:
    completed = subprocess.run([str(a) for a in args], cwd=SOURCE)
    if completed.returncode != 0:
        raise BuildError(f"{step} failed (exit {completed.returncode}); its output is above")


def build(*, force: bool = False) -> bool:
    """Build the page when it is stale (or `force`); returns whether it built."""
    if not force and is_fresh():
        return False
    if shutil.which("node") is None:
        raise BuildError("Node.js is not on PATH: the playground is built with the pinned Vite, which runs on Node 20+")
    for tool in ("tsc", "vite"):
        if not (BIN / tool).exists():
            raise BuildError(
                f"{(BIN / tool).relative_to(ROOT)} is missing: install the pinned Node packages with `npm ci` at the "
                "repository root (`python3 tasks.py test` does)"
            )
    wanted = fingerprint()
    _run("the type check (tsc --noEmit -p playground/tsconfig.json)", BIN / "tsc", "--noEmit", "-p", "tsconfig.json")
    shutil.rmtree(STAGING, ignore_errors=True)
    STAGING.parent.mkdir(parents=True, exist_ok=True)
    # --emptyOutDir: Vite empties an outDir outside its root only when told to.
    _run("vite build", BIN / "vite", "build", "--outDir", STAGING, "--emptyOutDir", "--logLevel", "warn")
    made = built_files(STAGING)
    if made != EXPECTED:
        raise BuildError(
            f"vite build made {sorted(made)}, not {sorted(EXPECTED)}: the reference server serves exactly those "
            "(reference_server/playground.py FILES; names set in playground/vite.config.ts)"
        )
    (STAGING / STAMP.name).write_text(wanted + "\n", encoding="utf-8")
    shutil.rmtree(DIST, ignore_errors=True)
    STAGING.rename(DIST)
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--force", action="store_true", help="build even when the build is up to date")
    args = parser.parse_args(argv)
    started = time.monotonic()
    try:
        built = build(force=args.force)
    except BuildError as error:
        print(f"playground: {error}", file=sys.stderr)
        return 1
    where = DIST.relative_to(ROOT)
    if built:
        print(f"playground: built {where}/ in {time.monotonic() - started:.1f} s", flush=True)
    else:
        print(f"playground: {where}/ is up to date", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
