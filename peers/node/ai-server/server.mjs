// The `ai` package's own UI message stream server, as its documentation writes one for node:http: the body useChat's
// DefaultChatTransport posts ({id, messages: UIMessage[], trigger, messageId}), its messages turned into model
// messages by convertToModelMessages, streamText over @ai-sdk/openai-compatible (the suite's fake LLM), our tools
// (tools.mjs) in a multi-step loop, answered by pipeUIMessageStreamToResponse. Nothing of ours is added to the
// stream: it is the protocol's canonical server.
//
// `node server.mjs --port P --fake-llm URL --project-dir DIR` (peers/serve.py starts it inside a loopback-only
// network namespace): POST /api/chat (useChat's default path), GET /health; it listens on 127.0.0.1:P.
import { createServer } from "node:http";
import { parseArgs } from "node:util";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { convertToModelMessages, stepCountIs, streamText } from "ai";
import { makeTools } from "./tools.mjs";

const CHAT_PATH = "/api/chat";
const MAX_STEPS = 10; // a tool round trip is two steps; the fake LLM's scripts stop well before this

const { values: args } = parseArgs({
  options: { port: { type: "string" }, "fake-llm": { type: "string" }, "project-dir": { type: "string" } },
});
for (const name of ["port", "fake-llm", "project-dir"]) {
  if (!args[name]) {
    console.error(`usage: node server.mjs --port P --fake-llm URL --project-dir DIR (missing --${name})`);
    process.exit(2);
  }
}

const provider = createOpenAICompatible({
  name: "fake-llm",
  baseURL: args["fake-llm"],
  apiKey: "unused",
  includeUsage: true, // stream_options.include_usage: the model's usage reaches the finish chunks
});
const model = provider.chatModel("fake-model");
const tools = makeTools(args["project-dir"]);

async function readJson(request) {
  const chunks = [];
  for await (const chunk of request) chunks.push(chunk);
  return JSON.parse(Buffer.concat(chunks).toString("utf-8"));
}

function answer(response, status, body) {
  response.writeHead(status, { "content-type": "application/json" });
  response.end(JSON.stringify(body));
}

async function chat(request, response) {
  let messages;
  try {
    ({ messages } = await readJson(request));
    messages = await convertToModelMessages(messages, { tools });
  } catch (error) {
    return answer(response, 400, { error: `invalid request: ${error.message}` });
  }
  // A client that goes away ends the generation and any tool still running.
  const abort = new AbortController();
  response.on("close", () => {
    if (!response.writableFinished) abort.abort();
  });
  const result = streamText({ model, messages, tools, stopWhen: stepCountIs(MAX_STEPS), abortSignal: abort.signal });
  result.pipeUIMessageStreamToResponse(response);
}

const server = createServer((request, response) => {
  const path = new URL(request.url, "http://localhost").pathname;
  if (request.method === "GET" && path === "/health") return answer(response, 200, { status: "ok" });
  if (path !== CHAT_PATH) return answer(response, 404, { error: "not found" });
  if (request.method !== "POST") return answer(response, 405, { error: "method not allowed" });
  chat(request, response).catch((error) => {
    console.error(error);
    if (!response.headersSent) answer(response, 500, { error: "internal error" });
    else response.end();
  });
});

server.listen(Number(args.port), "127.0.0.1", () => {
  console.log(`ai-server listening on http://127.0.0.1:${server.address().port}`);
});
