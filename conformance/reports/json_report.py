"""conformance.json: the whole run, machine-readable (the report model, secrets redacted)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def render(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n"


def write(data: dict[str, Any], path: Path) -> Path:
    path.write_text(render(data), encoding="utf-8")
    return path
