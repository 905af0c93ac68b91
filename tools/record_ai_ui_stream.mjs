// Record the UI message stream that npm `ai`'s own server sends, the canonical implementation of the protocol, as
// fixtures of the suite's protocol rules (tests/conformance/fixtures/ui/, judged by
// tests/conformance/test_ui_canonical.py).
//
//     node tools/record_ai_ui_stream.mjs [--check]      (from the repository's root, after `npm ci`)
//
// Each turn is `streamText` over `ai/test`'s MockLanguageModelV3, served by `result.pipeUIMessageStreamToResponse`
// from a node:http server on 127.0.0.1 and fetched as DefaultChatTransport would POST it; the fixture keeps the
// status, the headers (but `date`) and the body byte for byte. The mock's ids are fixed and the message id is
// given (generateMessageId), so a second run writes the same files; --check exits 1 naming each stale file.
import { readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { jsonSchema, stepCountIs, streamText, tool } from "ai";
import { MockLanguageModelV3, simulateReadableStream } from "ai/test";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
const OUT = join(ROOT, "tests", "conformance", "fixtures", "ui");
const VERSION = createRequire(import.meta.url)("ai/package.json").version;

const usage = (input, output) => ({
  inputTokens: { total: input, noCache: input, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: output, text: output, reasoning: undefined },
});
const finish = (unified, input, output) => ({
  type: "finish",
  finishReason: { unified, raw: unified },
  usage: usage(input, output),
});
const text = (id, ...deltas) => [
  { type: "text-start", id },
  ...deltas.map((delta) => ({ type: "text-delta", id, delta })),
  { type: "text-end", id },
];
const toolCall = (id, name, ...deltas) => [
  { type: "tool-input-start", id, toolName: name },
  ...deltas.map((delta) => ({ type: "tool-input-delta", id, delta })),
  { type: "tool-input-end", id },
  { type: "tool-call", toolCallId: id, toolName: name, input: deltas.join("") },
];
const streamOf = (chunks) => ({
  stream: simulateReadableStream({ chunks: [{ type: "stream-start", warnings: [] }, ...chunks] }),
});

// The tool runs on the server (it has `execute`): the stream carries its output (or its error) itself.
const topology = (fails) =>
  tool({
    description: "The project's topology",
    inputSchema: jsonSchema({ type: "object", properties: { detail: { type: "string" } } }),
    execute: async () => {
      if (fails) throw new Error("the controller is unreachable");
      return "4 nodes (R1, R2, SW1, PC1) and 3 links";
    },
  });

// A function: each turn needs fresh streams (a ReadableStream is read once).
const toolSteps = () => [
  streamOf([...toolCall("call_1", "get_topology", '{"detail":', '"summary"}'), finish("tool-calls", 120, 10)]),
  streamOf([...text("txt_2", "The topology has ", "two routers."), finish("stop", 180, 15)]),
];

// fixture name -> the streamText options of its turn
const TURNS = {
  text: () => ({
    model: new MockLanguageModelV3({
      doStream: streamOf([...text("txt_1", "Hello, ", "world."), finish("stop", 100, 5)]),
    }),
  }),
  tool: () => ({
    model: new MockLanguageModelV3({ doStream: toolSteps() }),
    tools: { get_topology: topology(false) },
    stopWhen: stepCountIs(5),
  }),
  "tool-error": () => ({
    model: new MockLanguageModelV3({ doStream: toolSteps() }),
    tools: { get_topology: topology(true) },
    stopWhen: stepCountIs(5),
  }),
  "llm-error": () => ({
    model: new MockLanguageModelV3({
      doStream: async () => {
        throw new Error("the model is overloaded");
      },
    }),
  }),
  "mid-stream-error": () => ({
    model: new MockLanguageModelV3({
      doStream: streamOf([
        { type: "text-start", id: "txt_1" },
        { type: "text-delta", id: "txt_1", delta: "Partial " },
        { type: "error", error: new Error("the connection dropped") },
      ]),
    }),
  }),
};

function serve() {
  const server = createServer((request, response) => {
    const name = request.url.slice(1);
    request.resume();
    request.on("end", () => {
      const result = streamText({ ...TURNS[name](), prompt: "What is in my project?", onError: () => {} });
      result.pipeUIMessageStreamToResponse(response, { generateMessageId: () => `msg_${name}` });
    });
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(server)));
}

async function record(port, name) {
  const user = { id: "user_1", role: "user", parts: [{ type: "text", text: "What is in my project?" }] };
  const body = { id: `chat_${name}`, messages: [user], trigger: "submit-message" };
  const answer = await fetch(`http://127.0.0.1:${port}/${name}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const headers = {};
  answer.headers.forEach((value, key) => {
    if (key !== "date") headers[key] = value;
  });
  const produced =
    `npm ai ${VERSION}: streamText (MockLanguageModelV3 of ai/test) + pipeUIMessageStreamToResponse, ` +
    "recorded over HTTP by tools/record_ai_ui_stream.mjs";
  return { produced_by: produced, request: body, status: answer.status, headers, body: await answer.text() };
}

const check = process.argv.includes("--check");
const server = await serve();
const stale = [];
for (const name of Object.keys(TURNS)) {
  const path = join(OUT, `${name}.json`);
  const text = `${JSON.stringify(await record(server.address().port, name), null, 2)}\n`;
  if (!check) writeFileSync(path, text);
  else if (readFileSync(path, "utf8") !== text) stale.push(path);
}
server.close();
if (stale.length) {
  console.error(`stale: ${stale.join(", ")}`);
  process.exit(1);
}
