"""The constants the contract fixes (spec/constants.yaml) are data: valid, each citing the requirement that fixes
it and agreeing with that requirement's text, each read from its home in spec/; generated/constants.py holds them
and the session id has a schema and a model of its own."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pydantic import ValidationError

import gns3_copilot_generated.constants as generated
import gns3_copilot_spec as spec
from gns3_copilot_generated.api.session_id import SessionId

CONSTANTS = spec.load_constants()
REQUIREMENTS = {r["id"]: r for r in spec.load_requirements()["requirements"]}


def test_constants_file_is_valid_against_its_schema():
    validator = spec.schema_validator(spec.SPEC_DIR / "constants.schema.json")
    errors = list(validator.iter_errors(spec.load_document(spec.CONSTANTS_PATH)))
    assert not errors, [e.message for e in errors]


@pytest.mark.parametrize("name", sorted(CONSTANTS))
def test_each_constant_cites_a_live_requirement_whose_text_says_its_value(name: str):
    requirement = REQUIREMENTS.get(CONSTANTS[name]["requirement"])
    assert requirement is not None and "retired" not in requirement, CONSTANTS[name]["requirement"]
    value = spec.constant_values()[name]
    said = [*value.values(), *(k for k in value if isinstance(k, int))] if isinstance(value, dict) else [value]
    said = [_class_of(item) if isinstance(item, str) else item for item in said]  # a pattern: the text says its class
    words = set(re.findall(r"[\w./{}:-]+", requirement["text"].replace("`", " ")))
    for item in said:
        assert str(item) in requirement["text"], f"{name}: {item!r} is not in {requirement['id']}'s text"
        if isinstance(item, int):
            assert any(re.fullmatch(rf"\D*{item}\D*", w) for w in words), f"{name}: {item} not a number of the text"


def _class_of(value: str) -> str:
    """What a requirement's text says of a pattern `^[...]+$`: its character class."""
    match = re.fullmatch(r"\^(\[[^\]]+\])\+\$", value)
    return match[1] if match else value


def test_the_generated_module_holds_every_constant_and_nothing_else():
    names = {n for n in vars(generated) if n.isupper()}
    assert names == set(CONSTANTS)
    for name, value in spec.constant_values().items():
        assert getattr(generated, name) == value, name


def test_pointed_homes_are_where_the_values_live():
    """The homes: the message bounds in chat-request.json, the history limit in the `limit` parameter of
    openapi.yaml, the database location in the database contract."""
    assert spec.resolve_pointer(CONSTANTS["HISTORY_LIMIT_MAX"]["at"].rsplit("/", 2)[0])["name"] == "limit"
    request = spec.load_document(spec.SCHEMAS_DIR / "chat-request.json")["properties"]["message"]
    assert (generated.MESSAGE_MIN_LENGTH, generated.MESSAGE_MAX_LENGTH) == (request["minLength"], request["maxLength"])
    assert generated.DB_LOCATION == spec.load_document(spec.DB_DIR / "contract.yaml")["location"]


def test_initial_title_is_the_database_default(repo_root: Path):
    """The DDL cannot import it: the contract's schema and every schema of the reference server say it."""
    schemas = [spec.DB_DIR / "schema.sql", *(repo_root / "reference_server").rglob("*.sql")]
    with_sessions = [path for path in schemas if "CREATE TABLE IF NOT EXISTS chat_sessions" in path.read_text()]
    assert len(with_sessions) >= 2, schemas  # the contract's SQLite schema and the reference server's PostgreSQL one
    for path in with_sessions:
        titles = re.findall(r"\btitle TEXT NOT NULL DEFAULT '([^']*)'", path.read_text())
        assert titles == [generated.INITIAL_TITLE], (path, titles)


def test_channel_paths_are_the_channel_operations_of_openapi():
    prefix = spec.default_prefix()
    document = spec.load_openapi()
    channel_paths = {
        path
        for path, item in document["paths"].items()
        if any(isinstance(op, dict) and spec.is_channel_operation(op) for op in item.values())
    }
    assert channel_paths, "no operation carries the channels tag"
    for path in channel_paths:
        assert any(
            path == prefix + base or path.startswith(prefix + base + "/") for base in generated.CHANNEL_PATHS.values()
        ), path
    for base in generated.CHANNEL_PATHS.values():
        assert any(path == prefix + base or path.startswith(prefix + base + "/") for path in channel_paths), base
    capabilities = spec.load_requirements()["capabilities"]
    assert {f"channel_{name}" for name in generated.CHANNEL_PATHS} <= set(capabilities)


def test_openai_error_types_are_the_error_body_types():
    """The table is an extension of the error body's `type`, beside its enum, keyed by status (integers)."""
    body = spec.load_document(spec.CHANNELS_DIR / "openai-error.json")
    kind = body["properties"]["error"]["properties"]["type"]
    assert (
        CONSTANTS["OPENAI_ERROR_TYPES"]["at"]
        == "channels/openai-error.json#/properties/error/properties/type/x-type-by-status"
    )
    assert dict(generated.OPENAI_ERROR_TYPES) == {int(status): t for status, t in kind["x-type-by-status"].items()}
    assert generated.OPENAI_SERVER_ERROR_TYPE == kind["x-type-of-5xx"]
    assert {*generated.OPENAI_ERROR_TYPES.values(), generated.OPENAI_SERVER_ERROR_TYPE} == set(kind["enum"])
    assert all(isinstance(status, int) and 400 <= status < 500 for status in generated.OPENAI_ERROR_TYPES)


def test_only_decimal_keys_become_integers():
    assert spec._integer_keys({"400": "a", "5": "b"}) == {400: "a", 5: "b"}
    assert spec._integer_keys({"openai": "/x", "5": "b"}) == {"openai": "/x", "5": "b"}
    assert spec._integer_keys("400") == "400" and spec._integer_keys({}) == {}


def test_session_id_has_its_own_schema_and_model():
    schema = spec.load_document(spec.SCHEMAS_DIR / "session-id.json")
    assert schema["title"] == "SessionId"
    for ok in ("a", "0b0c2a5e-4a8e-4e55-9f0e-6a3f61f3d7a1", "x" * schema["maxLength"], "a.b:c_d-e"):
        assert SessionId.model_validate(ok).root == ok
    for bad in ("", "a b", "x" * (schema["maxLength"] + 1), "é"):
        with pytest.raises(ValidationError):
            SessionId.model_validate(bad)
    assert (generated.SESSION_ID_MAX_LENGTH, generated.SESSION_ID_PATTERN) == (schema["maxLength"], schema["pattern"])
    openapi = spec.load_document(spec.OPENAPI_PATH)
    assert openapi["components"]["parameters"]["SessionId"]["schema"] == {"$ref": "schemas/session-id.json"}
