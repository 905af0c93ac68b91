// The Vercel AI SDK UI message stream read by npm `ai` itself, the way its chat client reads a response.
//
// A case is either {"body": "<recorded SSE text>"} or, live, {"url", "request": <JSON body>, "headers": {}}
// (POSTed with the global fetch). The bytes go through `DefaultChatTransport#processResponseStream` -- that is
// `parseJsonEventStream({stream, schema: uiMessageChunkSchema})` (eventsource-parser, then the zod schema;
// `[DONE]` skipped) plus the throw on a failed parse -- and then through `readUIMessageStream` with
// `terminateOnError: true`, so that the first error (a chunk failing the schema, an out-of-order chunk, an
// `error` chunk) ends the read, as it ends a request of `Chat` (whose processUIMessageStream onError rethrows).
//
// Result: {ok, message (the last assembled UIMessage, or null), messages (how many snapshots were emitted),
// error: {name, message} | null, errors: [every error reported], status?, headers? (live)}.
import { DefaultChatTransport, readUIMessageStream } from "ai";
import { errorInfo, headersObject, plain, runCases } from "./_io.mjs";

async function read(stream) {
  const chunks = new DefaultChatTransport().processResponseStream(stream);
  const errors = [];
  let message = null;
  let count = 0;
  try {
    for await (const snapshot of readUIMessageStream({
      stream: chunks,
      terminateOnError: true,
      onError: (error) => errors.push(error),
    })) {
      message = snapshot;
      count += 1;
    }
  } catch (error) {
    if (!errors.includes(error)) errors.push(error);
  }
  return {
    ok: errors.length === 0,
    message: plain(message),
    messages: count,
    error: errorInfo(errors[0]),
    errors: errors.map(errorInfo),
  };
}

await runCases(async (testCase) => {
  if (testCase.body !== undefined) {
    return read(new Response(testCase.body).body);
  }
  const response = await fetch(testCase.url, {
    method: "POST",
    headers: { "content-type": "application/json", ...(testCase.headers ?? {}) },
    body: JSON.stringify(testCase.request ?? {}),
    signal: AbortSignal.timeout(testCase.timeoutMs ?? 20000),
  });
  const live = { status: response.status, headers: headersObject(response.headers) };
  if (!response.ok || response.body == null) {
    const text = await response.text();
    const error = { name: "HTTPStatus", message: `HTTP ${response.status}: ${text}` };
    return { ok: false, message: null, messages: 0, error, errors: [error], ...live, text };
  }
  return { ...(await read(response.body)), ...live };
});
