// Drives the TypeScript SDK against a live reference server and prints what happened as one JSON object, which
// tests/sdk/test_typescript_sdk.py asserts on. Run with tsx from inside the repository (node_modules/ resolves):
//   COPILOT_BASE_URL=http://127.0.0.1:PORT COPILOT_CHAT_ROOT=/v3 \
//     node_modules/.bin/tsx tests/sdk/ts/typescript_driver.ts
// It is type-checked with the SDK (tests/sdk/ts/tsconfig.json): every event is read through its generated type.
import { once } from 'node:events';
import { createServer, request as httpRequest, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

import {
  type AgUiEvent,
  type ChatRoot,
  type ChatStreamEvent,
  ConflictError,
  CopilotApiError,
  CopilotStreamError,
  createCopilotClient,
  type EventStream,
  NotFoundError,
  UnauthorizedError,
  UnavailableError,
  type UiMessageChunk,
} from '../../../sdk/typescript/src/index.js';
import * as generated from '../../../sdk/typescript/src/generated/sdk.gen.js';
import { createClient, createConfig } from '../../../sdk/typescript/src/generated/client/index.js';

const baseUrl = required('COPILOT_BASE_URL');
const chatRoot = required('COPILOT_CHAT_ROOT') as ChatRoot;
const results: Record<string, unknown> = { chatRoot };

const client = createCopilotClient({ baseUrl, chatRoot });
results['version'] = (await client.version()).version;
results['badLogin'] = await failure(() => client.login('admin', 'not-the-password'));
await client.login('admin', 'admin');
results['me'] = (await client.me()).username;
const project = await client.createProject(`sdk-ts-${chatRoot.replaceAll('/', '-')}-${Date.now()}`);
results['projectStatus'] = project.status;
results['projectListed'] = (await client.listProjects()).some((p) => p.project_id === project.project_id);
const projectId = project.project_id;

// A tool turn on the GNS3 stream, every event narrowed by its `type`.
const turn = { types: [] as string[], tools: [] as string[], text: '', sessionIds: new Set<string>() };
const toolTurn = { message: 'What is in my lab? [[fake-llm:tool-round-trip]]' };
for await (const event of client.streamChat(projectId, toolTurn)) {
  read(event);
}
const sessionId = [...turn.sessionIds][0] ?? '';
results['turn'] = { types: dedupe(turn.types), tools: turn.tools, text: turn.text, sessions: turn.sessionIds.size };

const listed = await client.listSessions(projectId);
results['listed'] = listed.map((s) => ({ id: s.thread_id, title: s.title, messages: s.message_count }));
results['renamed'] = (await client.renameSession(projectId, sessionId, 'Renamed by the SDK')).title;
results['pinned'] = (await client.pinSession(projectId, sessionId)).pinned;
const history = await client.getSessionHistory(projectId, sessionId, 10);
results['history'] = { title: history.title, roles: history.messages.map((m) => m.role) };
// The other chat root is not this server's prefix: its chat paths are unknown there (routing's 404 `not_found`).
const otherRoot = chatRoot === '/v3' ? '/v3/copilot' : '/v3';
const elsewhere = createCopilotClient({ baseUrl, chatRoot: otherRoot, token: client.token! });
results['otherRoot'] = await failure(() => elsewhere.listSessions(projectId));

// Typed refusals: an unknown session (404) on a plain call, an unknown project (404) on a stream, before any event.
results['unknownSession'] = await failure(() => client.getSessionHistory(projectId, 'no-such-session'));
results['unknownProjectStream'] = await failure(() =>
  drain(client.streamChat('00000000-0000-4000-8000-000000000000', { message: 'hi' })),
);

// A busy session: while a slow turn runs, a second turn on it is refused 409, sent once (counted by a proxy).
const proxy = await countingProxy(new URL(baseUrl));
const viaProxy = createCopilotClient({ baseUrl: proxy.url, chatRoot, token: client.token! });
const busy = `busy-${Date.now()}`;
const slowAbort = new AbortController();
const slow = client.streamChat(projectId, { message: 'Are the links up? [[fake-llm:slow]]', session_id: busy }, {
  signal: slowAbort.signal,
});
const slowSeen: string[] = [];
const running = deferred();
const slowRun = (async () => {
  try {
    for await (const event of slow) {
      slowSeen.push(event.type);
      if (slowSeen.length === 1) running.resolve();
    }
    return 'ended';
  } catch (error) {
    return error instanceof Error ? error.name : String(error);
  }
})();
await running.promise; // its first event (a heartbeat): the turn holds the session
const beforeBusy = proxy.hits();
const busyEvents: string[] = [];
results['busy'] = await failure(async () => {
  const second = { message: 'me too [[fake-llm:plain]]', session_id: busy };
  for await (const event of viaProxy.streamChat(projectId, second)) {
    busyEvents.push(event.type);
  }
});
results['busyEventsBeforeError'] = busyEvents;
results['busyRequests'] = proxy.hits() - beforeBusy;

// Aborting the slow turn's signal stops its stream: the loop throws the AbortError, and no `done` came.
slowAbort.abort();
results['aborted'] = { thrown: await slowRun, sawDone: slowSeen.includes('done') };
const preAborted = new AbortController();
preAborted.abort();
const beforePreAborted = proxy.hits();
results['preAborted'] = await failure(() =>
  drain(viaProxy.streamChat(projectId, { message: 'never sent' }, { signal: preAborted.signal })),
);
results['preAbortedRequests'] = proxy.hits() - beforePreAborted;
await proxy.close();

// A channel: the AI SDK UI message stream and an AG-UI run, each read through its type.
const uiSession = `ui-${Date.now()}`;
const ui = client.streamUiMessages(projectId, {
  id: uiSession,
  messages: [
    { id: 'm1', role: 'user', parts: [{ type: 'text', text: 'Which routers? [[fake-llm:tool-round-trip]]' }] },
  ],
  trigger: 'submit-message',
});
const uiRead = { types: [] as string[], text: '', tools: [] as string[] };
for await (const chunk of ui) readUi(chunk);
results['ui'] = { ...uiRead, types: dedupe(uiRead.types), sessionHeader: ui.sessionId };
const agUi = client.runAgUi(projectId, {
  threadId: `ag-ui-${Date.now()}`,
  runId: 'run-1',
  messages: [{ id: 'm1', role: 'user', content: 'Which routers? [[fake-llm:tool-round-trip]]' }],
  tools: [],
  context: [],
  state: {},
  forwardedProps: {},
});
const agUiRead = { types: [] as string[], text: '' };
for await (const event of agUi) readAgUi(event);
results['agUi'] = { types: dedupe(agUiRead.types), text: agUiRead.text };
const completion = [];
for await (const chunk of client.streamChatCompletion(projectId, {
  model: 'gns3-copilot',
  messages: [{ role: 'user', content: 'Hello [[fake-llm:plain]]' }],
})) {
  completion.push(chunk.choices[0]?.delta.content ?? '');
}
results['openaiChat'] = completion.join('');

// Delete, then the session is gone.
await client.deleteSession(projectId, sessionId);
results['afterDelete'] = {
  listed: (await client.listSessions(projectId)).some((s) => s.thread_id === sessionId),
  history: await failure(() => client.getSessionHistory(projectId, sessionId)),
};

// Never retried: a stream cut after its first event, and a refusal, each reach a server exactly once; the generated
// function left at hey-api's defaults re-sends the same cut request (the control that shows the count can fail).
const cut = await fakeServer();
const cutClient = createCopilotClient({ baseUrl: cut.url, chatRoot, token: 't' });
const cutEvents: string[] = [];
results['cut'] = await failure(async () => {
  for await (const event of cutClient.streamChat(projectId, { message: 'cut' })) cutEvents.push(event.type);
});
results['cutEvents'] = cutEvents;
results['cutRequests'] = cut.hits('/stream');
results['refused'] = await failure(() => drain(cutClient.streamUiMessages(projectId, { id: 's', messages: [] })));
results['refusedRequests'] = cut.hits('/ui');
results['defaultRetries'] = await heyApiDefaultsResend();
await cut.close();

await client.deleteProject(projectId);
results['projectDeleted'] = await failure(() => client.getProject(projectId));
console.log(JSON.stringify(results));

// --- readers: a switch per stream type; `never` in each default makes a new event type a type error -------------

function read(event: ChatStreamEvent): void {
  turn.sessionIds.add(event.session_id ?? '');
  switch (event.type) {
    case 'tool_call':
      turn.types.push(event.type);
      if (event.tool_call.function.complete) turn.tools.push(event.tool_call.function.name);
      return;
    case 'tool_start':
    case 'tool_end':
      turn.types.push(`${event.type}:${event.tool_name}`);
      return;
    case 'content':
      turn.types.push(event.type);
      turn.text += event.content;
      return;
    case 'error':
      turn.types.push(`error:${event.code ?? ''}`);
      return;
    case 'done':
      turn.types.push(event.type);
      return;
    case 'heartbeat':
      return;
    default: {
      const unknown: never = event;
      throw new Error(`unexpected event ${JSON.stringify(unknown)}`);
    }
  }
}

function readUi(chunk: UiMessageChunk): void {
  uiRead.types.push(chunk.type);
  switch (chunk.type) {
    case 'text-delta':
      uiRead.text += chunk.delta;
      break;
    case 'tool-input-available':
      uiRead.tools.push(chunk.toolName);
      break;
    default:
      break;
  }
}

function readAgUi(event: AgUiEvent): void {
  agUiRead.types.push(event.type);
  if (event.type === 'TEXT_MESSAGE_CONTENT') agUiRead.text += event.delta;
}

// --- helpers --------------------------------------------------------------------------------------------------

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
}

