"""Mutants of the answers and of input validation, second generation, made by a method: for each rule of
sessions, listing, history, errors, projects and input, one mutant per state of conformance/coverage.yaml that a
real implementer could get wrong. Most rewrite an answer on its way out (tests/quality/asgi_rewrite.py) or a
request body on its way in, so that each breaks exactly one thing. Registered in MUTANTS by tests/quality/mutants.py.
"""

from __future__ import annotations

import json

from gns3_copilot_generated.constants import INITIAL_TITLE, MESSAGE_MAX_LENGTH, MESSAGE_MIN_LENGTH

from .asgi_rewrite import edit_request_body, rewrite_answers
from .mutant_kit import mutant

HISTORY = r"/chat/sessions/[^/]+/history$"
LISTING = r"/chat/sessions$"
STREAM = r"/chat/stream$"
PIN = r"/chat/sessions/[^/]+/pin$"
SESSION = r"/chat/sessions/[^/]+$"
ABORT = r"/chat/sessions/[^/]+/abort$"


def _on_200(change):
    """A change of 200 JSON bodies only."""
    return lambda status, body, _: (
        (status, change(body))
        if status == 200 and not isinstance(body, bytes)
        else (
            status,
            body,
        )
    )


# --- history -------------------------------------------------------------------------------------------------------


@mutant(
    "history-newest-first",
    "the history lists the newest message first",
    {"HISTORY-001"},
    # every rule that reads the history oldest first: windows, ids of a window, tool messages after their call,
    # the user messages' order, the turn after a delete, each turn whole
    {
        "HISTORY-003",
        "HISTORY-005",
        "HISTORY-006",
        "HISTORY-009",
        "STREAM-CONTENT-001",
        "SESSION-007",
        "CONCURRENCY-002",
    },
)
def _history_newest_first() -> None:
    rewrite_answers("GET", HISTORY, _on_200(lambda b: {**b, "messages": b["messages"][::-1]}))


def _arguments_as_objects(body):
    for message in body["messages"]:
        for call in message.get("tool_calls") or []:
            call["function"]["arguments"] = json.loads(call["function"]["arguments"])
    return body


@mutant(
    "history-arguments-as-objects",
    "tool call arguments in the history are JSON objects, not strings",
    {"HISTORY-004"},
    {"CONTRACT-001"},
)
def _history_arguments_as_objects() -> None:
    rewrite_answers("GET", HISTORY, _on_200(_arguments_as_objects))


def _tool_messages_without_name(body):
    for message in body["messages"]:
        if message["role"] == "tool":
            message.pop("name", None)
    return body


@mutant("tool-message-without-name", "tool messages in the history have no `name`", {"HISTORY-005"}, {"CONTRACT-001"})
def _tool_message_without_name() -> None:
    rewrite_answers("GET", HISTORY, _on_200(_tool_messages_without_name))


@mutant("history-llm-calls-zero", "the history's `llm_calls` is always 0", {"HISTORY-008"})
def _history_llm_calls_zero() -> None:
    rewrite_answers("GET", HISTORY, _on_200(lambda b: {**b, "llm_calls": 0}))


@mutant("history-limit-ignored", "`limit` is validated but every message is returned", {"HISTORY-006"})
def _history_limit_ignored() -> None:
    import reference_server.prelude as routes

    original = routes.history_limit

    def history_limit(request):
        original(request)  # still 422 for a bad value
        return 1000

    routes.history_limit = history_limit


@mutant(
    "history-limit-400",
    "an invalid `limit` is answered 400, not 422",
    {"HISTORY-007"},
    {"CONTRACT-001"},
)
def _history_limit_400() -> None:
    def change(status, body, _):
        if status == 422 and isinstance(body, dict) and "limit" in json.dumps(body.get("details")):
            return 400, {**body, "code": "bad_request"}
        return status, body

    rewrite_answers("GET", HISTORY, change)


# --- listing, pin, time ----------------------------------------------------------------------------------------------


@mutant("listing-pinned-last", "the listing puts pinned sessions after the others", {"LIST-002"})
def _listing_pinned_last() -> None:
    rewrite_answers("GET", LISTING, _on_200(lambda b: sorted(b, key=lambda s: s["pinned"])))


@mutant("timestamps-without-z", "listed timestamps have no time zone suffix", {"TIME-001"})
def _timestamps_without_z() -> None:
    def strip(sessions):
        for session in sessions:
            for field in ("created_at", "updated_at", "last_message_at"):
                if isinstance(session.get(field), str):
                    session[field] = session[field].removesuffix("Z")
        return sessions

    rewrite_answers("GET", LISTING, _on_200(strip))


