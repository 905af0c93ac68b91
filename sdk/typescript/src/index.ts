// The GNS3 Copilot Chat API client: the generated operations (src/generated/, from the contract's OpenAPI 3.1 copy),
// behind a small facade that logs in, throws typed errors, and streams each turn exactly once.
import { apiError, CopilotStreamError } from './errors.js';
import { type Client, createClient, createConfig } from './generated/client/index.js';
import * as api from './generated/sdk.gen.js';
import type {
  AbortResult,
  AgUiEvent,
  AgUiRunAgentInput,
  AiUiMessageChunk,
  AiUiMessages,
  ChatRequest,
  ChatSession,
  ChatSessionList,
  ChatStreamEvent,
  ControllerVersion,
  ConversationHistory,
  LlmModelConfig,
  LlmModelConfigCreate,
  LlmModelConfigUpdate,
  LlmModelConfigList,
  OpenaiChatCompletionChunk,
  OpenaiChatCompletionCreateParamsStreaming,
  OpenaiListModelsResponse,
  OpenaiResponseCreateParamsStreaming,
  OpenaiResponseStreamEvent,
  Project,
  ProjectList,
  Token,
  UiChatRequest,
  User,
} from './generated/types.gen.js';
import { type END, EventStream, jsonEvents, jsonEventsUntilDone, type StreamOptions } from './streams.js';

export * from './errors.js';
export { EventStream, type StreamOptions } from './streams.js';
export type * from './generated/types.gen.js';
export type { Client } from './generated/client/index.js';
// The generated operations, for what the facade does not wrap: pass `client: copilot.chat` (or `.controller`).
export * as operations from './generated/sdk.gen.js';

/**
 * What comes before `/projects/{project_id}/chat` in the server's chat prefix: `/v3` for
 * `/v3/projects/{project_id}/chat`, `/v3/copilot` for `/v3/copilot/projects/{project_id}/chat` (gns3-server
 * 3.1.0a2 and later). The `chat_root` server variable of the contract's 3.1 copy (a test keeps them equal).
 */
export const CHAT_ROOTS = ['/v3', '/v3/copilot'] as const;
export type ChatRoot = (typeof CHAT_ROOTS)[number];

/**
 * A chunk of the Vercel AI SDK UI message stream. The contract's schema is derived from the `ai` package, whose
 * `data-*` chunk checks its `type` with a predicate JSON Schema cannot express, so the generated member has
 * `type: unknown`, which would swallow the whole union's narrowing; it is replaced by the type the `ai` package
 * declares for it (`DataUIMessageChunk`), with no dependency on `ai`.
 */
export type UiMessageChunk = KnownType<AiUiMessageChunk> | UiDataChunk;
export type UiDataChunk = { type: `data-${string}`; id?: string; data: unknown; transient?: boolean };
type KnownType<T> = T extends { type: infer K } ? (unknown extends K ? never : T) : never;

/** The streamed chat completion's body: the OpenAI request without `stream`, which the call sets. */
export type ChatCompletionStreamRequest = Omit<OpenaiChatCompletionCreateParamsStreaming, 'stream'>;
export type ResponseStreamRequest = Omit<OpenaiResponseCreateParamsStreaming, 'stream'>;

export interface CopilotClientOptions {
  /** The controller's address, e.g. `http://127.0.0.1:3080` (no path). */
  baseUrl: string;
  /** A bearer token, if you have one already; `login` sets it. */
  token?: string;
  /** The server's chat root (default `/v3`); `/v3/copilot` for gns3-server 3.1.0a2 and later. */
  chatRoot?: ChatRoot;
  /** A fetch implementation (default `globalThis.fetch`). */
  fetch?: typeof fetch;
}

export function createCopilotClient(options: CopilotClientOptions): CopilotClient {
  return new CopilotClient(options);
}

export class CopilotClient {
  /** The generated client of the controller's operations (tag `controller`), at the controller's address. */
  readonly controller: Client;
  /** The generated client of the chat API and its channels, at the address plus the chat root. */
  readonly chat: Client;
  readonly chatRoot: ChatRoot;
  token: string | undefined;

  constructor({ baseUrl, token, chatRoot = '/v3', fetch }: CopilotClientOptions) {
    if (!CHAT_ROOTS.includes(chatRoot)) throw new TypeError(`chatRoot must be one of ${CHAT_ROOTS.join(', ')}`);
    const origin = baseUrl.replace(/\/+$/, '');
    this.token = token;
    this.chatRoot = chatRoot;
    this.controller = this.#client(origin, fetch);
    this.chat = this.#client(origin + chatRoot, fetch);
  }

