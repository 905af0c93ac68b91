// One project's chat: the session list (pin, rename, delete, statistics) and the open conversation.

import { generateId } from 'ai';
import { useCallback, useEffect, useState, type FormEvent } from 'react';

import type { ChatApi, ChatSession, Scenario } from './api';
import { Conversation } from './Conversation';

interface Props {
  api: ChatApi;
  scenarios: Scenario[];
  initialSession: string | null;
  onSession: (sessionId: string) => void;
  fail: (error: unknown) => void;
}

interface Current {
  id: string;
  // Not on the server (made here, or a link to a chat that never had a turn): nothing to load. The server has
  // exactly the sessions it lists (LIST-001), so the listing decides for the id the page was opened with (null
  // until it comes): asking for the messages of an unlisted id would only get a 404.
  isNew: boolean | null;
}

const listed = (sessions: ChatSession[], id: string) => sessions.some((s) => s.thread_id === id);

// The server lists sessions in its order (pinned first, then the most recently updated: LIST-002).
export function ProjectChat({ api, scenarios, initialSession, onSession, fail }: Props) {
  const [sessions, setSessions] = useState<ChatSession[] | null>(null);
  // A new chat's id is made here: the chat id is the session id, and an unused one creates the session (UI-001).
  const [current, setCurrent] = useState<Current>(() =>
    initialSession ? { id: initialSession, isNew: null } : { id: generateId(), isNew: true },
  );

  const refresh = useCallback(() => {
    api.sessions().then((list) => {
      setSessions(list);
      setCurrent((c) => (c.isNew === null ? { id: c.id, isNew: !listed(list, c.id) } : c));
    }, fail);
  }, [api, fail]);

  useEffect(() => {
    refresh();
  }, [refresh]);
  useEffect(() => {
    onSession(current.id);
  }, [current.id, onSession]);

  // At a phone's width the list folds into a bar above the conversation (styles.css); wider, it is always shown.
  const [listOpen, setListOpen] = useState(false);
  const newChat = () => setCurrent({ id: generateId(), isNew: true });
  // Choosing a conversation folds the list: the conversation is what the user came for.
  const choose = (next: Current) => {
    setCurrent(next);
    setListOpen(false);
  };
  const act = (action: Promise<unknown>) => action.then(refresh, fail);
  const remove = (sessionId: string) =>
    act(
      api.remove(sessionId).then(() => {
        if (sessionId === current.id) newChat();
      }),
    );
  const session = sessions?.find((s) => s.thread_id === current.id) ?? null;

  return (
    <div className="project-chat">
      <aside className={listOpen ? 'sidebar open' : 'sidebar'} aria-label="Sessions">
        <div className="sidebar-head">
          <button
            type="button"
            className="list-toggle"
            aria-expanded={listOpen}
            aria-controls="session-list"
            onClick={() => setListOpen((open) => !open)}
          >
            Sessions <span className="badge">{sessions?.length ?? '…'}</span>
            <span aria-hidden="true">{listOpen ? '▴' : '▾'}</span>
          </button>
          <button type="button" className="primary new-chat" onClick={() => choose({ id: generateId(), isNew: true })}>
            New chat
          </button>
        </div>
        <div className="session-list" id="session-list">
          {sessions === null ? (
            <p className="muted">Loading sessions…</p>
          ) : sessions.length === 0 ? (
            <p className="muted">No sessions yet: send a message.</p>
          ) : (
            <ul className="sessions">
              {sessions.map((s) => (
                <SessionItem
                  key={s.thread_id}
                  session={s}
                  current={s.thread_id === current.id}
                  onOpen={() => choose({ id: s.thread_id, isNew: false })}
                  onPin={() => act(api.pin(s.thread_id, !s.pinned))}
                  onRename={(title) => act(api.rename(s.thread_id, title))}
                  onDelete={() => remove(s.thread_id)}
                />
              ))}
            </ul>
          )}
        </div>
      </aside>
      <main className="chat">
        <Statistics session={session} />
        {current.isNew === null ? (
          <p className="conversation muted">Loading the conversation…</p>
        ) : (
          <Conversation
            key={current.id}
            api={api}
            sessionId={current.id}
            isNew={current.isNew}
            scenarios={scenarios}
            onActivity={refresh}
            fail={fail}
          />
        )}
      </main>
    </div>
  );
}

interface SessionItemProps {
  session: ChatSession;
  current: boolean;
  onOpen: () => void;
  onPin: () => void;
  onRename: (title: string) => Promise<unknown>;
  onDelete: () => void;
}

