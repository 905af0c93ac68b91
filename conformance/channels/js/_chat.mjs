// npm `ai`'s own chat client, the code `useChat` runs, without React (ui-chat.mjs, request-bodies.mjs).
//
// `ai` 6 exports the framework-free chat as `AbstractChat` (src/ui/chat.ts); it needs only a `ChatState`
// (status, error, messages, pushMessage, popMessage, replaceMessage, snapshot). @ai-sdk/react's `Chat` is
// `AbstractChat` plus a React-subscribable state; here the state is a plain object, and `snapshot` is
// `structuredClone`, as in the React one.
import { AbstractChat } from "ai";

class PlainChatState {
  constructor(messages = []) {
    this.status = "ready";
    this.error = undefined;
    this.messages = messages;
  }
  pushMessage(message) {
    this.messages = this.messages.concat(message);
  }
  popMessage() {
    this.messages = this.messages.slice(0, -1);
  }
  replaceMessage(index, message) {
    this.messages = [...this.messages.slice(0, index), this.snapshot(message), ...this.messages.slice(index + 1)];
  }
  snapshot(thing) {
    return structuredClone(thing);
  }
}

/** `new Chat({id, transport, messages?})`: a chat whose state holds `messages` (UIMessage[]) to begin with. */
export class Chat extends AbstractChat {
  constructor({ messages, ...init }) {
    super({ ...init, state: new PlainChatState(messages ?? []) });
  }
}