@mutant(
    "pin-answers-unpinned",
    "PUT .../pin answers the session with `pinned: false`",
    {"PIN-001"},
    {"MIGRATION-002"},  # legacy sessions are pinned through the same endpoint
)
def _pin_answers_unpinned() -> None:
    rewrite_answers("PUT", PIN, _on_200(lambda b: {**b, "pinned": False}))


@mutant("rename-answers-old-title", "PATCH answers the session with its title before the rename", {"SESSION-004"})
def _rename_answers_old_title() -> None:
    rewrite_answers("PATCH", SESSION, _on_200(lambda b: {**b, "title": INITIAL_TITLE}))


@mutant(
    "delete-answers-200",
    "DELETE of a session answers 200 with a body, not 204",
    {"SESSION-006"},
    {"CONTRACT-001", "DB-006", "SESSION-007"},  # both need the 204 first; SESSION-007 is NOT TESTABLE
)
def _delete_answers_200() -> None:
    rewrite_answers("DELETE", SESSION, lambda s, b, _: (200, {"deleted": True}) if s == 204 else (s, b))


@mutant("abort-idle-says-aborted", "aborting an idle session answers `aborted: true`", {"ABORT-005"})
def _abort_idle_says_aborted() -> None:
    rewrite_answers("POST", ABORT, _on_200(lambda b: {**b, "aborted": True}))


# --- errors and projects -------------------------------------------------------------------------------------------


@mutant("error-code-renamed", "an unknown project is answered with the code `not_found`", {"ERROR-002"})
def _error_code_renamed() -> None:
    def change(status, body, _):
        if isinstance(body, dict) and body.get("code") == "project_not_found":
            return status, {**body, "code": "not_found"}
        return status, body

    rewrite_answers("GET", LISTING, change)


@mutant(
    "validation-error-without-details",
    "422 answers to a stream request have no `details`",
    {"INPUT-007"},
    {"ERROR-001"},  # a 422 body without details is not the documented validation error body
)
def _validation_error_without_details() -> None:
    def change(status, body, _):
        if status == 422 and isinstance(body, dict):
            return status, {k: v for k, v in body.items() if k != "details"}
        return status, body

    rewrite_answers("POST", STREAM, change)


@mutant("unknown-project-403", "an unknown project is answered 403, like a closed one", {"PROJECT-001"})
def _unknown_project_403() -> None:
    def change(status, body, _):
        if status == 404 and isinstance(body, dict) and body.get("code") == "project_not_found":
            return 403, {**body, "code": "project_not_opened"}
        return status, body

    for method in ("GET", "POST", "PATCH", "PUT", "DELETE"):
        rewrite_answers(method, r"/chat", change)


@mutant(
    "busy-answers-429",
    "a stream request for a busy session is answered 429, not 409",
    {"CONCURRENCY-001"},
    {"CONTRACT-001"},
)
def _busy_answers_429() -> None:
    rewrite_answers("POST", STREAM, lambda s, b, _: (429, b) if s == 409 else (s, b))


@mutant(
    "malformed-json-500",
    "a body that is not JSON is answered 500",
    {"INPUT-009"},
    {"CONTRACT-001"},
)
def _malformed_json_500() -> None:
    def change(status, body, _):
        if isinstance(body, dict) and body.get("code") == "invalid_json":
            return 500, b"Internal Server Error"
        return status, body

    for method in ("POST", "PATCH"):
        rewrite_answers(method, r"/chat/(stream|sessions/[^/]+)$", change)


# --- the controller a chat client relies on ---------------------------------------------------------------------------


def _values_flat(status, body, _):
    if status in (200, 201) and isinstance(body, dict) and isinstance(body.get("config"), dict):
        body = {**{k: v for k, v in body.items() if k != "config"}, **body["config"]}
    return status, body


@mutant(
    "llm-config-flat",
    "a new LLM configuration is answered with its values flat, not under `config` as gns3-server 3.1 nests them",
    {"CONTROLLER-001"},
)
def _llm_config_flat() -> None:
    rewrite_answers("POST", r"/llm-model-configs$", _values_flat)


@mutant(
    "login-refusal-without-code",
    "a refused log-in is answered 401 with FastAPI's `{detail}` rather than the contract's error body",
    {"CONTROLLER-001"},
)
def _login_refusal_without_code() -> None:
    rewrite_answers(
        "POST",
        r"/v3/access/users/authenticate$",
        lambda status, body, _: (status, {"detail": body["message"]}) if status == 401 else (status, body),
    )


