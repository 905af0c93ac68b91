// One session's conversation over the UI message stream channel (POST {prefix}/ui), with `useChat` and
// `DefaultChatTransport` as any AI SDK UI would; a session the server lists is first loaded from
// GET {prefix}/ui/{id}/messages, so a reloaded page shows it again.

import { useChat } from '@ai-sdk/react';
import {
  DefaultChatTransport,
  getToolName,
  isToolUIPart,
  type DynamicToolUIPart,
  type ToolUIPart,
  type UIMessage,
} from 'ai';
import { useEffect, useMemo, useRef, useState, type ReactNode } from 'react';

import { ApiError, chatErrorMessage, type ChatApi, type Scenario } from './api';

// What the server's `finish` chunk carries as message metadata (CHANNEL-008).
interface Metadata {
  sessionId?: string;
  usage?: { inputTokens: number; outputTokens: number; totalTokens: number };
}
type Message = UIMessage<Metadata>;

const DEFAULT_QUESTION = 'What is in my lab?';
const MARKER = /(\[\[fake-llm:[^\]]*\]\])/;

interface Props {
  api: ChatApi;
  sessionId: string;
  isNew: boolean;
  scenarios: Scenario[];
  onActivity: () => void;
  fail: (error: unknown) => void;
}

export function Conversation({ api, sessionId, isNew, fail, ...rest }: Props) {
  const [initial, setInitial] = useState<Message[] | null>(isNew ? [] : null);
  const [loadError, setLoadError] = useState<string | null>(null);

  useEffect(() => {
    if (isNew) return;
    let live = true;
    api.uiMessages<Message>(sessionId).then(
      (messages) => live && setInitial(messages),
      (error: unknown) => {
        if (!live) return;
        // Listed, then deleted before its messages came (from another tab, say): nothing left to load.
        if (error instanceof ApiError && error.code === 'session_not_found') setInitial([]);
        else if (error instanceof ApiError && error.status === 401) fail(error);
        else setLoadError(error instanceof Error ? error.message : String(error));
      },
    );
    return () => {
      live = false;
    };
  }, [api, sessionId, isNew, fail]);

  if (loadError) {
    return (
      <p className="conversation error" role="alert">
        Cannot load this session: {loadError}
      </p>
    );
  }
  if (initial === null) return <p className="conversation muted">Loading the conversation…</p>;
  return <LiveChat api={api} sessionId={sessionId} initialMessages={initial} {...rest} />;
}

interface LiveChatProps {
  api: ChatApi;
  sessionId: string;
  initialMessages: Message[];
  scenarios: Scenario[];
  onActivity: () => void;
}

