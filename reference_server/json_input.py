"""What a parsed JSON body must also be before any of it is used: Unicode text, finite numbers, bounded nesting.

Python's json module takes `"\\ud800"` (a lone surrogate, which is not Unicode text and which SQLite, Argon2 and
Fernet cannot encode), `NaN` and `Infinity` (not JSON), and nesting as deep as its recursion allows; pydantic's JSON
parser stops at 200 levels. Both request paths (chat/preconditions.py and controller/bodies.py) refuse these the
same way: 400 `invalid_json`, with `json_problem`'s reason in the message.
"""

from __future__ import annotations

import math
from typing import Any

MAX_DEPTH = 64  # arrays and objects within one another; far beyond any body of the API, far below either parser's limit


def json_problem(value: Any) -> str | None:
    """Why `value` (as json.loads gives it) cannot be taken, or None; iterative, so that no body exhausts the stack."""
    pending = [(value, 1)]
    while pending:
        node, depth = pending.pop()
        if isinstance(node, str):
            try:
                node.encode("utf-8")
            except UnicodeEncodeError:
                return "a string holds a lone surrogate (a \\ud800-\\udfff escape that is not part of a pair)"
        elif isinstance(node, float) and not math.isfinite(node):
            return "a number is NaN, Infinity or too large for a double"
        elif isinstance(node, dict | list):
            if depth > MAX_DEPTH:
                return f"arrays and objects are nested more than {MAX_DEPTH} levels deep"
            children = [*node.keys(), *node.values()] if isinstance(node, dict) else node
            pending.extend((child, depth + 1) for child in children)
    return None
