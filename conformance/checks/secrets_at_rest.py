"""Secrets (SECRET-*, capability db_access): no LLM API key and no bearer token in the project database or its
WAL, in the clear or base64-encoded; a positive control proves the scan can see what the server stored."""

from __future__ import annotations

import asyncio
import base64
import uuid

from conformance.checks import check
from conformance.checks.context import CheckContext
from conformance.checks.support import require_db_access, scenario_or, turn
from conformance.errors import NotTestable
from conformance.harness import project_db


def _secret_forms(secret: str) -> list[tuple[str, bytes]]:
    """The byte strings that betray `secret`: itself, and its standard and URL-safe base64 at the three
    alignments (prefixed by 0, 1 and 2 bytes), without the edge characters that depend on neighbours."""
    raw = secret.encode()
    forms = [("in the clear", raw)]
    for offset in range(3):
        encoded = base64.b64encode(b"\x00" * offset + raw).rstrip(b"=")
        start = -(-8 * offset // 6)  # the first character made only of the secret's bits
        end = 8 * (offset + len(raw)) // 6  # past the last character made only of the secret's bits
        core = encoded[start:end]
        forms.append((f"base64 (alignment {offset})", core))
        urlsafe = core.replace(b"+", b"-").replace(b"/", b"_")
        if urlsafe != core:
            forms.append((f"URL-safe base64 (alignment {offset})", urlsafe))
    return forms


def _self_test_forms() -> None:
    """The base64 forms must be found inside the encoding of any text holding the secret, at any offset."""
    secret = "sk-self-test-" + uuid.uuid4().hex
    for before in range(6):
        text = b"x" * before + secret.encode() + b"yz"
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            encoded = encode(text)
            if not any(form in encoded for label, form in _secret_forms(secret) if label != "in the clear"):
                raise AssertionError(f"the base64 scan misses a secret at offset {before} ({encode.__name__})")


def _scan(files: dict[str, bytes], secrets: dict[str, str]) -> list[str]:
    """Where each secret (description -> value) appears, in any of its forms."""
    found = []
    for description, secret in secrets.items():
        for label, form in _secret_forms(secret):
            for name, data in files.items():
                at = data.find(form)
                if at >= 0:
                    found.append(f"{description} {label} in {name} at byte {at}")
    return found


def _redacted(secret: str) -> str:
    return f"{secret[:6]}... ({len(secret)} characters)"


@check("secrets_at_rest.scan")
async def no_secrets(ctx: CheckContext) -> None:
    require_db_access(ctx)
    _self_test_forms()
    marker = f"cs-marker-{uuid.uuid4().hex}"
    tool = scenario_or(ctx, "cs-tool", "cs-plain")
    turns = [("main", "cs-plain", marker), ("main", tool, "Tool turn"), ("other", "cs-plain", "Plain turn")]
    turns.append(("other", tool, "Tool turn"))
    for index, (user, script, text) in enumerate(turns):
        await turn(ctx, "SECRET-001", ctx.session_id(f"{user}-{index}"), script, text, user=user)
    path = ctx.env.database_path()

    def read_files() -> dict[str, bytes]:
        files = {}
        for candidate in [path, *(project_db.side_file(path, s) for s in project_db.SIDE_FILES)]:
            if candidate.exists():
                files[candidate.name] = candidate.read_bytes()
        return files

    files = await asyncio.to_thread(read_files)
    ctx.findings.require(path.name in files, "SECRET-001", f"after four completed turns there is no database at {path}")
    sizes = {name: len(data) for name, data in files.items()}
    control = _scan(files, {"the marker": marker})
    if not any("in the clear" in hit for hit in control):
        raise NotTestable(
            f"the positive control failed: the unique text {marker!r} of a user message is not in {sizes} "
            "(compressed or encrypted storage?), so a scan for secrets would prove nothing"
        )
    keys = {f"LLM API key #{i + 1} ({_redacted(k)})": k for i, k in enumerate(ctx.env.api_keys)}
    tokens = {f"the bearer token of {u.name} ({_redacted(u.token)})": u.token for u in ctx.env.users.values()}
    if keys:
        found = _scan(files, keys)
        ctx.findings.expect("SECRET-001", not found, f"{path} (files {sizes}): " + "; ".join(found))
    else:
        ctx.findings.not_testable(
            "SECRET-001", "the suite does not know the target's LLM API keys (llm.mode is not controller)"
        )
    found = _scan(files, tokens)
    ctx.findings.expect("SECRET-002", not found, f"{path} (files {sizes}): " + "; ".join(found))
