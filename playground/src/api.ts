// The server's JSON endpoints the page uses: the controller (log in, projects) and the chat API's sessions.
// The chat itself goes through `useChat` (Conversation.tsx); shapes are spec/schemas/*.json.

export interface Scenario {
  name: string;
  description: string;
  marker: string; // the tag that selects the script, e.g. [[fake-llm:plain]]
}

export interface PlaygroundConfig {
  chat_prefix: string; // e.g. /v3/projects/{project_id}/chat
  scenarios: Scenario[];
}

export interface User {
  user_id: string;
  username: string;
}

export interface Project {
  project_id: string;
  name: string;
  status: 'opened' | 'closed';
}

export interface ChatSession {
  thread_id: string;
  title: string;
  pinned: boolean;
  message_count: number;
  llm_calls_count: number;
  input_tokens: number;
  output_tokens: number;
  total_tokens: number;
  last_message_at: string | null;
  created_at: string;
  updated_at: string;
}

/** A refusal, with the contract's error body `{message, code}` when the server sent one. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

interface RequestOptions {
  token?: string | null;
  method?: string;
  body?: unknown;
}

/** The server the page talks to: its own origin, or the one `?server=` names (the page served elsewhere, by Vite's
 * development server say, calling a reference server started with `--cors-origin`). */
export const SERVER = serverOrigin(new URLSearchParams(window.location.search).get('server'));

function serverOrigin(named: string | null): string {
  if (!named) return '';
  try {
    const url = new URL(named);
    if (url.protocol === 'http:' || url.protocol === 'https:') return url.origin;
  } catch {
    // not a URL: the page's own origin
  }
  console.warn(`?server=${named} is not an http(s) URL: talking to this page's own origin`);
  return '';
}

export async function request<T>(path: string, options: RequestOptions = {}): Promise<T> {
  const headers: Record<string, string> = {};
  if (options.token) headers['Authorization'] = `Bearer ${options.token}`;
  if (options.body !== undefined) headers['Content-Type'] = 'application/json';
  const init: RequestInit = { method: options.method ?? 'GET', headers };
  if (options.body !== undefined) init.body = JSON.stringify(options.body);
  const response = await fetch(SERVER + path, init);
  if (!response.ok) throw await refusal(response);
  if (response.status === 204) return undefined as T;
  return (await response.json()) as T;
}

async function refusal(response: Response): Promise<ApiError> {
  const text = await response.text();
  try {
    const body = JSON.parse(text) as { message?: unknown; code?: unknown };
    if (typeof body.message === 'string') {
      return new ApiError(response.status, String(body.code ?? 'error'), body.message);
    }
  } catch {
    // not JSON: the status says what happened
  }
  return new ApiError(response.status, 'error', `${response.status} ${response.statusText}`.trim());
}

/** The message of an error of `useChat`: a refusal before the stream carries the error body as its text. */
export function chatErrorMessage(error: Error): string {
  try {
    const body = JSON.parse(error.message) as { message?: unknown; code?: unknown };
    if (typeof body.message === 'string') return body.code ? `${body.message} (${String(body.code)})` : body.message;
  } catch {
    // an in-stream error: its text is the message
  }
  return error.message;
}

export const getConfig = () => request<PlaygroundConfig>('/playground/config.json');

export async function logIn(username: string, password: string): Promise<string> {
  const body = { username, password };
  const token = await request<{ access_token: string }>('/v3/access/users/authenticate', { method: 'POST', body });
  return token.access_token;
}

export const logOut = (token: string) => request<void>('/v3/access/users/logout', { method: 'POST', token });
export const currentUser = (token: string) => request<User>('/v3/access/users/me', { token });
export const listProjects = (token: string) => request<Project[]>('/v3/projects', { token });

export const createProject = (token: string, name: string) =>
  request<Project>('/v3/projects', { method: 'POST', token, body: { name } });

export const openProject = (token: string, projectId: string) =>
  request<Project>(`/v3/projects/${encodeURIComponent(projectId)}/open`, { method: 'POST', token });

/** The chat API of one project: the server's chat prefix with the project's id in it. */
export class ChatApi {
  readonly base: string;

  constructor(
    prefix: string,
    projectId: string,
    private readonly token: string,
  ) {
    this.base = prefix.replace('{project_id}', encodeURIComponent(projectId));
  }

  private session(sessionId: string): string {
    return `${this.base}/sessions/${encodeURIComponent(sessionId)}`;
  }

  sessions(): Promise<ChatSession[]> {
    return request<ChatSession[]>(`${this.base}/sessions`, { token: this.token });
  }

  rename(sessionId: string, title: string): Promise<ChatSession> {
    return request<ChatSession>(this.session(sessionId), { method: 'PATCH', token: this.token, body: { title } });
  }

  pin(sessionId: string, pinned: boolean): Promise<ChatSession> {
    return request<ChatSession>(`${this.session(sessionId)}/pin`, {
      method: pinned ? 'PUT' : 'DELETE',
      token: this.token,
    });
  }

  remove(sessionId: string): Promise<void> {
    return request<void>(this.session(sessionId), { method: 'DELETE', token: this.token });
  }

  /** Stops the session's running turn (ABORT-001): `aborted` says whether one was running (ABORT-005). */
  abort(sessionId: string): Promise<{ aborted?: boolean }> {
    return request<{ aborted?: boolean }>(`${this.session(sessionId)}/abort`, { method: 'POST', token: this.token });
  }

  /** The session as UIMessage[], for `useChat`'s initial messages (UI-004). */
  uiMessages<T>(sessionId: string): Promise<T[]> {
    return request<T[]>(`${this.base}/ui/${encodeURIComponent(sessionId)}/messages`, { token: this.token });
  }

  get uiUrl(): string {
    return `${SERVER}${this.base}/ui`;
  }

  get authorization(): Record<string, string> {
    return { Authorization: `Bearer ${this.token}` };
  }
}
