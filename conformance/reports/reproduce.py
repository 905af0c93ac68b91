"""How to reproduce a requirement that did not pass, in every report: the command that reruns exactly its checks
with the run's seed, and a standalone replay of its evidence (the fake LLM with the suite's scripts, the token of
the user the exchange was sent as, the exchange as curl), so that it can be replayed without the suite."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from conformance.harness.findings import FAILING_WITHOUT_BASELINE, Outcome, Verdict
from conformance.harness.target import BUILTIN_TARGETS

# The verdicts whose entries carry a reproduction: every one that can fail a run, and the failures a run accepts.
REPRODUCED = FAILING_WITHOUT_BASELINE | {Verdict.WARN, Verdict.XFAIL}
SCRIPTS_DIR = "cs-scripts"
DEFAULT_PASSWORD = "conformance-pass-1"  # target.schema.json: auth.user_password's default
_TOKEN_OF = "python3 -c 'import json, sys; print(json.load(sys.stdin)[\"access_token\"])'"


def target_argument(target: Any) -> str:
    """What `--target` takes to name this target again: a built-in's name, or the file's path."""
    path = getattr(target, "path", None)
    if path is None:
        return target.name
    if Path(path).parent == BUILTIN_TARGETS.resolve():
        return Path(path).stem
    return shlex.quote(str(path))


def rerun_command(result: Any, requirement_id: str) -> str:
    return (
        f"copilot-conformance run --target {target_argument(result.target)} --only {requirement_id} "
        f"--seed {result.seed}"
    )


def _login(base_url: str, username: str, password_variable: str) -> str:
    body = f'{{\\"username\\": \\"{username}\\", \\"password\\": \\"${password_variable}\\"}}'
    return (
        f"curl -sS -X POST {shlex.quote(base_url + '/v3/access/users/authenticate')} "
        f"-H 'Content-Type: application/json' --data-binary \"{body}\" | {_TOKEN_OF}"
    )


def _token_lines(result: Any, role: str, authorization: str | None) -> list[str]:
    replay = result.replay
    auth = result.target.data.get("auth") or {}
    lines: list[str] = []
    if authorization == "Bearer $ADMIN_TOKEN":
        admin = (auth.get("admin") or {}).get("username", "admin")
        lines += [
            f"# $ADMIN_TOKEN: the controller admin `{admin}` of the target file (auth.admin), logged in:",
            "ADMIN_PASSWORD='...'  # auth.admin.password of the target file",
            f"ADMIN_TOKEN=$({_login(replay['base_url'], admin, 'ADMIN_PASSWORD')})",
        ]
    elif authorization == "Bearer $TOKEN":
        user = (replay.get("users") or {}).get(role)
        if user is None:
            lines.append(f"# $TOKEN: the token of the user `{role}`")
        elif user["username"] is None:
            lines += [
                f"# $TOKEN: the token of the user `{role}` in the target file ({user['token']})",
                "TOKEN='...'",
            ]
        else:
            kept = (
                "kept by this run (--keep)"
                if result.cleanup is not None and result.cleanup.kept
                else "removed at the end of this run: rerun with --keep to keep it"
            )
            password = auth.get("user_password", DEFAULT_PASSWORD)
            shown = DEFAULT_PASSWORD if password == DEFAULT_PASSWORD else "..."
            lines += [
                f"# $TOKEN: user `{role}` is {user['username']}, made by the suite ({kept}); its password is "
                "auth.user_password of the target file",
                f"PASSWORD='{shown}'",
                f"TOKEN=$({_login(replay['base_url'], user['username'], 'PASSWORD')})",
            ]
    return lines


def standalone(result: Any, evidence: dict[str, Any]) -> list[str]:
    """Shell lines that replay one exchange without the suite, against the server of the run."""
    replay = result.replay or {}
    if not evidence.get("reproduction") or not replay:
        return []
    port = replay.get("fake_llm_port")
    lines = []
    if "start" in result.target.data:
        lines.append(
            "# the suite started this server (start.command) and stopped it after the run: to replay, run the server "
            "yourself and point a target file's base_url at it"
        )
    lines += [
        "# 1. the fake LLM, serving the suite's scripts for this target, on the port the users' LLM configuration "
        "names:",
        f"copilot-conformance scripts export {SCRIPTS_DIR} --target {target_argument(result.target)}",
        f"python -m fake_llm serve --scripts {SCRIPTS_DIR} --port {port} &",
        f"until curl -sf http://127.0.0.1:{port}/v1/models >/dev/null; do sleep 0.2; done",
    ]
    request = evidence.get("request") or {}
    tokens = _token_lines(result, request.get("as_user", "main"), _authorization(evidence["reproduction"]))
    if tokens:
        lines += ["# 2. the bearer token the exchange was sent with:", *tokens]
    lines += ["# 3. the exchange, then the fake LLM stopped:", evidence["reproduction"], "kill %1"]
    return lines


def _authorization(curl: str) -> str | None:
    for placeholder in ("Bearer $ADMIN_TOKEN", "Bearer $TOKEN"):
        if f'"Authorization: {placeholder}"' in curl:
            return placeholder
    return None


def reproduction(result: Any, entry: dict[str, Any]) -> dict[str, Any] | None:
    """The `reproduce` block of a report entry: None for verdicts that need none (PASS, N/A, ...)."""
    if entry["verdict"] not in REPRODUCED or not getattr(result, "checks", None):
        return None
    block: dict[str, Any] = {"rerun": rerun_command(result, entry["id"]), "standalone": [], "check": None}
    for finding in entry["findings"]:
        if finding["outcome"] == Outcome.PASSED or not finding["evidence"]:
            continue
        lines = standalone(result, finding["evidence"][-1])
        if lines:
            block["standalone"] = lines
            block["check"] = finding["check"]
            break
    return block