  #client(baseUrl: string, fetch: typeof globalThis.fetch | undefined): Client {
    const client = createClient(
      createConfig({ baseUrl, throwOnError: true, auth: () => this.token, ...(fetch ? { fetch } : {}) }),
    );
    // Every refusal becomes its typed error: the generated client throws the parsed body, the status is here.
    client.interceptors.error.use((error, response) =>
      response && !response.ok ? apiError(response.status, error, response) : error,
    );
    return client;
  }

  // --- the controller (log in, who am I, projects, LLM configurations) ---------------------------------------

  async version(): Promise<ControllerVersion> {
    return (await api.getVersion({ client: this.controller, throwOnError: true })).data;
  }

  /** Logs in and keeps the token for every later call. */
  async login(username: string, password: string): Promise<Token> {
    const body = { username, password };
    const { data } = await api.authenticate({ client: this.controller, throwOnError: true, body });
    this.token = data.access_token;
    return data;
  }

  async me(): Promise<User> {
    return (await api.getCurrentUser({ client: this.controller, throwOnError: true })).data;
  }

  async listProjects(): Promise<ProjectList> {
    return (await api.listProjects({ client: this.controller, throwOnError: true })).data;
  }

  /** Creates a project; it is opened at once. */
  async createProject(name: string): Promise<Project> {
    return (await api.createProject({ client: this.controller, throwOnError: true, body: { name } })).data;
  }

  async getProject(projectId: string): Promise<Project> {
    const path = { project_id: projectId };
    return (await api.getProject({ client: this.controller, throwOnError: true, path })).data;
  }

  async openProject(projectId: string): Promise<Project> {
    const path = { project_id: projectId };
    return (await api.openProject({ client: this.controller, throwOnError: true, path })).data;
  }

  async closeProject(projectId: string): Promise<void> {
    await api.closeProject({ client: this.controller, throwOnError: true, path: { project_id: projectId } });
  }

  async deleteProject(projectId: string): Promise<void> {
    await api.deleteProject({ client: this.controller, throwOnError: true, path: { project_id: projectId } });
  }

  async listLlmModelConfigs(userId: string): Promise<LlmModelConfigList> {
    const path = { user_id: userId };
    return (await api.listLlmModelConfigs({ client: this.controller, throwOnError: true, path })).data;
  }

  async createLlmModelConfig(userId: string, config: LlmModelConfigCreate): Promise<LlmModelConfig> {
    const path = { user_id: userId };
    return (await api.createLlmModelConfig({ client: this.controller, throwOnError: true, path, body: config })).data;
  }

  /** Changes the fields given; the configuration they make with the others must be one create would take. */
  async updateLlmModelConfig(userId: string, configId: string, change: LlmModelConfigUpdate): Promise<LlmModelConfig> {
    const path = { user_id: userId, config_id: configId };
    return (await api.updateLlmModelConfig({ client: this.controller, throwOnError: true, path, body: change })).data;
  }

  async deleteLlmModelConfig(userId: string, configId: string): Promise<void> {
    const path = { user_id: userId, config_id: configId };
    await api.deleteLlmModelConfig({ client: this.controller, throwOnError: true, path });
  }

  // --- the chat API ---------------------------------------------------------------------------------------

  /** Sends a message and streams the turn's events, ending with `done`. Sent once, never retried. */
  streamChat(projectId: string, request: ChatRequest, options: StreamOptions = {}): EventStream<ChatStreamEvent> {
    return this.#stream('/projects/{project_id}/chat/stream', projectId, request, jsonEvents<ChatStreamEvent>, options);
  }

  async listSessions(projectId: string): Promise<ChatSessionList> {
    return (await api.listSessions({ client: this.chat, throwOnError: true, path: { project_id: projectId } })).data;
  }

  /** The newest `limit` messages of a session (default 100), oldest first, in OpenAI format. */
  async getSessionHistory(projectId: string, sessionId: string, limit?: number): Promise<ConversationHistory> {
    const path = { project_id: projectId, session_id: sessionId };
    const query = limit === undefined ? undefined : { limit };
    return (await api.getSessionHistory({ client: this.chat, throwOnError: true, path, query })).data;
  }

  async renameSession(projectId: string, sessionId: string, title: string): Promise<ChatSession> {
    const path = { project_id: projectId, session_id: sessionId };
    return (await api.renameSession({ client: this.chat, throwOnError: true, path, body: { title } })).data;
  }

  async pinSession(projectId: string, sessionId: string): Promise<ChatSession> {
    const path = { project_id: projectId, session_id: sessionId };
    return (await api.pinSession({ client: this.chat, throwOnError: true, path })).data;
  }

  async unpinSession(projectId: string, sessionId: string): Promise<ChatSession> {
    const path = { project_id: projectId, session_id: sessionId };
    return (await api.unpinSession({ client: this.chat, throwOnError: true, path })).data;
  }

  async deleteSession(projectId: string, sessionId: string): Promise<void> {
    const path = { project_id: projectId, session_id: sessionId };
    await api.deleteSession({ client: this.chat, throwOnError: true, path });
  }

  /** Asks the session's running turn to stop (optional capability `abort`); its stream then ends with `done`. */
  async abortSessionTurn(projectId: string, sessionId: string): Promise<AbortResult> {
    const path = { project_id: projectId, session_id: sessionId };
    return (await api.abortSessionTurn({ client: this.chat, throwOnError: true, path })).data;
  }

  // --- the channels: the same turns in other protocols' streams ---------------------------------------------

  /** OpenAI Chat Completions, streamed: `chat.completion.chunk`s; an error chunk is thrown as CopilotStreamError. */
  streamChatCompletion(
    projectId: string,
    request: ChatCompletionStreamRequest,
    options: StreamOptions = {},
  ): EventStream<OpenaiChatCompletionChunk> {
    const url = '/projects/{project_id}/chat/openai/v1/chat/completions';
    return this.#stream(url, projectId, { ...request, stream: true }, chatCompletionChunks, options);
  }

  /** OpenAI Responses, streamed: `ResponseStreamEvent`s (a failure is `response.failed`). */
  streamResponse(
    projectId: string,
    request: ResponseStreamRequest,
    options: StreamOptions = {},
  ): EventStream<OpenaiResponseStreamEvent> {
    const url = '/projects/{project_id}/chat/openai/v1/responses';
    return this.#stream(url, projectId, { ...request, stream: true }, jsonEvents<OpenaiResponseStreamEvent>, options);
  }

  async listModels(projectId: string): Promise<OpenaiListModelsResponse> {
    const path = { project_id: projectId };
    return (await api.openaiListModels({ client: this.chat, throwOnError: true, path })).data;
  }

  /** The Vercel AI SDK UI message stream (v1) of one turn; the chat id is the session id. */
  streamUiMessages(
    projectId: string,
    request: UiChatRequest,
    options: StreamOptions = {},
  ): EventStream<UiMessageChunk> {
    const url = '/projects/{project_id}/chat/ui';
    return this.#stream(url, projectId, request, jsonEventsUntilDone<UiMessageChunk>, options);
  }

  /** A session as the UI's `UIMessage[]`, for a reloaded page. */
  async uiSessionMessages(projectId: string, sessionId: string): Promise<AiUiMessages> {
    const path = { project_id: projectId, session_id: sessionId };
    return (await api.uiSessionMessages({ client: this.chat, throwOnError: true, path })).data;
  }

  /** One AG-UI run: `RUN_STARTED` ... `RUN_FINISHED` or `RUN_ERROR`; the thread id is the session id. */
  runAgUi(projectId: string, input: AgUiRunAgentInput, options: StreamOptions = {}): EventStream<AgUiEvent> {
    return this.#stream('/projects/{project_id}/chat/ag-ui', projectId, input, jsonEvents<AgUiEvent>, options);
  }

  #stream<T>(
    url: string,
    projectId: string,
    body: unknown,
    frame: (data: unknown) => T | typeof END,
    options: StreamOptions,
  ): EventStream<T> {
    const path = { project_id: projectId };
    return new EventStream({ client: this.chat, url, path, body, frame, signal: options.signal });
  }
}

/** OpenAI's stream reports a failure after it began as an `{"error": {...}}` chunk; the `openai` client raises it. */
function chatCompletionChunks(data: unknown) {
  const chunk = jsonEventsUntilDone<OpenaiChatCompletionChunk | { error: { message: string; code?: string } }>(data);
  if (typeof chunk === 'object' && 'error' in chunk && !('choices' in chunk)) {
    const { message, code } = chunk.error;
    throw new CopilotStreamError(message, code ?? 'stream_error', chunk);
  }
  return chunk;
}
