// A live conversation driven by npm `ai`'s own chat client, the code `useChat` runs, without React (_chat.mjs).
// The transport is `new DefaultChatTransport({api: url, headers: {Authorization: "Bearer " + token},
// body?})`, exactly as a `useChat({transport})` user writes it.
//
// A case: {"url", "token"?, "id" (the chat id), "messages": ["text", ...], "headers"?, "body"?, "timeoutMs"?}.
// Each text is sent with `chat.sendMessage({text})`; the next one only once the status is "ready" or
// "error" (after an error the conversation stops, as a user would see it).
// Result: {ok (status "ready" at the end), status, error (the chat's error message, or null), messages (the
// chat's final UIMessage[]), responses: [{status, headers}] (one per request, recorded by a wrapping fetch
// that changes nothing), requests: [the JSON bodies sent]}.
import { DefaultChatTransport } from "ai";
import { Chat } from "./_chat.mjs";
import { errorInfo, headersObject, plain, runCases } from "./_io.mjs";

const settled = (chat, deadline) =>
  new Promise((resolve, reject) => {
    const poll = () => {
      if (chat.status === "ready" || chat.status === "error") return resolve();
      if (Date.now() > deadline) return reject(new Error(`chat still "${chat.status}" at the deadline`));
      setTimeout(poll, 10);
    };
    poll();
  });

await runCases(async (testCase) => {
  const responses = [];
  const requests = [];
  const recordingFetch = async (url, init) => {
    requests.push(init?.body ? JSON.parse(init.body) : null);
    const response = await fetch(url, init);
    responses.push({ status: response.status, headers: headersObject(response.headers) });
    return response;
  };
  const headers = { ...(testCase.headers ?? {}) };
  if (testCase.token !== undefined) headers.Authorization = `Bearer ${testCase.token}`;
  const transport = new DefaultChatTransport({
    api: testCase.url,
    headers,
    ...(testCase.body !== undefined ? { body: testCase.body } : {}),
    fetch: recordingFetch,
  });
  const chat = new Chat({ id: testCase.id, transport });
  const deadline = Date.now() + (testCase.timeoutMs ?? 30000);
  for (const text of testCase.messages) {
    await chat.sendMessage({ text });
    await settled(chat, deadline);
    if (chat.status === "error") break;
  }
  return {
    ok: chat.status === "ready",
    status: chat.status,
    error: chat.error ? chat.error.message : null,
    errorInfo: errorInfo(chat.error),
    messages: plain(chat.messages),
    responses,
    requests,
  };
});
