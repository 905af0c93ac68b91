"""The OpenAPI documents: the 3.2 contract and its derived 3.1 copy validate, refs resolve, examples validate."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any
from unittest.mock import ANY

import pytest
import yaml
from jsonschema import Draft202012Validator
from openapi_spec_validator.validation import OpenAPIV31SpecValidator, OpenAPIV32SpecValidator
from openapi_spec_validator.validation.exceptions import OpenAPIValidationError
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

import gns3_copilot_spec as spec

HTTP_METHODS = {"get", "put", "post", "delete", "patch", "head", "options", "trace", "query"}


def test_contract_is_valid_openapi_3_2():
    OpenAPIV32SpecValidator(spec.load_openapi(), base_uri=spec.OPENAPI_PATH.as_uri()).validate()


def test_contract_uses_3_2_features_that_3_1_rejects():
    """Guards the premise of the derived copy: itemSchema really is 3.2-only."""
    with pytest.raises(OpenAPIValidationError, match="3.2.0"):
        OpenAPIV31SpecValidator(spec.load_openapi(), base_uri=spec.OPENAPI_PATH.as_uri()).validate()


def test_derived_3_1_copy_is_valid_and_self_contained(repo_root: Path):
    document = _derived_copy(repo_root)
    assert document["openapi"].startswith("3.1")
    OpenAPIV31SpecValidator(document).validate()
    refs = list(_refs(document))
    assert refs and all(ref.startswith("#/") for ref in refs), [r for r in refs if not r.startswith("#/")]


def test_derived_copy_types_the_stream_as_the_event_union(repo_root: Path):
    document = _derived_copy(repo_root)
    stream = document["paths"]["/projects/{project_id}/chat/stream"]["post"]["responses"]["200"]["content"]
    assert stream["text/event-stream"]["schema"] == {"$ref": "#/components/schemas/ChatStreamEvent"}
    union = document["components"]["schemas"]["ChatStreamEvent"]
    assert union["discriminator"]["mapping"]["tool_call"] == "#/components/schemas/ToolCallEvent"


def test_derived_copy_puts_the_chat_root_in_a_server_variable(repo_root: Path):
    """One SDK for every known prefix: the chat API's paths are relative to `{origin}{chat_root}`, `chat_root` one of
    the known prefixes' roots; the controller's paths keep their full paths under `{origin}`."""
    document = _derived_copy(repo_root)
    known = [k["prefix"] for k in spec.load_openapi()["x-chat-path-prefix"]["known"]]
    roots = [prefix.removesuffix("/projects/{project_id}/chat") for prefix in known]
    assert roots == ["/v3", "/v3/copilot"]
    assert document["servers"] == [
        {
            "url": "{origin}",
            "description": ANY,
            "variables": {"origin": {"default": "http://127.0.0.1:3080", "description": ANY}},
        }
    ]
    contract = spec.load_openapi()
    operations = {}
    for path, item in contract["paths"].items():
        for method, operation in item.items():
            if method in HTTP_METHODS:
                operations[operation["operationId"]] = path
    assert len(document["paths"]) == len(contract["paths"])
    for operation_id, path in operations.items():
        if path.startswith(spec.default_prefix() + "/"):
            item = document["paths"][path.removeprefix("/v3")]
            (server,) = item["servers"]
            assert server["url"] == "{origin}{chat_root}"
            assert server["variables"]["chat_root"] == {"default": "/v3", "enum": roots, "description": ANY}
            assert server["variables"]["origin"]["default"] == "http://127.0.0.1:3080"
        else:
            item = document["paths"][path]
            assert spec.is_controller_operation(item[next(m for m in item if m in HTTP_METHODS)]), path
            assert "servers" not in item
        assert any(isinstance(op, dict) and op.get("operationId") == operation_id for op in item.values())


def test_derive_refuses_a_known_prefix_that_is_not_root_plus_chat(monkeypatch: pytest.MonkeyPatch):
    from tools import derive_openapi31

    contract = spec.load_openapi()
    contract["x-chat-path-prefix"]["known"].append({"prefix": "/api/chat/{project_id}", "used_by": "nobody"})
    monkeypatch.setattr(derive_openapi31.spec, "load_openapi", lambda: copy.deepcopy(contract))
    with pytest.raises(ValueError, match="/api/chat/{project_id}"):
        derive_openapi31.derive()


def test_derived_copy_types_each_channel_stream_by_its_official_event_schema(repo_root: Path):
    """The channels are in the copy, each SSE answer typed by the protocol's event, their official schemas bundled
    with one component per `$defs`/`definitions` entry, named after its file."""
    document = _derived_copy(repo_root)
    schemas = document["components"]["schemas"]
    streams = {
        "/projects/{project_id}/chat/openai/v1/chat/completions": "OpenaiChatCompletionChunk",
        "/projects/{project_id}/chat/openai/v1/responses": "OpenaiResponseStreamEvent",
        "/projects/{project_id}/chat/ui": "AiUiMessageChunk",
        "/projects/{project_id}/chat/ag-ui": "AgUiEvent",
    }
    for path, event in streams.items():
        media = document["paths"][path]["post"]["responses"]["200"]["content"]["text/event-stream"]
        assert media == {"schema": {"$ref": f"#/components/schemas/{event}"}}, path
        assert event in schemas
    assert not [name for name in schemas if name.endswith("Frame")]  # the 3.2 frames have no place in 3.1
    official = json.loads((spec.OFFICIAL_DIR / "openai_response_stream_event.json").read_text())
    for name in official["$defs"]:
        assert f"OpenaiResponseStreamEvent_{name}" in schemas
    chunk = json.loads((spec.OFFICIAL_DIR / "ai_ui_message_chunk.json").read_text())
    assert {f"AiUiMessageChunk_{name}" for name in chunk["definitions"]} <= set(schemas)
    names = set(schemas)
    assert all(ref.removeprefix("#/components/schemas/") in names for ref in _refs(document) if "/schemas/" in ref)
    assert not [key for schema in schemas.values() for key in ("$defs", "definitions", "$schema") if key in schema]


def test_every_ref_resolves():
    """Every $ref of the OpenAPI document and of every schema file points at something that exists."""
    checked = 0
    documents = [(spec.OPENAPI_PATH, spec.load_openapi())]
    for folder in spec.SCHEMA_FOLDERS:
        documents += [(path, spec.load_document(path)) for path in sorted(folder.glob("*.json"))]
    for path, document in documents:
        for ref in _refs(document):
            _resolve(path, document, ref)
            checked += 1
    assert checked > 50


def test_dangling_ref_is_caught_by_the_resolver():
    with pytest.raises((KeyError, FileNotFoundError)):
        _resolve(spec.OPENAPI_PATH, spec.load_openapi(), "schemas/no-such-file.json")
    with pytest.raises(KeyError):
        _resolve(spec.OPENAPI_PATH, spec.load_openapi(), "#/components/schemas/NoSuchSchema")


def test_every_operation_documents_auth_errors_and_bodies():
    document = spec.chat_api_only(spec.load_openapi())
    operations = [(p, m, op) for p, item in document["paths"].items() for m, op in item.items() if m in HTTP_METHODS]
    assert {op["operationId"] for _, _, op in operations} == {
        "streamChat",
        "listSessions",
        "getSessionHistory",
        "renameSession",
        "deleteSession",
        "pinSession",
        "unpinSession",
        "abortSessionTurn",
    }
    for path, method, operation in operations:
        statuses = set(operation["responses"])
        assert {"401", "403", "404", "422"} <= statuses, (method, path, statuses)
        for status, response in operation["responses"].items():
            response = _deref(document, response)
            if status.startswith(("4", "5")):
                schema = response["content"]["application/json"]["schema"]["$ref"]
                assert schema.endswith(("error-body.json", "validation-error-body.json")), (method, path, status)


def test_the_controller_operations_a_client_needs_are_in_their_own_tag_outside_the_chat_prefix():
    """Log in, who am I, projects, LLM configurations, and the administration the contract's rules name (a user's
    update, access entries): documented (tag `controller`), never under the chat prefix, refusing in the contract's
    error body; the chat API's walkers leave them out."""
    document = spec.load_openapi(prefix="/v3/copilot/projects/{project_id}/chat")
    controller = {
        (method, path): op
        for path, item in document["paths"].items()
        for method, op in item.items()
        if method in HTTP_METHODS and spec.is_controller_operation(op)
    }
    assert {op["operationId"] for op in controller.values()} == {
        "getVersion",
        "authenticate",
        "getCurrentUser",
        "listProjects",
        "createProject",
        "getProject",
        "deleteProject",
        "openProject",
        "closeProject",
        "listLlmModelConfigs",
        "createLlmModelConfig",
        "updateLlmModelConfig",
        "deleteLlmModelConfig",
        "updateUser",
        "deleteUser",
        "listAces",
        "createAce",
        "getAce",
        "updateAce",
        "deleteAce",
    }
    assert ("post", "/v3/projects/{project_id}/open") in controller  # not re-rooted with the chat prefix
    for (method, path), operation in controller.items():
        assert not path.startswith("/v3/copilot/"), path
        public = operation.get("security") == []
        assert public == (operation["operationId"] in {"getVersion", "authenticate"}), path
        assert public or "401" in operation["responses"], (method, path)
        for status, response in operation["responses"].items():
            if status.startswith(("4", "5")):
                schema = _deref(document, response)["content"]["application/json"]["schema"]["$ref"]
                assert schema.endswith(("error-body.json", "validation-error-body.json")), (method, path, status)
    chat_ids = {
        op["operationId"]
        for item in spec.chat_api_only(document)["paths"].values()
        for op in item.values()
        if isinstance(op, dict) and "operationId" in op
    }
    assert chat_ids.isdisjoint(op["operationId"] for op in controller.values())
    assert "UserId" not in spec.chat_api_only(document)["components"]["parameters"]


