"""Schema validation at compiled speed, with jsonschema's own words for the errors.

The suite validates every event, answer and protocol chunk of a run against the contract's and the protocols'
schemas; with jsonschema alone that was about a tenth of the suite's CPU in a profiled mutant run (some 150 µs an
event, 260 µs an OpenAI chunk).
jsonschema-rs compiles a schema and checks an instance in well under a microsecond. A GatedValidator asks it first:
an instance it accepts has no errors, and only one it refuses is walked by jsonschema, whose errors (their messages,
paths and `best_match`) every report and the server's 422 bodies are written from. The gate is never laxer than
jsonschema: tests/contract/test_fast_validation.py holds both to the same verdict over the contract's examples, the
protocols' recorded streams and thousands of broken variants of them; where jsonschema-rs is stricter (or cannot
read an instance at all), jsonschema decides.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from jsonschema.exceptions import ValidationError
from jsonschema.protocols import Validator


def compiled(schema: Any, resources: dict[str, Any] | None = None, *, formats: bool) -> Any | None:
    """jsonschema-rs's validator of `schema` (its $refs resolved in `resources`, URI -> contents), or None when it
    cannot compile it or is not installed (jsonschema then validates alone)."""
    try:
        import jsonschema_rs  # ours, but not in every environment that loads the contract (a peer's)

        registry = jsonschema_rs.Registry(list(resources.items())) if resources else None
        return jsonschema_rs.validator_for(schema, registry=registry, validate_formats=formats)
    except Exception:  # noqa: BLE001 - a schema jsonschema-rs cannot read is validated by jsonschema alone
        return None


def surely_valid(fast: Any | None, instance: Any) -> bool:
    """True only when jsonschema-rs accepts `instance`; False when it refuses it or cannot read it (a Python object
    that is no JSON value, an integer beyond 64 bits)."""
    if fast is None:
        return False
    try:
        return bool(fast.is_valid(instance))
    except Exception:  # noqa: BLE001 - jsonschema decides
        return False


class GatedValidator:
    """A jsonschema validator (`full`) behind jsonschema-rs's check (`fast`): iter_errors and is_valid answer as
    `full` does; every other attribute is `full`'s."""

    def __init__(self, full: Validator, fast: Any | None) -> None:
        self.full, self.fast = full, fast

    def iter_errors(self, instance: Any) -> Iterator[ValidationError]:
        if surely_valid(self.fast, instance):
            return iter(())
        return self.full.iter_errors(instance)

    def is_valid(self, instance: Any) -> bool:
        return surely_valid(self.fast, instance) or self.full.is_valid(instance)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.full, name)
