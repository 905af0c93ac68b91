"""Code generated from spec/constants.yaml by tools/generate.py. Never edit by hand: run `python3 tasks.py generate`.

The constants the contract fixes, each with the requirement of spec/requirements.yaml that fixes it and its
home in spec/. Mappings are read-only."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

# INPUT-001: The shortest chat message, in characters (on the channels too, CHANNEL-004).
# (spec/schemas/chat-request.json#/properties/message/minLength)
MESSAGE_MIN_LENGTH: Final = 1

# INPUT-001: The longest chat message, in characters (on the channels too, CHANNEL-004).
# (spec/schemas/chat-request.json#/properties/message/maxLength)
MESSAGE_MAX_LENGTH: Final = 100000

# HISTORY-006: The smallest `limit` of GET {prefix}/sessions/{session_id}/history.
# (spec/openapi.yaml#/paths/~1v3~1projects~1{project_id}~1chat~1sessions~1{session_id}~1history/get/parameters/0/schema/minimum)
HISTORY_LIMIT_MIN: Final = 1

# HISTORY-006: The largest `limit` of GET {prefix}/sessions/{session_id}/history.
# (spec/openapi.yaml#/paths/~1v3~1projects~1{project_id}~1chat~1sessions~1{session_id}~1history/get/parameters/0/schema/maximum)
HISTORY_LIMIT_MAX: Final = 1000

# HISTORY-006: The `limit` of GET {prefix}/sessions/{session_id}/history when the query has none.
# (spec/openapi.yaml#/paths/~1v3~1projects~1{project_id}~1chat~1sessions~1{session_id}~1history/get/parameters/0/schema/default)
HISTORY_LIMIT_DEFAULT: Final = 100

# TITLE-001: A new session's title (also the DEFAULT of chat_sessions.title in spec/db/schema.sql).
# (spec/constants.yaml)
INITIAL_TITLE: Final = "New Conversation"

# DB-001: Where a project's chat database lives: a template, `DB_LOCATION.format(project_dir=...)`.
# (spec/db/contract.yaml#/location)
DB_LOCATION: Final = "{project_dir}/gns3-copilot/copilot_checkpoints.db"

# CHANNEL-001: Each channel's base path under the chat prefix, by channel name (capability `channel_<name>`).
# (spec/constants.yaml)
CHANNEL_PATHS: Final[Mapping[str, str]] = MappingProxyType({
    "openai": "/openai/v1",
    "ui": "/ui",
    "ag_ui": "/ag-ui",
})

# OPENAI-007: The model that GET {prefix}/openai/v1/models always lists.
# (spec/constants.yaml)
OPENAI_MODEL_ID: Final = "gns3-copilot"

# OPENAI-004: The OpenAI error `type` each 4xx status gives on the OpenAI channel, by status.
# (spec/channels/openai-error.json#/properties/error/properties/type/x-type-by-status)
OPENAI_ERROR_TYPES: Final[Mapping[int, str]] = MappingProxyType({
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "invalid_request_error",
    405: "invalid_request_error",
    409: "conflict_error",
    413: "invalid_request_error",
    422: "invalid_request_error",
    429: "rate_limit_error",
})

# OPENAI-004: The OpenAI error `type` of every 5xx status on the OpenAI channel.
# (spec/channels/openai-error.json#/properties/error/properties/type/x-type-of-5xx)
OPENAI_SERVER_ERROR_TYPE: Final = "server_error"

# SESSION-003: The longest session id, in characters (in a body or a path).
# (spec/schemas/session-id.json#/maxLength)
SESSION_ID_MAX_LENGTH: Final = 128

# SESSION-003: The characters of a session id, as a regular expression (its length bounded by SESSION_ID_MAX_LENGTH).
# (spec/schemas/session-id.json#/pattern)
SESSION_ID_PATTERN: Final = "^(?:[A-Za-z0-9_:-][A-Za-z0-9._:-]*|\\.[A-Za-z0-9_:-][A-Za-z0-9._:-]*|\\.\\.[A-Za-z0-9._:-]+)$"

# CHANNEL-011: The most messages a channel request's message array holds (OpenAI, Responses, UI and AG-UI).
# (spec/channels/request-bounds.json#/$defs/messages/maxItems)
CHANNEL_MESSAGES_MAX_ITEMS: Final = 1000

# CONTROLLER-001: The largest `max_tokens` or `context_limit` of an LLM configuration, 2^63 - 1 (a 64-bit integer). The reference server refuses a larger one with 422; gns3-server 3.1 keeps the configuration as JSON and accepts it.
# (spec/schemas/controller-llm-model-config-create.json#/properties/max_tokens/maximum)
LLM_CONFIG_INTEGER_MAX: Final = 9223372036854775807

# CHANNEL-011: The most characters of a turn's instructions on the OpenAI channel, system and developer messages and Responses `instructions` together.
# (spec/channels/request-bounds.json#/$defs/instructions/maxLength)
CHANNEL_INSTRUCTIONS_MAX_LENGTH: Final = 100000

# CHANNEL-011: The longest AG-UI `runId` or `parentRunId`, in characters.
# (spec/channels/request-bounds.json#/$defs/run_id/maxLength)
AG_UI_RUN_ID_MAX_LENGTH: Final = 128
