"""The two clients: `CopilotClient` (blocking) and `AsyncCopilotClient`, each every operation of the contract
(operations.py, generated) over one httpx client, with the token of `login()` on every later call."""

from __future__ import annotations

from typing import Any, TypeVar

import httpx
from pydantic import TypeAdapter

from .contract import DEFAULT_CHAT_PREFIX
from .models.api.controller_credentials import Credentials
from .models.api.controller_token import Token
from .operations import AsyncOperations, SyncOperations
from .streams import AsyncChatStream, ChatStream
from .transport import Request, Settings, parsed

T = TypeVar("T")


class CopilotClient(SyncOperations):
    """`CopilotClient("http://127.0.0.1:3080")`, then `login()`; `chat_prefix` is the server's chat path prefix
    (`GNS3_CHAT_PREFIX` for gns3-server 3.1.0a2 and later). `timeout` bounds each read, not a whole stream's
    length: a turn may be silent for a while between heartbeats. Nothing is retried."""

    def __init__(
        self,
        base_url: str,
        *,
        token: str | None = None,
        chat_prefix: str = DEFAULT_CHAT_PREFIX,
        timeout: float = 60.0,
        http_client: httpx.Client | None = None,
    ) -> None:
        self.settings = Settings(base_url, token, chat_prefix)
        self._http = http_client or httpx.Client(timeout=timeout)

    def login(self, username: str, password: str) -> Token:
        """Log in; the token is sent on every later call."""
        token = self.authenticate(Credentials(username=username, password=password))
        self.settings.token = token.access_token
        return token

    def _call(self, request: Request, adapter: TypeAdapter[T] | None) -> T | None:
        return parsed(self._http.send(self.settings.build(self._http, request, False)), adapter)

    def _stream(self, request: Request) -> ChatStream:
        return ChatStream(self._http, self.settings.build(self._http, request, True))

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> CopilotClient:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class AsyncCopilotClient(AsyncOperations):
    """CopilotClient for asyncio: every operation awaitable; `await client.stream_chat(...)` opens the stream."""

    def __init__(
        self,
        base_url: str,
        *,
        token: str | None = None,
        chat_prefix: str = DEFAULT_CHAT_PREFIX,
        timeout: float = 60.0,
        http_client: httpx.AsyncClient | None = None,
    ) -> None:
        self.settings = Settings(base_url, token, chat_prefix)
        self._http = http_client or httpx.AsyncClient(timeout=timeout)

    async def login(self, username: str, password: str) -> Token:
        token = await self.authenticate(Credentials(username=username, password=password))
        self.settings.token = token.access_token
        return token

    async def _call(self, request: Request, adapter: TypeAdapter[T] | None) -> T | None:
        return parsed(await self._http.send(self.settings.build(self._http, request, False)), adapter)

    async def _stream(self, request: Request) -> AsyncChatStream:
        return await AsyncChatStream.open(self._http, self.settings.build(self._http, request, True))

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncCopilotClient:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()