function LiveChat({ api, sessionId, initialMessages, scenarios, onActivity }: LiveChatProps) {
  const transport = useMemo(
    () => new DefaultChatTransport<Message>({ api: api.uiUrl, headers: api.authorization }),
    [api],
  );
  // The chat id is the session id (UI-001): the server keeps the conversation, `useChat` shows it.
  // The answers the user stopped (the server's abort ended their stream, or closing it did): labelled so.
  const [stopped, setStopped] = useState<ReadonlySet<string>>(new Set());
  const stopping = useRef(false);
  const { messages, sendMessage, status, stop, error, clearError } = useChat<Message>({
    id: sessionId,
    messages: initialMessages,
    transport,
    onFinish: ({ message, isAbort }) => {
      if (isAbort || stopping.current) setStopped((ids) => new Set(ids).add(message.id));
      stopping.current = false;
    },
  });
  const [text, setText] = useState('');
  const busy = status === 'submitted' || status === 'streaming';

  // The session list follows the turn: a new session is listed once its answer streams, and its statistics and
  // title are final once the stream has ended.
  const seen = useRef(status);
  useEffect(() => {
    if (status !== seen.current && status !== 'submitted') onActivity();
    seen.current = status;
  }, [status, onActivity]);

  // Braces, not an expression: an effect returns its clean-up or nothing, and scrollIntoView returns a promise
  // in recent browsers.
  const end = useRef<HTMLDivElement>(null);
  useEffect(() => {
    void end.current?.scrollIntoView({ block: 'end' });
  }, [messages]);

  const send = (message: string) => {
    if (busy || !message.trim()) return;
    clearError();
    stopping.current = false;
    void sendMessage({ text: message });
    setText('');
  };
  // The server's abort stops the turn at a safe point and ends its stream itself, statistics written; where it
  // has no running turn to stop yet, or no abort at all (an optional capability), closing the stream stops it.
  const halt = () => {
    stopping.current = true;
    api.abort(sessionId).then(
      (result) => {
        if (result.aborted === false) void stop();
      },
      () => void stop(),
    );
  };

  return (
    <div className="conversation">
      <div className="messages" data-testid="messages">
        {messages.length === 0 && (
          <p className="muted empty-chat">Ask about the lab, or send with one of the fake LLM's scenarios below.</p>
        )}
        {messages.map((message, index) => (
          <MessageView
            key={message.id}
            message={message}
            pending={busy && index === messages.length - 1}
            stopped={stopped.has(message.id)}
          />
        ))}
        <div ref={end} />
      </div>
      {error && (
        <div className="error chat-error" role="alert">
          <span>{chatErrorMessage(error)}</span>
          <button type="button" onClick={clearError}>
            Dismiss
          </button>
        </div>
      )}
      <form
        className="composer"
        onSubmit={(event) => {
          event.preventDefault();
          send(text);
        }}
      >
        <textarea
          aria-label="Message"
          placeholder="Ask about the lab (Enter sends, Shift+Enter starts a new line)"
          rows={2}
          value={text}
          onChange={(event) => setText(event.target.value)}
          onKeyDown={(event) => {
            if (event.key === 'Enter' && !event.shiftKey && !event.nativeEvent.isComposing) {
              event.preventDefault();
              send(text);
            }
          }}
        />
        {busy ? (
          <button type="button" onClick={halt}>
            Stop
          </button>
        ) : (
          <button type="submit" className="primary" disabled={!text.trim()}>
            Send
          </button>
        )}
      </form>
      <div className="scenarios" role="group" aria-label="Fake LLM scenarios">
        <span className="muted">Send with a fake LLM scenario:</span>
        {scenarios.map((scenario) => (
          <button
            key={scenario.name}
            type="button"
            disabled={busy}
            title={`${scenario.description} Sends the message (or "${DEFAULT_QUESTION}") with ${scenario.marker}.`}
            onClick={() => send(`${text.trim() || DEFAULT_QUESTION} ${scenario.marker}`)}
          >
            {scenario.name}
          </button>
        ))}
        <span className="status" aria-live="polite">
          {status === 'submitted' ? 'Waiting for the copilot…' : status === 'streaming' ? 'Streaming…' : ''}
        </span>
      </div>
    </div>
  );
}

function MessageView({ message, pending, stopped }: { message: Message; pending: boolean; stopped: boolean }) {
  const usage = message.metadata?.usage;
  const shown = message.parts.filter((part) => part.type === 'text' || isToolUIPart(part));
  if (shown.length === 0 && pending) return null; // the answer has begun, with nothing to show yet
  return (
    <article className={`message ${message.role}`} data-testid={`message-${message.role}`}>
      <header>
        {message.role === 'user' ? 'You' : 'Copilot'}
        {stopped && (
          <span className="badge stopped-badge" data-testid="stopped">
            Stopped
          </span>
        )}
      </header>
      {shown.length === 0 && <p className="text muted">No answer (the turn ended before one came).</p>}
      {message.parts.map((part, index) => {
        if (part.type === 'text') return <Text key={index} text={part.text} />;
        if (isToolUIPart(part)) return <ToolCall key={part.toolCallId} part={part} />;
        return null; // step-start and the parts this server never sends
      })}
      {usage && (
        <footer className="usage">
          {usage.inputTokens} input · {usage.outputTokens} output tokens
        </footer>
      )}
    </article>
  );
}

/** Text, with a fake LLM tag shown as what it is. */
function Text({ text }: { text: string }) {
  const pieces: ReactNode[] = text
    .split(MARKER)
    .map((piece, index) => (index % 2 === 1 ? <code key={index} className="marker">{piece}</code> : piece));
  return <p className="text">{pieces}</p>;
}

// The server runs its tools: each shows as a provider-executed part that goes from arguments streaming in to
// running to its output (UI-003).
const TOOL_STATES: Record<string, string> = {
  'input-streaming': 'preparing',
  'input-available': 'running',
  'output-available': 'done',
  'output-error': 'failed',
};

function ToolCall({ part }: { part: ToolUIPart | DynamicToolUIPart }) {
  const label = TOOL_STATES[part.state] ?? part.state;
  return (
    <div className={`tool ${label}`} data-testid="tool-call" data-state={part.state}>
      <div className="tool-head">
        <span className="tool-kind">tool</span>
        <code className="tool-name">{getToolName(part)}</code>
        <span className="badge">{label}</span>
      </div>
      {part.input !== undefined && <pre className="tool-input">{formatted(part.input)}</pre>}
      {part.state === 'output-available' && <pre className="tool-output">{formatted(part.output)}</pre>}
      {part.state === 'output-error' && <p className="error">{part.errorText}</p>}
    </div>
  );
}

function formatted(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value, null, 2);
}
