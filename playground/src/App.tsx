// The page: log in, pick or create a project, then chat in it (ProjectChat.tsx).

import { useCallback, useEffect, useMemo, useState, type FormEvent } from 'react';

import {
  ApiError,
  ChatApi,
  createProject,
  currentUser,
  getConfig,
  listProjects,
  logIn,
  logOut,
  openProject,
  SERVER,
  type PlaygroundConfig,
  type Project,
  type User,
} from './api';
import { readPlace, writePlace, type Place } from './location';
import { ProjectChat } from './ProjectChat';

// The token outlives a reload (the test reloads the page and expects the conversation back, still logged in).
const TOKEN_KEY = 'gns3-copilot-playground.token';

export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

export function App() {
  const [config, setConfig] = useState<PlaygroundConfig | null>(null);
  const [configError, setConfigError] = useState<string | null>(null);
  const [token, setToken] = useState<string | null>(() => localStorage.getItem(TOKEN_KEY));

  useEffect(() => {
    getConfig().then(setConfig, (error: unknown) => setConfigError(messageOf(error)));
  }, []);

  const loggedIn = useCallback((value: string) => {
    localStorage.setItem(TOKEN_KEY, value);
    setToken(value);
  }, []);
  const loggedOut = useCallback(() => {
    localStorage.removeItem(TOKEN_KEY);
    setToken(null);
  }, []);

  if (configError) {
    return (
      <p className="page-error" role="alert">
        Cannot read {SERVER}/playground/config.json: {configError}
        {SERVER && SERVER !== window.location.origin && ` (a page on ${window.location.origin} needs the server started with --cors-origin ${window.location.origin})`}
      </p>
    );
  }
  if (!config) return <p className="loading">Loading…</p>;
  if (!token) return <Login onLoggedIn={loggedIn} />;
  return <Workspace config={config} token={token} onLoggedOut={loggedOut} />;
}

function Login({ onLoggedIn }: { onLoggedIn: (token: string) => void }) {
  const [username, setUsername] = useState('');
  const [password, setPassword] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  const submit = (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setError(null);
    logIn(username, password).then(onLoggedIn, (reason: unknown) => {
      setError(messageOf(reason));
      setBusy(false);
    });
  };

  return (
    <main className="login">
      <form onSubmit={submit} aria-label="Log in">
        <h1>
          GNS3 Copilot <span className="muted">playground</span>
        </h1>
        <label>
          Username
          <input value={username} onChange={(e) => setUsername(e.target.value)} autoComplete="username" required />
        </label>
        <label>
          Password
          <input
            type="password"
            value={password}
            onChange={(e) => setPassword(e.target.value)}
            autoComplete="current-password"
            required
          />
        </label>
        <button type="submit" className="primary" disabled={busy}>
          Log in
        </button>
        {error && (
          <p className="error" role="alert">
            {error}
          </p>
        )}
        <p className="hint">A new reference server has the account admin / admin, whose LLM is the fake LLM.</p>
      </form>
    </main>
  );
}

interface WorkspaceProps {
  config: PlaygroundConfig;
  token: string;
  onLoggedOut: () => void;
}

function Workspace({ config, token, onLoggedOut }: WorkspaceProps) {
  const [user, setUser] = useState<User | null>(null);
  const [projects, setProjects] = useState<Project[] | null>(null);
  const [place, setPlace] = useState<Place>(readPlace);
  const [notice, setNotice] = useState<string | null>(null);

  const fail = useCallback(
    (error: unknown) => {
      if (error instanceof ApiError && error.status === 401) onLoggedOut(); // expired or revoked: log in again
      else setNotice(messageOf(error));
    },
    [onLoggedOut],
  );

  const refreshProjects = useCallback(() => listProjects(token).then(setProjects, fail), [token, fail]);

  useEffect(() => {
    currentUser(token).then(setUser, fail);
    void refreshProjects();
  }, [token, fail, refreshProjects]);

  useEffect(() => {
    writePlace(place);
  }, [place]);

  const active = projects?.find((project) => project.project_id === place.project) ?? null;

  // The chat API serves only opened projects (PROJECT-002): a closed one is opened when picked.
  useEffect(() => {
    if (active?.status === 'closed') {
      openProject(token, active.project_id).then(() => refreshProjects(), fail);
    }
  }, [active, token, fail, refreshProjects]);

  // One client per project and token: a refreshed project list must not reload the open conversation.
  const activeId = active?.project_id ?? null;
  const api = useMemo(
    () => (activeId ? new ChatApi(config.chat_prefix, activeId, token) : null),
    [activeId, config.chat_prefix, token],
  );
  const choose = (projectId: string) => setPlace({ project: projectId || null, session: null });
  const create = (name: string): Promise<boolean> =>
    createProject(token, name).then(
      async (project) => {
        await refreshProjects();
        setPlace({ project: project.project_id, session: null });
        return true;
      },
      (error: unknown) => {
        fail(error);
        return false;
      },
    );
  const logout = () => {
    logOut(token).then(onLoggedOut, onLoggedOut); // a token the server no longer takes is as good as gone
  };
  const onSession = useCallback((session: string) => setPlace((p) => ({ ...p, session })), []);

  return (
    <div className="workspace">
      <header className="topbar">
        <h1>
          GNS3 Copilot <span className="muted">playground</span>
        </h1>
        <ProjectPicker
          projects={projects ?? []}
          selected={active?.project_id ?? ''}
          onChoose={choose}
          onCreate={create}
        />
        <div className="who">
          <span>{user ? user.username : '…'}</span>
          <button type="button" onClick={logout}>
            Log out
          </button>
        </div>
      </header>
      {notice && (
        <div className="notice" role="alert">
          <span>{notice}</span>
          <button type="button" onClick={() => setNotice(null)}>
            Dismiss
          </button>
        </div>
      )}
      {api && active?.status === 'opened' ? (
        <ProjectChat
          key={active.project_id}
          api={api}
          scenarios={config.scenarios}
          initialSession={place.session}
          onSession={onSession}
          fail={fail}
        />
      ) : (
        <p className="empty">
          {projects === null ? 'Loading projects…' : active ? 'Opening the project…' : 'Pick or create a project.'}
        </p>
      )}
    </div>
  );
}

interface ProjectPickerProps {
  projects: Project[];
  selected: string;
  onChoose: (projectId: string) => void;
  onCreate: (name: string) => Promise<boolean>;
}

function ProjectPicker({ projects, selected, onChoose, onCreate }: ProjectPickerProps) {
  const [name, setName] = useState('');

  const submit = (event: FormEvent) => {
    event.preventDefault();
    const trimmed = name.trim();
    if (trimmed) void onCreate(trimmed).then((created) => created && setName(''));
  };

  return (
    <div className="projects">
      <select aria-label="Project" value={selected} onChange={(e) => onChoose(e.target.value)}>
        <option value="">Pick a project…</option>
        {projects.map((project) => (
          <option key={project.project_id} value={project.project_id}>
            {project.name}
            {project.status === 'closed' ? ' (closed)' : ''}
          </option>
        ))}
      </select>
      <form onSubmit={submit} className="inline">
        <input
          aria-label="New project name"
          placeholder="New project name"
          value={name}
          onChange={(e) => setName(e.target.value)}
        />
        <button type="submit" disabled={!name.trim()}>
          Create project
        </button>
      </form>
    </div>
  );
}