def test_channel_operations_answer_in_their_protocols_error_shapes():
    """The OpenAI channel refuses in OpenAI's error body, the UI and AG-UI channels in the contract's (CHANNEL-005)."""
    document = spec.load_openapi()
    channel = [
        (path, op)
        for path, item in document["paths"].items()
        for m, op in item.items()
        if m in HTTP_METHODS
        if spec.is_channel_operation(op)
    ]
    assert {op["operationId"] for _, op in channel} == {
        "openaiChatCompletions",
        "openaiResponses",
        "openaiListModels",
        "uiMessageStream",
        "uiSessionMessages",
        "agUiRun",
    }
    for path, operation in channel:
        assert {"401", "403", "404"} <= set(operation["responses"]), path
        for status, response in operation["responses"].items():
            if status.startswith(("4", "5")):
                schema = _deref(document, response)["content"]["application/json"]["schema"]
                refs = [one["$ref"] for one in schema.get("anyOf", [schema])]  # a 422: one body or the other
                expected = (
                    "openai-error.json" if "/openai/v1/" in path else ("error-body.json", "validation-error-body.json")
                )
                assert all(ref.endswith(expected) for ref in refs), (path, status, refs)
    assert spec.without_channels(document)["components"].get("responses", {}).get("OpenAIError") is None


