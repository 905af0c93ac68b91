// An AG-UI run driven by the official TypeScript client, `HttpAgent` of @ag-ui/client 1.0.0.
//
// A case: {"url"?, "headers"?, "threadId"?, "messages"?, "state"?, "runId"?, "tools"?, "context"?,
//          "forwardedProps"?, plus, for a recorded body: "body", "status"? (200), "contentType"?
//          ("text/event-stream")}.
// Without "body" the agent POSTs to "url" with its own fetch (the global one); with "body" a custom `fetch`
// (HttpAgentConfig.fetch) answers every request with that body, so the whole client pipeline still runs:
// runHttpRequest -> transformHttpEventStream (SSE parser) -> enforceEvents -> transformChunks -> verifyEvents
// -> apply (agent.messages / agent.state).
// `agent.runAgent({runId, tools, context, forwardedProps}, subscriber)` (RunAgentParameters: runId, tools,
// context, forwardedProps, resume); every event the agent applies reaches the subscriber's onEvent.
//
// Result: {ok, events, messages (agent.messages after the run), state, newMessages, error: {name, message,
// status?, payload?} | null, runError (the RUN_ERROR event, if any), request (the RunAgentInput the agent sent),
// status?, headers? (of the response)}.
// ok means runAgent resolved: a RUN_ERROR event resolves it too (see runError); a non-2xx response, a
// protocol violation or an unparsable frame rejects it.
import { HttpAgent } from "@ag-ui/client";
import { errorInfo, headersObject, plain, runCases } from "./_io.mjs";

await runCases(async (testCase) => {
  let request = null;
  let response = null;
  const recorded = testCase.body !== undefined;
  const fetchImpl = async (url, init) => {
    request = init?.body ? JSON.parse(init.body) : null;
    if (recorded) {
      response = new Response(testCase.body, {
        status: testCase.status ?? 200,
        headers: { "content-type": testCase.contentType ?? "text/event-stream" },
      });
    } else {
      response = await fetch(url, { ...init, signal: init?.signal ?? AbortSignal.timeout(testCase.timeoutMs ?? 20000) });
    }
    return response;
  };
  const agent = new HttpAgent({
    url: testCase.url ?? "http://recorded.invalid/agent",
    headers: testCase.headers ?? {},
    threadId: testCase.threadId,
    initialState: testCase.state,
    fetch: fetchImpl,
  });
  agent.messages = testCase.messages ?? [];

  const events = [];
  let failure = null;
  const subscriber = {
    onEvent: ({ event }) => {
      events.push(plain(event));
    },
    onRunFailed: ({ error }) => {
      failure = error;
    },
  };
  const parameters = { tools: testCase.tools ?? [] };
  for (const key of ["runId", "context", "forwardedProps", "resume"]) {
    if (testCase[key] !== undefined) parameters[key] = testCase[key];
  }
  let outcome = null;
  let error = null;
  try {
    outcome = await agent.runAgent(parameters, subscriber);
  } catch (thrown) {
    error = thrown;
  }
  return {
    ok: error === null,
    events,
    messages: plain(agent.messages),
    state: plain(agent.state),
    newMessages: plain(outcome?.newMessages ?? []),
    error: errorInfo(error ?? failure),
    runError: events.find((event) => event.type === "RUN_ERROR") ?? null,
    request,
    status: response?.status ?? null,
    headers: response ? headersObject(response.headers) : null,
  };
});