function SessionItem({ session, current, onOpen, onPin, onRename, onDelete }: SessionItemProps) {
  const [mode, setMode] = useState<'view' | 'rename' | 'confirm-delete'>('view');
  const [title, setTitle] = useState(session.title);

  const rename = (event: FormEvent) => {
    event.preventDefault();
    const trimmed = title.trim();
    if (trimmed && trimmed !== session.title) void onRename(trimmed).then(() => setMode('view'));
    else setMode('view');
  };

  const classes = ['session', current ? 'current' : '', session.pinned ? 'pinned' : ''].filter(Boolean);
  return (
    <li className={classes.join(' ')} data-testid="session" data-session-id={session.thread_id}>
      {mode === 'rename' ? (
        <form onSubmit={rename} className="rename">
          <input
            aria-label="New title"
            value={title}
            maxLength={255}
            autoFocus
            onChange={(e) => setTitle(e.target.value)}
            onKeyDown={(e) => e.key === 'Escape' && setMode('view')}
          />
          <button type="submit">Save</button>
          <button type="button" onClick={() => setMode('view')}>
            Cancel
          </button>
        </form>
      ) : (
        <button type="button" className="session-open" onClick={onOpen} aria-current={current ? 'true' : undefined}>
          <span className="session-title">
            {session.pinned && <span className="badge pin-badge">Pinned</span>}
            <span data-testid="session-title">{session.title}</span>
          </span>
          <span className="session-meta">
            {plural(session.message_count, 'message')} · {plural(session.llm_calls_count, 'LLM call')} ·{' '}
            {plural(session.total_tokens, 'token')}
          </span>
          {/* Sessions often share a title ("New Conversation"): when each was last used tells them apart. */}
          <time className="session-meta" dateTime={session.updated_at} data-testid="session-time">
            {lastUsed(session.updated_at)}
          </time>
        </button>
      )}
      {mode === 'confirm-delete' ? (
        <div className="session-actions confirm" role="group" aria-label="Confirm deletion">
          <span>Delete this session?</span>
          <button type="button" className="danger" onClick={onDelete}>
            Confirm delete
          </button>
          <button type="button" onClick={() => setMode('view')}>
            Keep
          </button>
        </div>
      ) : (
        mode === 'view' && (
          <div className="session-actions">
            <button type="button" onClick={onPin} aria-pressed={session.pinned}>
              {session.pinned ? 'Unpin' : 'Pin'}
            </button>
            <button
              type="button"
              onClick={() => {
                setTitle(session.title);
                setMode('rename');
              }}
            >
              Rename
            </button>
            <button type="button" onClick={() => setMode('confirm-delete')}>
              Delete
            </button>
          </div>
        )
      )}
    </li>
  );
}

function plural(count: number, noun: string): string {
  return `${count.toLocaleString('en')} ${noun}${count === 1 ? '' : 's'}`;
}

const STATISTICS: [keyof ChatSession, string][] = [
  ['message_count', 'Messages'],
  ['llm_calls_count', 'LLM calls'],
  ['input_tokens', 'Input tokens'],
  ['output_tokens', 'Output tokens'],
  ['total_tokens', 'Total tokens'],
];

/** The open session's statistics, as the server counts them (STATS-*). */
function Statistics({ session }: { session: ChatSession | null }) {
  if (!session) {
    return (
      <section className="statistics" aria-label="Statistics">
        <h2>New conversation</h2>
        <p className="muted">Its statistics appear once the first turn has started.</p>
      </section>
    );
  }
  return (
    <section className="statistics" aria-label="Statistics" data-testid="statistics">
      <h2 data-testid="statistics-title">{session.title}</h2>
      <dl>
        {STATISTICS.map(([key, label]) => (
          <div key={key}>
            <dt>{label}</dt>
            <dd data-stat={key}>{String(session[key])}</dd>
          </div>
        ))}
        <div>
          <dt>Last message</dt>
          <dd data-stat="last_message_at">{timeOf(session.last_message_at)}</dd>
        </div>
      </dl>
    </section>
  );
}

function timeOf(timestamp: string | null): string {
  return timestamp ? new Date(timestamp).toLocaleTimeString('en-GB') : '—';
}

/** When a session was last used, as this browser's clock reads it: the time today, else the date and time. */
function lastUsed(iso: string): string {
  const when = new Date(iso);
  if (Number.isNaN(when.getTime())) return iso;
  const today = new Date().toDateString() === when.toDateString();
  const time = when.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', second: '2-digit' });
  return today ? `used at ${time}` : `used ${when.toLocaleDateString()} ${time}`;
}