def test_every_operation_documents_the_size_refusal():
    """The 413 of INPUT-010 may answer any request, before authentication (tests/hostile/test_inputs.py sends one to
    every endpoint): every operation lists it, so that a tool judging answers by the document takes it."""
    document = spec.load_openapi()
    missing = [
        op["operationId"]
        for item in document["paths"].values()
        for method, op in item.items()
        if method in HTTP_METHODS and "413" not in op["responses"]
    ]
    assert not missing, missing


def test_links_name_an_operation_and_a_member_of_the_answer():
    """Each link (what stateful tools follow) fills exactly the target's path parameters, each from a required member
    of the answer it leaves from or a path parameter of the request."""
    document = spec.load_openapi()
    paths = {
        op["operationId"]: path
        for path, item in document["paths"].items()
        for method, op in item.items()
        if method in HTTP_METHODS
    }
    links = 0
    for path, item in document["paths"].items():
        for op in (op for method, op in item.items() if method in HTTP_METHODS):
            for status, response in op["responses"].items():
                for name, link in _deref(document, response).get("links", {}).items():
                    target_path = paths[link["operationId"]]
                    assert set(link["parameters"]) == set(re.findall(r"{(\w+)}", target_path)), (name, target_path)
                    body = _deref(document, response)["content"]["application/json"]["schema"]["$ref"]
                    required = spec.load_document(spec.SPEC_DIR / body)["required"]
                    for value in link["parameters"].values():
                        member = value.removeprefix("$response.body#/")
                        asked = value.removeprefix("$request.path.")  # the same parameter of the request sent
                        assert member in required or asked in re.findall(r"{(\w+)}", path), (path, status, value)
                    links += 1
    assert links >= 6  # a project made, and an LLM configuration made, lead to the operations on them


def test_every_example_validates():
    """Media-type examples and schema `examples` all validate against the schema they illustrate."""
    document = spec.load_openapi()
    count = 0
    for schema, value, where in _media_examples(document):
        errors = list(_validator(schema).iter_errors(value))
        assert not errors, f"{where}: {[e.message for e in errors]}"
        count += 1
    for folder in spec.SCHEMA_FOLDERS:
        for path in sorted(folder.glob("*.json")):
            for value in spec.load_document(path).get("examples", []):
                errors = list(spec.schema_validator(path).iter_errors(value))
                assert not errors, f"{path.name}: {[e.message for e in errors]}"
                count += 1
    assert count >= 15


