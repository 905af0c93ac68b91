"""Hostile input at every chat operation of spec/openapi.yaml and every controller route of the app, with and
without a valid token: deep nesting, lone surrogates, invalid UTF-8, not JSON, wrong JSON types per field, bodies
over the size limit, odd `limit` values, wrong methods, odd path ids.

Whatever comes in: no 5xx; every 4xx has the error body `{message, code}` (ERROR-001, ERROR-003); a caller without
a valid token gets 401 before anything else (AUTH-001), a 413 size refusal excepted (INPUT-010); a 405 lists every
method the path serves in `Allow`.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import Any
from urllib.parse import unquote

import httpx
import pytest
from starlette.routing import compile_path

from gns3_copilot_generated.constants import HISTORY_LIMIT_DEFAULT, HISTORY_LIMIT_MAX, HISTORY_LIMIT_MIN
from reference_server.app import create_app
from reference_server.body_limit import MAX_BODY_BYTES
from reference_server.errors import ApiError
from reference_server.json_input import MAX_DEPTH
from reference_server.settings import Settings

from .conftest import HTTP_METHODS, World, json_type_of, problems_of

pytestmark = pytest.mark.anyio

JSON = {"Content-Type": "application/json"}
FORGED = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4IiwiZXhwIjo0MTAyNDQ0ODAwfQ.c2lnbmF0dXJl"
NO_TOKENS = [
    {},
    {"Authorization": "Bearer not-a-jwt"},
    {"Authorization": f"Bearer {FORGED}"},
    {"Authorization": "Basic YWRtaW46YWRtaW4="},
]


def no_token(index: int) -> dict[str, str]:
    return NO_TOKENS[index % len(NO_TOKENS)]


async def unauthenticated_problems(
    world: World, endpoint, raw: bytes, index: int, path: str | None = None
) -> list[str]:
    """The same body sent without a valid token: an authenticated endpoint must answer 401 before reading it."""
    if not endpoint.authenticated:
        return []
    headers = {**no_token(index), **JSON}
    response = await world.client.request(endpoint.method, path or world.path(endpoint), content=raw, headers=headers)
    return problems_of(response, want_401=True)


def spoiled(body: dict[str, Any], member: str, raw_value: bytes) -> bytes:
    """`body` as JSON text plus one member whose value is written as is (json.dumps would refuse it, or recurse)."""
    head = json.dumps(body)[:-1] + (", " if body else "") + json.dumps(member) + ": "
    return head.encode() + raw_value + b"}"


# Bodies no endpoint can take: 400 invalid_json wherever a body is read, for chat and controller alike.
UNTAKEABLE: dict[str, Callable[[dict[str, Any]], bytes]] = {
    "not JSON": lambda b: b"{not json",
    "cut short": lambda b: json.dumps(b).encode()[:-1],
    "arrays 1000 deep": lambda b: spoiled(b, "x", b"[" * 1000 + b"]" * 1000),
    "objects 1000 deep": lambda b: spoiled(b, "x", b'{"a":' * 1000 + b"1" + b"}" * 1000),
    "100000 unclosed arrays": lambda b: b"[" * 100_000,
    "one level past the nesting limit": lambda b: spoiled(b, "x", b"[" * MAX_DEPTH + b"]" * MAX_DEPTH),
    "invalid UTF-8": lambda b: spoiled(b, "x", b'"\xff\xfe"'),
    "overlong UTF-8": lambda b: spoiled(b, "x", b'"\xc0\xaf"'),
    "a surrogate encoded in UTF-8": lambda b: spoiled(b, "x", b'"\xed\xa0\x80"'),
    "a lone surrogate": lambda b: spoiled(b, "x", b'"\\ud800"'),
    "a lone surrogate as a member name": lambda b: spoiled(b, "\udc00", b"1"),
    "NaN": lambda b: spoiled(b, "x", b"NaN"),
    "-Infinity": lambda b: spoiled(b, "x", b"-Infinity"),
    "1e400": lambda b: spoiled(b, "x", b"1e400"),
    "a 5000-digit integer": lambda b: spoiled(b, "x", b"1" + b"0" * 5000),
}
# Bodies that are JSON, or nearly, but no request: refused somehow (400 or 422), never a 5xx.
ODD: dict[str, Callable[[dict[str, Any]], bytes]] = {
    "empty": lambda b: b"",
    "null": lambda b: b"null",
    "an array": lambda b: b"[]",
    "a string": lambda b: b'"text"',
    "a number": lambda b: b"1",
    "a NUL byte": lambda b: b"\x00",
    "UTF-16": lambda b: json.dumps({"x": 1}).encode("utf-16"),
    "a NUL character in a member": lambda b: spoiled(b, "x", b'"\\u0000"'),
}


def report(problems: list[str], sent: int) -> str:
    return f"{len(problems)} problem(s) in {sent} requests:\n" + "\n".join(problems[:25])


@pytest.mark.covers("INPUT-009", "ERROR-001", "ERROR-003", "AUTH-001")
async def test_hostile_bodies_at_every_endpoint(world: World):
    problems, sent = [], 0
    for endpoint in world.endpoints:
        reads_body = endpoint.body is not None
        path = world.path(endpoint) if reads_body else world.path(endpoint, **world.unknown_ids(endpoint))
        for name, make in {**UNTAKEABLE, **ODD}.items():
            raw = make(world.body(endpoint))
            token = await world.token_for(endpoint)
            response = await world.client.request(endpoint.method, path, content=raw, headers={**token, **JSON})
            found = problems_of(response, want_401=False)
            if reads_body and name in UNTAKEABLE and (response.status_code != 400 or _code(response) != "invalid_json"):
                found.append(
                    f"{endpoint} with {name}: {response.status_code} {response.text[:120]}, not 400 invalid_json"
                )
            found += await unauthenticated_problems(world, endpoint, raw, sent, path)
            problems += [f"[{name}] {p}" for p in found]
            sent += 2
    assert len(world.endpoints) >= 30 and not problems, report(problems, sent)


async def test_lone_surrogates_in_every_string_field(world: World):
    problems, sent = [], 0
    for endpoint in world.endpoints:
        for member in [m for m, types in endpoint.fields.items() if "string" in types]:
            for value in ("\ud800", "a\udfffb", "\udbff\udbff"):
                raw = json.dumps(world.body(endpoint, **{member: value})).encode()  # escaped: "\ud800"
                response = await world.client.request(
                    endpoint.method, world.path(endpoint), content=raw, headers={**world.token, **JSON}
                )
                found = problems_of(response, want_401=False)
                if _code(response) != "invalid_json" or "surrogate" not in response.json()["message"]:
                    found.append(
                        f"{response.status_code} {response.text[:120]}, not 400 invalid_json naming the surrogate"
                    )
                found += await unauthenticated_problems(world, endpoint, raw, sent)
                problems += [f"[{endpoint} {member}={value!r}] {p}" for p in found]
                sent += 2
    assert sent > 40 and not problems, report(problems, sent)


# A value of each JSON type, several where lax parsers coerce: "0.5" and "1" to numbers, 1 and 0 to booleans.
SAMPLES = ["0.5", "1", "true", "", 1, 0, 0.5, True, False, None, [], [1], {}, {"a": 1}]


def wrong_for(types: set[str], value: Any) -> bool:
    kind = json_type_of(value)
    return kind not in types and not (kind == "integer" and "number" in types)


@pytest.mark.covers("INPUT-003", "INPUT-004", "INPUT-007")
async def test_wrong_json_types_per_field(world: World):
    problems, sent = [], 0
    for endpoint in world.endpoints:
        for member, types in endpoint.fields.items():
            for value in [v for v in SAMPLES if wrong_for(types, v)]:
                raw = json.dumps(world.body(endpoint, **{member: value})).encode()
                response = await world.client.request(
                    endpoint.method, world.path(endpoint), content=raw, headers={**world.token, **JSON}
                )
                found = problems_of(response, want_401=False)
                locs = (
                    [e["loc"] for e in response.json().get("details", {}).get("errors", [])]
                    if response.status_code == 422
                    else []
                )
                if ["body", member] not in locs:
                    found.append(f"{response.status_code} {response.text[:160]}, not 422 naming body.{member}")
                found += await unauthenticated_problems(world, endpoint, raw, sent)
                problems += [f"[{endpoint} {member}={value!r}] {p}" for p in found]
                sent += 2
    assert sent > 300 and not problems, report(problems, sent)


class Chunks:
    """A body sent in 64 KiB chunks (chunked: no Content-Length, unless one is given), counting what was read."""

    def __init__(self, total: int, size: int = 64 * 1024) -> None:
        self.total, self.size, self.read = total, size, 0

    async def __aiter__(self) -> AsyncIterator[bytes]:
        sent = 0
        while sent < self.total:
            chunk = b" " * min(self.size, self.total - sent)
            self.read += len(chunk)
            sent += len(chunk)
            yield chunk


@pytest.mark.covers("INPUT-010")
async def test_bodies_over_the_limit_are_413_unread(world: World):
    problems, sent = [], 0
    for endpoint in world.endpoints:
        reads_body = endpoint.body is not None
        token = await world.token_for(endpoint)
        token_headers = [(token, False)] + ([(no_token(sent), True)] if endpoint.authenticated else [])
        for headers, want_401 in token_headers:
            # A Content-Length over the limit: refused at once, before authentication, the body never read.
            declared = Chunks(MAX_BODY_BYTES + 1)
            response = await world.client.request(
                endpoint.method,
                world.path(endpoint),
                content=declared,
                headers={**headers, **JSON, "Content-Length": str(MAX_BODY_BYTES + 1)},
            )
            found = problems_of(response, want_401=False)
            if response.status_code != 413 or _code(response) != "payload_too_large" or declared.read:
                found.append(f"Content-Length over the limit: {response.status_code}, {declared.read} bytes read")
            # Chunked: refused once the limit is passed, where the body is read (a body-less endpoint never reads it).
            chunked = Chunks(4 * MAX_BODY_BYTES)
            path = world.path(endpoint) if reads_body else world.path(endpoint, **world.unknown_ids(endpoint))
            response = await world.client.request(endpoint.method, path, content=chunked, headers={**headers, **JSON})
            found += problems_of(response, want_401=want_401)
            if (
                reads_body
                and response.status_code != 401
                and (response.status_code != 413 or chunked.read > MAX_BODY_BYTES + chunked.size)
            ):
                found.append(f"chunked over the limit: {response.status_code}, {chunked.read} bytes read")
            problems += [f"[{endpoint}] {p}" for p in found]
            sent += 2
    assert not problems, report(problems, sent)


async def test_the_limit_itself_is_accepted(world: World):
    rename = f"/v3/projects/{world.ids['project_id']}/chat/sessions/never-created"
    padding = b" " * (MAX_BODY_BYTES - len(b'{"title": "t"}'))
    for content in (b'{"title": "t"}' + padding, Chunks(0)):
        if isinstance(content, Chunks):  # the same limit, chunked
            content = _chunked(b'{"title": "t"}' + padding)
        response = await world.client.patch(rename, content=content, headers={**world.token, **JSON})
        assert response.status_code == 404 and _code(response) == "session_not_found", response.text  # read, taken
    over = await world.client.patch(rename, content=b'{"title": "t"}' + padding + b" ", headers={**world.token, **JSON})
    assert over.status_code == 413 and _code(over) == "payload_too_large"


def _chunked(data: bytes) -> AsyncIterator[bytes]:
    async def chunks() -> AsyncIterator[bytes]:
        for start in range(0, len(data), 64 * 1024):
            yield data[start : start + 64 * 1024]

    return chunks()


ODD_LIMITS = [
    str(HISTORY_LIMIT_MIN - 1),
    str(HISTORY_LIMIT_MAX + 1),
    "-1",
    "+5",
    "05",
    "007",
    " 5",
    "5 ",
    "1_000",
    "5.0",
    "1e2",
    "0x10",
    "",
    "abc",
    "\u0665",
    "\uff15",
    "9" * 5000,
    "5\n",
    "true",
    "null",
    "[5]",
]


@pytest.mark.covers("HISTORY-007")
async def test_history_limit_must_be_a_canonical_integer(world: World):
    history = f"/v3/projects/{world.ids['project_id']}/chat/sessions/{world.ids['session_id']}/history"
    problems = []
    for params in [{"limit": value} for value in ODD_LIMITS] + [[("limit", "5"), ("limit", "6")]]:
        response = await world.client.get(history, params=params, headers=world.token)
        found = problems_of(response, want_401=False)
        if response.status_code != 422 or response.json()["details"]["errors"][0]["loc"] != ["query", "limit"]:
            found.append(f"{response.status_code}, not 422 naming query.limit")
        found += problems_of(
            await world.client.get(history, params=params, headers=no_token(len(problems))), want_401=True
        )
        problems += [f"[limit {params!r}] {p}" for p in found]
    for value in map(str, (HISTORY_LIMIT_MIN, HISTORY_LIMIT_DEFAULT, HISTORY_LIMIT_MAX)):
        response = await world.client.get(history, params={"limit": value}, headers=world.token)
        if response.status_code != 200:
            problems.append(f"limit={value}: {response.status_code}")
    assert not problems, report(problems, 2 * len(ODD_LIMITS) + 5)


async def test_wrong_methods_get_405_listing_every_method(world: World):
    problems, sent = [], 0
    for template in sorted({template for template, _ in world.routes}):
        path = template.format(**world.ids)
        allowed = world.allowed(path)
        for method in [m for m in (*HTTP_METHODS, "TRACE") if m not in allowed]:
            for headers in (world.token, no_token(sent)):  # the path has no such endpoint: 405, token or not
                response = await world.client.request(method, path, headers=headers)
                found = problems_of(response, want_401=False)
                listed = {m.strip() for m in response.headers.get("allow", "").split(",") if m.strip()}
                if response.status_code != 405 or listed != allowed:
                    found.append(f"{response.status_code} with Allow {sorted(listed)}, not 405 with {sorted(allowed)}")
                problems += [f"[{method} {template}] {p}" for p in found]
                sent += 1
    assert sent > 100 and not problems, report(problems, sent)


# Already percent-encoded: dots, NUL, a UTF-8-encoded surrogate, bytes that are not UTF-8, a space, quotes, a slash.
ODD_IDS = [
    "x",
    "0",
    "-1",
    "%2E%2E",  # the server sees ".." (httpx drops a literal ".." segment before sending)
    "%00",
    "%ED%A0%80",
    "%FF%FE",
    "%C3%A9",
    "a%20b",
    "%27%20OR%201%3D1%20--",
    "a%2Fb",
    "x" * 5000,
    "00000000-0000-0000-0000-000000000000",
    "%F0%9F%98%80",
]


async def test_odd_path_ids(world: World):
    problems, sent = [], 0
    for endpoint in world.endpoints:
        for name in [n for n in world.ids if "{" + n + "}" in endpoint.template]:
            for odd in ODD_IDS:
                # The others real: with one id of nothing no endpoint acts, whatever the method.
                path = world.path(endpoint, **{name: odd})
                raw = json.dumps(world.body(endpoint)).encode() if endpoint.body is not None else None
                found = []
                for headers in [world.token] + ([no_token(sent)] if endpoint.authenticated else []):
                    response = await world.client.request(
                        endpoint.method, path, content=raw, headers={**headers, **JSON}
                    )
                    decoded = unquote(response.request.url.path)
                    # An id with a slash ("a/b") takes the request off the endpoint: routing answers it, token or not,
                    # 405 where the new path serves other methods, else 404.
                    if compile_path(endpoint.template)[0].match(decoded):
                        found += problems_of(response, want_401=headers is not world.token)
                        if not 400 <= response.status_code < 500:
                            found.append(f"answered {response.status_code} for an id of nothing")
                    elif response.status_code != (405 if world.allowed(decoded) else 404):
                        found.append(f"{response.status_code} off the endpoint, at {decoded[:80]}")
                    else:
                        found += problems_of(response, want_401=False)
                    sent += 1
                problems += [f"[{endpoint} {name}={odd[:20]!r}] {p}" for p in found]
    assert sent > 300 and not problems, report(problems, sent)


def _code(response: httpx.Response) -> str | None:
    try:
        return response.json().get("code")
    except ValueError:
        return None


@pytest.mark.covers("ERROR-003")
async def test_an_unexpected_exception_is_a_500_error_body_and_a_logged_traceback(tmp_path, caplog):
    app = create_app(Settings(data_dir=tmp_path / "data"))

    @app.get("/v3/boom")
    async def boom() -> None:
        raise RuntimeError("a bug")

    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://reference") as client:
        response = await client.get("/v3/boom")
    assert response.status_code == 500 and problems_of(response, want_401=False) == ["GET /v3/boom: answered 500"]
    assert response.json() == {"message": "Internal server error", "code": "internal_error"}  # nothing of the bug
    [record] = [r for r in caplog.records if r.exc_info]
    assert "GET /v3/boom" in record.getMessage() and record.exc_info[0] is RuntimeError


def test_an_error_message_echoing_a_lone_surrogate_is_still_json():
    response = ApiError(400, "bad_request", "Path '\ud800' is unknown").response()
    assert json.loads(response.body)["message"] == "Path '\\ud800' is unknown"  # the escape, as text