function dedupe(items: string[]): string[] {
  return items.filter((item, i) => item !== items[i - 1]);
}

async function drain<T>(stream: EventStream<T>): Promise<number> {
  let count = 0;
  for await (const _ of stream) count += 1;
  return count;
}

/** What a call threw: its class, and for the typed errors the status and the body's code. */
async function failure(call: () => Promise<unknown>): Promise<Record<string, unknown>> {
  try {
    await call();
    return { thrown: null };
  } catch (error) {
    if (error instanceof CopilotApiError) {
      const typed = [UnauthorizedError, NotFoundError, ConflictError, UnavailableError].some((c) => error instanceof c);
      return { thrown: error.name, status: error.status, code: error.body.code, message: error.body.message, typed };
    }
    if (error instanceof CopilotStreamError) return { thrown: error.name, code: error.code };
    return { thrown: error instanceof Error ? error.name : String(error) };
  }
}

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve = () => {};
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

async function listen(server: Server): Promise<string> {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

async function closeServer(server: Server): Promise<void> {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
}

/** A pass-through proxy to the reference server that counts the turn requests (POST .../chat/stream). */
async function countingProxy(target: URL) {
  let streams = 0;
  const server = createServer((req, res) => {
    if (req.method === 'POST' && req.url?.endsWith('/chat/stream')) streams += 1;
    const upstream = httpRequest(
      { host: target.hostname, port: target.port, path: req.url, method: req.method, headers: req.headers },
      (answer: IncomingMessage) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    res.on('close', () => upstream.destroy());
    req.pipe(upstream);
  });
  const url = await listen(server);
  return { url, hits: () => streams, close: () => closeServer(server) };
}

/** A server whose GNS3 stream sends one event and then drops the connection, and whose UI stream is refused 503. */
async function fakeServer() {
  const hits = new Map<string, number>();
  const server = createServer((req, res) => {
    const route = req.url?.endsWith('/chat/stream') ? '/stream' : req.url?.endsWith('/chat/ui') ? '/ui' : req.url ?? '';
    hits.set(route, (hits.get(route) ?? 0) + 1);
    req.resume();
    if (route === '/stream') {
      res.writeHead(200, { 'Content-Type': 'text/event-stream' });
      res.write('data: {"type": "content", "content": "Hel", "session_id": "s-1"}\n\n', () => {
        setTimeout(() => res.socket?.destroy(), 50); // no `done`: the connection is lost mid-turn
      });
    } else {
      res.writeHead(503, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ message: 'Storage is not writable: disk is full', code: 'storage_unavailable' }));
    }
  });
  const url = await listen(server);
  return { url, hits: (route: string) => hits.get(route) ?? 0, close: () => closeServer(server) };
}

/** The generated `streamChat` with hey-api's defaults (but a short delay): how many times it sends one cut turn. */
async function heyApiDefaultsResend(): Promise<number> {
  const fake = await fakeServer();
  const raw = createClient(createConfig({ baseUrl: fake.url + chatRoot }));
  const stop = new AbortController();
  const { stream } = await generated.streamChat({
    client: raw,
    path: { project_id: projectId },
    body: { message: 'cut' },
    signal: stop.signal,
    sseDefaultRetryDelay: 10,
  });
  for await (const _ of stream) {
    if (fake.hits('/stream') >= 2) stop.abort(); // it came back for more: enough to show it
  }
  const sent = fake.hits('/stream');
  await fake.close();
  return sent;
}