def test_stream_example_is_a_conforming_stream():
    from conformance.rules.framing import parse_stream
    from conformance.rules.stream_events import check_events

    document = spec.load_openapi()
    media = document["paths"][spec.default_prefix() + "/stream"]["post"]["responses"]["200"]["content"]
    for example in media["text/event-stream"]["examples"].values():
        parsed = parse_stream(example["value"])
        assert parsed.events and not parsed.violations + check_events(parsed.events)


def test_prefix_is_a_parameter_of_the_contract():
    gns3 = spec.load_openapi(prefix="/v3/copilot/projects/{project_id}/chat/")
    assert "/v3/copilot/projects/{project_id}/chat/sessions/{session_id}/pin" in gns3["paths"]
    assert not any(p.startswith("/v3/projects/{project_id}/chat") for p in gns3["paths"])
    assert len(gns3["paths"]) == len(spec.load_openapi()["paths"])
    known = [k["prefix"] for k in spec.load_openapi()["x-chat-path-prefix"]["known"]]
    assert spec.default_prefix() in known
    with pytest.raises(ValueError, match="project_id"):
        spec.load_openapi(prefix="/chat")


# --- helpers -------------------------------------------------------------------------------------------


def _derived_copy(repo_root: Path) -> dict[str, Any]:
    """generated/openapi-3.1.yaml, parsed by libyaml (it bundles the channels' official schemas: about 1 MB)."""
    return yaml.load((repo_root / "generated" / "openapi-3.1.yaml").read_text(), Loader=yaml.CSafeLoader)


def _refs(node: Any):
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                yield value
            elif key == "mapping" and isinstance(value, dict):
                yield from (v for v in value.values() if isinstance(v, str))
            else:
                yield from _refs(value)
    elif isinstance(node, list):
        for item in node:
            yield from _refs(item)


def _resolve(base: Path, document: Any, ref: str) -> Any:
    file_part, _, fragment = ref.partition("#")
    target = spec.load_document((base.parent / file_part).resolve()) if file_part else document
    for part in [p for p in fragment.split("/") if p]:
        if not isinstance(target, dict) or part not in target:
            raise KeyError(f"{ref} (from {base.name}) does not resolve at {part!r}")
        target = target[part]
    return target


def _deref(document: dict, node: dict) -> dict:
    while "$ref" in node and node["$ref"].startswith("#/"):
        node = _resolve(spec.OPENAPI_PATH, document, node["$ref"])
    return node


def _validator(schema: dict) -> Draft202012Validator:
    """Validate against a schema fragment of openapi.yaml, resolving both #/ refs and file refs."""
    document = spec.load_openapi()
    registry: Registry = spec.schema_registry().with_resource(
        spec.OPENAPI_PATH.as_uri(), Resource.from_contents(document, DRAFT202012)
    )
    wrapped = copy.deepcopy(schema)
    wrapped["$id"] = spec.OPENAPI_PATH.as_uri() + "-fragment"
    # A fragment's relative refs are relative to openapi.yaml: rewrite them to absolute URIs first.
    wrapped = _absolutise(wrapped)
    return Draft202012Validator(wrapped, registry=registry)


def _absolutise(node: Any) -> Any:
    if isinstance(node, dict):
        out = {}
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                file_part, _, fragment = value.partition("#")
                base = (
                    (spec.OPENAPI_PATH.parent / file_part).resolve().as_uri()
                    if file_part
                    else spec.OPENAPI_PATH.as_uri()
                )
                out[key] = base + ("#" + fragment if fragment else "")
            else:
                out[key] = _absolutise(value)
        return out
    if isinstance(node, list):
        return [_absolutise(v) for v in node]
    return node


def _media_examples(document: dict):
    for path, item in document["paths"].items():
        for method, operation in item.items():
            if method not in HTTP_METHODS:
                continue
            bodies = [("request", operation.get("requestBody", {}))]
            bodies += [(status, _deref(document, r)) for status, r in operation["responses"].items()]
            for status, body in bodies:
                for media_type, media in body.get("content", {}).items():
                    if media_type != "application/json":
                        continue
                    for name, example in media.get("examples", {}).items():
                        yield media["schema"], example["value"], f"{method.upper()} {path} {status} example {name}"
