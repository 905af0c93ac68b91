"""No absolute path of the generating machine in a committed document: a path under the repository becomes
repository-relative, an installed package's file is named from its site-packages, a temporary file from $TMPDIR,
a home's from ~, and any other local path keeps only what follows its first folder."""

from __future__ import annotations

import re
from pathlib import Path

import gns3_copilot_spec as spec

ROOT = spec.SPEC_DIR.parent  # the repository (spec/ sits at its root)
# The first folders of the absolute paths a machine writes into a run (temporary files, homes, work trees,
# installations). A path starts at a word's start: a URL's path (`host:3080/v3/...`) is not one.
_LOCAL = re.compile(
    r"(?<![\w.:/~\\-])/(?:tmp|var|home|root|Users|private|work|mnt|srv|opt|usr|nix|data|builds|github|runner)"
    r"(?:/[^\s'\"`()<>\[\]{},;|\\]*)?(?![\w])"
)
_TEMPORARY = re.compile(r"^/(?:private/)?(?:var/)?tmp(?:/|$)|^/var/folders/[^/]+/[^/]+/T(?:/|$)")
_HOME = re.compile(r"^/(?:home|Users)/[^/]+(?:/|$)|^/root(?:/|$)")


def portable_path(path: str, root: Path = ROOT) -> str:
    """One absolute path of this machine as a document may show it."""
    root_text = str(root.resolve()).rstrip("/")
    for base in {root_text, str(root).rstrip("/")}:
        if path == base:
            return "."
        if path.startswith(base + "/"):
            return path[len(base) + 1 :]
    if "/site-packages/" in path:
        return "<site-packages>/" + path.split("/site-packages/", 1)[1]
    for pattern, placeholder in ((_TEMPORARY, "$TMPDIR/"), (_HOME, "~/")):
        found = pattern.match(path)
        if found:
            return placeholder + path[found.end() :]
    first, _, rest = path.lstrip("/").partition("/")
    return f"<{first}>/" + rest if rest else f"<{first}>"


def portable(text: str, root: Path = ROOT) -> str:
    """`text` with every absolute path of this machine made portable (portable_path). The repository's own paths
    go first: it may sit under a first folder the pattern does not know (a CI runner's /check/...)."""
    for base in sorted({str(root.resolve()).rstrip("/"), str(root).rstrip("/")}, key=len, reverse=True):
        text = re.sub(
            re.escape(base) + r"(?:/|(?![\w-]|\.\w))", lambda match: "" if match.group(0).endswith("/") else ".", text
        )
    return _LOCAL.sub(lambda match: portable_path(match.group(0), root), text)
