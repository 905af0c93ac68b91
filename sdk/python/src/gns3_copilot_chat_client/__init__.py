"""Typed client of the GNS3 Copilot Chat API, generated from its contract (spec/ of gns3-copilot-chat-conformance).

```python
from gns3_copilot_chat_client import ChatRequest, CopilotClient, ProjectCreate

with CopilotClient("http://127.0.0.1:3080") as client:
    client.login("admin", "admin")
    project = client.create_project(ProjectCreate(name="lab"))
    with client.stream_chat(project.project_id, ChatRequest(message="What is in my lab?")) as stream:
        for event in stream:
            print(event.type)
```

A chat turn is sent once and never retried (it may have run); a refusal raises the CopilotApiError subclass of its
status, a stream that breaks off before `done` a CopilotStreamError.
"""

from .client import AsyncCopilotClient, CopilotClient
from .contract import CONTRACT_VERSION, DEFAULT_CHAT_PREFIX, KNOWN_CHAT_PREFIXES
from .errors import (
    BadRequestError,
    ConflictError,
    CopilotApiError,
    CopilotError,
    CopilotStreamError,
    ForbiddenError,
    LlmUnavailableError,
    NotFoundError,
    NotImplementedByServerError,
    PayloadTooLargeError,
    ServiceUnavailableError,
    StreamProtocolError,
    TooManyRequestsError,
    UnauthorizedError,
    ValidationFailedError,
)
from .events import StreamEvent
from .models.api.abort_result import AbortResult
from .models.api.chat_request import ChatRequest
from .models.api.chat_session import ChatSession
from .models.api.controller_credentials import Credentials
from .models.api.controller_llm_model_config import LlmModelConfig
from .models.api.controller_llm_model_config_create import LlmModelConfigCreate
from .models.api.controller_llm_model_config_list import LlmModelConfigList
from .models.api.controller_project import Project
from .models.api.controller_project_create import ProjectCreate
from .models.api.controller_token import Token
from .models.api.controller_user import User
from .models.api.conversation_history import ConversationHistory
from .models.api.error_body import ErrorBody
from .models.api.rename_request import RenameSessionRequest
from .models.events.chat_stream_event import ChatStreamEvent
from .models.events.content import ContentEvent
from .models.events.done import DoneEvent
from .models.events.error import ErrorEvent
from .models.events.heartbeat import HeartbeatEvent
from .models.events.tool_call import ToolCallEvent
from .models.events.tool_end import ToolEndEvent
from .models.events.tool_start import ToolStartEvent
from .streams import AsyncChatStream, ChatStream
from .transport import GNS3_CHAT_PREFIX

__all__ = [
    "AbortResult",
    "AsyncChatStream",
    "AsyncCopilotClient",
    "BadRequestError",
    "ChatRequest",
    "ChatSession",
    "ChatStream",
    "ChatStreamEvent",
    "CONTRACT_VERSION",
    "ConflictError",
    "ContentEvent",
    "ConversationHistory",
    "CopilotApiError",
    "CopilotClient",
    "CopilotError",
    "CopilotStreamError",
    "Credentials",
    "DEFAULT_CHAT_PREFIX",
    "DoneEvent",
    "ErrorBody",
    "ErrorEvent",
    "ForbiddenError",
    "GNS3_CHAT_PREFIX",
    "HeartbeatEvent",
    "KNOWN_CHAT_PREFIXES",
    "LlmModelConfig",
    "LlmModelConfigCreate",
    "LlmModelConfigList",
    "LlmUnavailableError",
    "NotFoundError",
    "NotImplementedByServerError",
    "PayloadTooLargeError",
    "Project",
    "ProjectCreate",
    "RenameSessionRequest",
    "ServiceUnavailableError",
    "StreamEvent",
    "StreamProtocolError",
    "Token",
    "TooManyRequestsError",
    "ToolCallEvent",
    "ToolEndEvent",
    "ToolStartEvent",
    "UnauthorizedError",
    "ValidationFailedError",
    "User",
]
