// The request body each protocol's real client sends for one turn, made by the client itself and captured at
// its `fetch`, which never sends it: the suite then POSTs it as it is, with its own transport (evidence,
// deadlines, authentication).
//
// A UI case: {"protocol": "ui", "id" (the chat id), "messages"? (the chat's UIMessage[] so far), "text",
//   "messageId"? (a user message of "messages" the user resubmits edited as "text"), "body"? (the transport's
//   `body` option)}: `new Chat({id, messages, transport: new DefaultChatTransport({body, fetch})})`, then
//   `chat.sendMessage({text, messageId?})` (npm `ai`'s HttpChatTransport builds the body).
// An AG-UI case: {"protocol": "ag_ui", "threadId", "runId", "messages"?, "state"?, "context"?,
//   "forwardedProps"?}: `new HttpAgent({threadId, initialState: state, fetch})` with `messages`, then
//   `runAgent({runId, tools: [], context, forwardedProps})` (@ag-ui/client's prepareRunAgentInput and its
//   outgoing input checks build the RunAgentInput).
// The captured fetch answers with an empty stream of the protocol (`[DONE]`; RUN_STARTED, RUN_FINISHED).
// Result: {ok (a body was captured), request (the JSON body), error}.
import { HttpAgent } from "@ag-ui/client";
import { DefaultChatTransport } from "ai";
import { Chat } from "./_chat.mjs";
import { errorInfo, runCases } from "./_io.mjs";

const SSE = { status: 200, headers: { "content-type": "text/event-stream" } };

function capturing(answer) {
  const captured = [];
  const fetch = async (_url, init) => {
    captured.push(JSON.parse(init.body));
    return new Response(answer(captured.at(-1)), SSE);
  };
  return { captured, fetch };
}

async function uiBody(testCase) {
  const { captured, fetch } = capturing(() => "data: [DONE]\n\n");
  const transport = new DefaultChatTransport({
    api: "http://captured.invalid/api/chat",
    fetch,
    ...(testCase.body !== undefined ? { body: testCase.body } : {}),
  });
  const chat = new Chat({ id: testCase.id, messages: testCase.messages ?? [], transport });
  const edited = testCase.messageId !== undefined ? { messageId: testCase.messageId } : {};
  await chat.sendMessage({ text: testCase.text, ...edited });
  return captured;
}

async function agUiBody(testCase) {
  const frame = (event) => `data: ${JSON.stringify(event)}\n\n`;
  const { captured, fetch } = capturing((input) => {
    const ids = { threadId: input.threadId, runId: input.runId };
    return frame({ type: "RUN_STARTED", ...ids }) + frame({ type: "RUN_FINISHED", ...ids });
  });
  const agent = new HttpAgent({
    url: "http://captured.invalid/agent",
    threadId: testCase.threadId,
    initialState: testCase.state,
    fetch,
  });
  agent.messages = testCase.messages ?? [];
  const parameters = { runId: testCase.runId, tools: [] };
  for (const key of ["context", "forwardedProps"]) {
    if (testCase[key] !== undefined) parameters[key] = testCase[key];
  }
  await agent.runAgent(parameters);
  return captured;
}

await runCases(async (testCase) => {
  let captured = [];
  let error = null;
  try {
    captured = await (testCase.protocol === "ag_ui" ? agUiBody : uiBody)(testCase);
  } catch (thrown) {
    error = thrown;
  }
  return { ok: captured.length === 1, request: captured[0] ?? null, error: errorInfo(error) };
});
