// UIMessage[] checked by npm `ai`'s own `safeValidateUIMessages` (what a server built on `ai` runs on the
// `messages` of a request; the schema it uses, `uiMessagesSchema`, is internal to the package).
// A case: {"messages": [...]}. Result: {ok, messages (as validated) | null, error: {name, message} | null}.
import { safeValidateUIMessages } from "ai";
import { errorInfo, plain, runCases } from "./_io.mjs";

await runCases(async ({ messages }) => {
  const result = await safeValidateUIMessages({ messages });
  return result.success
    ? { ok: true, messages: plain(result.data), error: null }
    : { ok: false, messages: null, error: errorInfo(result.error) };
});
