// Derives the JSON Schemas of the JavaScript protocol packages from their own zod schemas, mechanically.
// Run by tools/derive_channel_schemas.py (which writes spec/channels/official/); on its own it prints
// one JSON object {name: {schema, comment}} on stdout.
//
//   node tools/derive_channel_schemas.mjs
//
// ai 6.0.325
//   `uiMessageChunkSchema` is `lazySchema(() => zodSchema(z.union([...])))`. The package's own
//   `asSchema(uiMessageChunkSchema).jsonSchema` throws "Custom types cannot be represented in JSON Schema"
//   (the `data-*` chunk types a `z.custom` predicate), and its zod object is not exported. So the `zod` object
//   is taken where the package hands it to `zodSchema` of @ai-sdk/provider-utils: a module resolve hook
//   (node:module register) gives `ai` a wrapper of @ai-sdk/provider-utils whose `zodSchema` records its
//   argument before calling the real one. The same capture yields the internal `uiMessagesSchema` that
//   `safeValidateUIMessages` validates `UIMessage[]` with (not exported either).
//   The zod objects are converted with zod's own `z.toJSONSchema` (zod 4.6.7, the copy ai and @ag-ui/core
//   load), with the options `zodSchema` uses (target draft-07, io input, reused inline), but *without* the
//   `addAdditionalPropertiesToJsonSchema` post-pass of @ai-sdk/provider-utils: that pass sets
//   `additionalProperties: false` for providers' structured output, whereas the runtime parser uses
//   `z.looseObject` and lets unknown keys through.
// @ag-ui/core 1.0.0
//   `EventSchemas` and `RunAgentInputSchema` are exported from `@ag-ui/core/schemas` (zod 4, "zod/v4");
//   converted with `z.toJSONSchema` (target draft-2020-12, io input).
//
// zod-only features that JSON Schema cannot express come out as `{}` (anything) with a "$comment" naming
// the feature: `z.custom` predicates; `.refine(...)` checks, which zod's converter drops, get a "$comment" too.
import { register } from "node:module";
import { createRequire } from "node:module";

const HOOKS = `
export async function resolve(specifier, context, nextResolve) {
  if (specifier === "@ai-sdk/provider-utils" && context.parentURL && context.parentURL.includes("/node_modules/ai/")) {
    const real = await nextResolve(specifier, context);
    const shim =
      "export * from " + JSON.stringify(real.url) + ";\\n" +
      "import * as real from " + JSON.stringify(real.url) + ";\\n" +
      "export function zodSchema(schema, options) {\\n" +
      "  (globalThis.__capturedZodSchemas ??= []).push(schema);\\n" +
      "  return real.zodSchema(schema, options);\\n" +
      "}\\n";
    return { url: "data:text/javascript," + encodeURIComponent(shim), shortCircuit: true, format: "module" };
  }
  return nextResolve(specifier, context);
}
`;
register("data:text/javascript," + encodeURIComponent(HOOKS), import.meta.url);

const require = createRequire(import.meta.url);
const version = (name) => require(`${name}/package.json`).version;

const ai = await import("ai");
const { z } = await import("zod");
const agui = await import("@ag-ui/core/schemas");

/** The zod object(s) `ai` hands to zodSchema while `run` executes. */
async function captureZod(run) {
  globalThis.__capturedZodSchemas ??= [];
  const before = globalThis.__capturedZodSchemas.length;
  await run();
  const captured = globalThis.__capturedZodSchemas.slice(before);
  if (captured.length !== 1) {
    throw new Error(`expected to capture one zod schema, captured ${captured.length}`);
  }
  return captured[0];
}

/** z.toJSONSchema, with every feature JSON Schema cannot express marked by a "$comment". */
function toJSONSchema(schema, options) {
  return z.toJSONSchema(schema, {
    ...options,
    unrepresentable: ({ zodSchema, message }) => {
      const def = zodSchema._zod.def;
      const note = def.error ? `; the package's message when it fails: ${JSON.stringify(def.error().message ?? def.error())}` : "";
      return {
        $comment: `zod ${def.type}: ${message} (a predicate checked by the package at runtime, unconstrained here${note})`,
      };
    },
    override: ({ zodSchema, jsonSchema }) => {
      const checks = zodSchema._zod.def.checks ?? [];
      if (checks.some((check) => check._zod.def.check === "custom")) {
        jsonSchema.$comment = "zod .refine(): a predicate checked by the package at runtime, not expressed here";
      }
    },
  });
}

const aiVersion = version("ai");
const aguiVersion = version("@ag-ui/core");
const zodVersion = version("zod");
const aiOptions = { target: "draft-07", io: "input", reused: "inline" };

const chunkZod = await captureZod(() => ai.uiMessageChunkSchema());
const messagesZod = await captureZod(() =>
  ai.safeValidateUIMessages({ messages: [{ id: "m", role: "user", parts: [{ type: "text", text: "x" }] }] }),
);

const out = {
  ai_ui_message_chunk: {
    schema: toJSONSchema(chunkZod, aiOptions),
    comment:
      `npm ai ${aiVersion}, export uiMessageChunkSchema (its zod 4 union, captured at zodSchema), ` +
      `converted by zod ${zodVersion} z.toJSONSchema(${JSON.stringify(aiOptions)}); tools/derive_channel_schemas.mjs`,
  },
  ai_ui_messages: {
    schema: toJSONSchema(messagesZod, aiOptions),
    comment:
      `npm ai ${aiVersion}, internal uiMessagesSchema of validateUIMessages/safeValidateUIMessages (not exported; ` +
      `its zod 4 array captured at zodSchema), converted by zod ${zodVersion} ` +
      `z.toJSONSchema(${JSON.stringify(aiOptions)}); tools/derive_channel_schemas.mjs`,
  },
  ag_ui_event: {
    schema: toJSONSchema(agui.EventSchemas, { target: "draft-2020-12", io: "input" }),
    comment:
      `npm @ag-ui/core ${aguiVersion}, export EventSchemas of @ag-ui/core/schemas, converted by zod ${zodVersion} ` +
      `z.toJSONSchema({"target":"draft-2020-12","io":"input"}); tools/derive_channel_schemas.mjs`,
  },
  ag_ui_run_agent_input: {
    schema: toJSONSchema(agui.RunAgentInputSchema, { target: "draft-2020-12", io: "input" }),
    comment:
      `npm @ag-ui/core ${aguiVersion}, export RunAgentInputSchema of @ag-ui/core/schemas, converted by zod ` +
      `${zodVersion} z.toJSONSchema({"target":"draft-2020-12","io":"input"}); tools/derive_channel_schemas.mjs`,
  },
};

process.stdout.write(JSON.stringify(out));