# --- input: values the contract refuses, accepted ---------------------------------------------------------------------


def _accept(change) -> None:
    edit_request_body(STREAM, change)


@mutant(
    "message-length-unchecked",
    "an empty message and one of 100001 characters (one over the bound) are served",
    {"INPUT-001"},
)
def _message_length_unchecked() -> None:
    def change(body):
        message = body.get("message")
        if isinstance(message, str) and not MESSAGE_MIN_LENGTH <= len(message) <= MESSAGE_MAX_LENGTH:
            return {**body, "message": "x" + message[-200:]}
        return None

    _accept(change)


@mutant("any-mode-accepted", "an unknown `mode` is served as text", {"INPUT-002"})
def _any_mode_accepted() -> None:
    _accept(lambda b: {**b, "mode": "text"} if "mode" in b and b["mode"] != "text" else None)


@mutant("temperature-range-unchecked", "a temperature outside 0..2 is clamped and served", {"INPUT-003"})
def _temperature_range_unchecked() -> None:
    def change(body):
        value = body.get("temperature")
        if isinstance(value, int | float) and not isinstance(value, bool) and not 0 <= value <= 2:
            return {**body, "temperature": min(2.0, max(0.0, value))}
        return None

    _accept(change)


@mutant("stream-false-accepted", "`stream: false` is served as a stream", {"INPUT-004"})
def _stream_false_accepted() -> None:
    _accept(lambda b: {k: v for k, v in b.items() if k != "stream"} if b.get("stream") is False else None)


@mutant("unknown-members-refused", "a stream request with an unknown member is refused", {"INPUT-008"})
def _unknown_members_refused() -> None:
    _accept(lambda b: {**b, "message": ""} if "unknown_member" in b else None)


# --- sessions, titles, authentication, heartbeat --------------------------------------------------------------------


@mutant("dot-session-ids-served", "session ids `.` and `..` are served (in a session of another id)", {"SESSION-003"})
def _dot_session_ids_served() -> None:
    dots = (".", "..")
    _accept(lambda b: {**b, "session_id": f"dots-{len(b['session_id'])}"} if b.get("session_id") in dots else None)


@mutant("session-id-not-a-uuid", "a new session's generated id is `session-<number>`, not a UUID", {"SESSION-001"})
def _session_id_not_a_uuid() -> None:
    import itertools
    from types import SimpleNamespace

    import reference_server.turns.core as turns  # where every channel's new session gets its id

    numbers = itertools.count(1)
    turns.uuid = SimpleNamespace(uuid4=lambda: f"session-{next(numbers)}")


@mutant(
    "initial-title-untitled",
    "a session without a generated title is listed as `Untitled`",
    {"TITLE-001"},
    {"TITLE-006", "MIGRATION-001"},  # legacy sessions titled New Conversation read back otherwise
)
def _initial_title_untitled() -> None:
    def change(sessions):
        for session in sessions:
            if session["title"] == INITIAL_TITLE:
                session["title"] = "Untitled"
        return sessions

    rewrite_answers("GET", LISTING, _on_200(change))


@mutant("closed-project-404", "a closed project is answered 404, like an unknown one", {"PROJECT-002"})
def _closed_project_404() -> None:
    def change(status, body, _):
        if status == 403 and isinstance(body, dict) and body.get("code") == "project_not_opened":
            return 404, {**body, "code": "project_not_found"}
        return status, body

    for method in ("GET", "POST", "PATCH", "PUT", "DELETE"):
        rewrite_answers(method, r"/chat", change)


@mutant("heartbeat-late", "heartbeats come after 2.5 intervals of silence, not one", {"HEARTBEAT-003"})
def _heartbeat_late() -> None:
    from reference_server.agent.turn import Turn

    original = Turn.__init__

    def __init__(self, *args, **kwargs):
        original(self, *args, **kwargs)
        self.heartbeat_interval *= 2.2

    Turn.__init__ = __init__


@mutant(
    "unauthorized-plain-text",
    "a 401 of the chat API is answered as plain text, not the error body",
    {"ERROR-001"},
    {"ERROR-002"},  # the code cannot be read from a body that is not JSON
)
def _unauthorized_plain_text() -> None:
    def change(status, body, _):
        return (401, b"Unauthorized") if status == 401 else (status, body)

    for method in ("GET", "POST", "PATCH", "PUT", "DELETE"):
        rewrite_answers(method, r"/chat", change)
