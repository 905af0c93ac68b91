"""Resolving one release's pin list, conformance/gns3/requirements-<V>.txt: never edited by hand.

`python3 tasks.py gns3 --version V --resolve-pins` (or `resolve_pins(V)`) installs `gns3-server[<extra>]==V`
unpinned into a throw-away virtual environment and writes its `pip freeze` (without pip and setuptools). Commit the
result; `ensure_gns3_venv` then installs exactly that list into .cache/gns3-<V>/venv. A pin list is per release:
the exact web-stack pins (fastapi, uvicorn, pydantic) differ between releases, so one list cannot install another.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
import venv
from pathlib import Path

from conformance.gns3 import EXTRAS, check_version, requirements_file

SKIPPED = ("pip==", "setuptools==", "wheel==")

# Upper bounds a release's own requirements lack, added when resolving. 3.1.0a3 imports `mcp.server.fastmcp`
# unconditionally, but requires `fastmcp>=3.4.0` without a bound: unpinned, that resolves fastmcp 4 / mcp 2, where
# the module is gone, and the server exits before it listens. 3.1.0a6 bounds it itself (`fastmcp<4`), so this is
# the release's intent. (3.1.0a4 and a5 catch the ImportError and run without MCP routes; the chat API is
# unaffected, so their lists are left as resolved.)
CONSTRAINTS: dict[str, tuple[str, ...]] = {"3.1.0a3": ("fastmcp<4",)}


def resolve_pins(version: str, out: Path | None = None) -> Path:
    check_version(version)
    out = out or requirements_file(version)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix=f"gns3-{version}-pins-") as tmp:
        venv.EnvBuilder(with_pip=True).create(tmp)
        python = str(Path(tmp) / "bin" / "python")
        pip = [python, "-m", "pip", "--disable-pip-version-check"]
        requirement = f"gns3-server[{EXTRAS[version]}]=={version}"
        installed = subprocess.run(
            [*pip, "install", "--quiet", requirement, *CONSTRAINTS.get(version, ())], capture_output=True, text=True
        )
        if installed.returncode != 0:
            sys.exit(f"pip install {requirement} failed:\n{installed.stdout}{installed.stderr}")
        extras = subprocess.run(
            [
                python,
                "-c",
                "import importlib.metadata as m; print(m.metadata('gns3-server').get_all('Provides-Extra'))",
            ],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        if f"'{EXTRAS[version]}'" not in extras:  # pip only warns about an extra the release does not have
            sys.exit(f"gns3-server {version} has no extra {EXTRAS[version]!r} (it provides {extras.strip()})")
        frozen = subprocess.run([*pip, "freeze", "--all"], check=True, capture_output=True, text=True).stdout
    pins = sorted((line for line in frozen.splitlines() if line and not line.startswith(SKIPPED)), key=str.lower)
    bounds = "".join(f" {c}" for c in CONSTRAINTS.get(version, ()))
    out.write_text(
        f"# gns3-server[{EXTRAS[version]}]=={version}{bounds} and everything it pulled in, as resolved by\n"
        f"# `python3 tasks.py gns3 --version {version} --resolve-pins` (conformance/gns3/pins.py); "
        "do not edit by hand.\n" + "\n".join(pins) + "\n",
        encoding="utf-8",
    )
    print(f"wrote {out} ({len(pins)} packages) in {time.monotonic() - started:.0f} s", file=sys.stderr)
    return out


if __name__ == "__main__":
    for name in sys.argv[1:]:
        resolve_pins(name)
