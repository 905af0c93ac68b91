-- chat_sessions on PostgreSQL: the columns of spec/db/schema.sql (DB-003) in PostgreSQL's types, for every project
-- of the deployment in one table. A client may name its session, so a session id is unique within its project
-- (as it is in a project's own SQLite file), not across projects. Run once, before the workers start.
CREATE TABLE IF NOT EXISTS chat_sessions (
    id BIGSERIAL PRIMARY KEY,
    thread_id TEXT NOT NULL,
    user_id TEXT NOT NULL,
    project_id TEXT NOT NULL,
    title TEXT NOT NULL DEFAULT 'New Conversation',
    message_count INTEGER NOT NULL DEFAULT 0,
    llm_calls_count INTEGER NOT NULL DEFAULT 0,
    input_tokens BIGINT NOT NULL DEFAULT 0,
    output_tokens BIGINT NOT NULL DEFAULT 0,
    total_tokens BIGINT NOT NULL DEFAULT 0,
    last_message_at TIMESTAMPTZ,
    created_at TIMESTAMPTZ NOT NULL DEFAULT CURRENT_TIMESTAMP,
    updated_at TIMESTAMPTZ NOT NULL DEFAULT CURRENT_TIMESTAMP,
    metadata JSONB,
    stats JSONB,
    pinned BOOLEAN NOT NULL DEFAULT FALSE,
    CONSTRAINT chat_sessions_project_thread UNIQUE (project_id, thread_id)
);
-- The contract's indexes (DB-004); thread_id's uniqueness is the constraint above, per project.
CREATE INDEX IF NOT EXISTS idx_thread_id ON chat_sessions(thread_id);
CREATE INDEX IF NOT EXISTS idx_pinned_updated ON chat_sessions(pinned DESC, updated_at DESC);
-- GET /sessions: one index serves its filter and its order, so the listing reads no row it does not return (LIST-001,
-- LIST-002; bench/ prints the plan at 1 000 000 sessions); the planner may still choose a bitmap scan and sort the
-- caller's own rows, whose number does not grow with the table's. It is also the contract's
-- idx_user_project (user_id, project_id), as its first two columns: that index on its own let the planner pick it
-- for a user it thought had few sessions, and sort.
CREATE INDEX IF NOT EXISTS idx_sessions_listing
    ON chat_sessions(user_id, project_id, pinned DESC, updated_at DESC, id DESC);
-- The server's own bookkeeping: turns started and not yet counted (AgentService.recover).
CREATE TABLE IF NOT EXISTS turns_in_flight (
    project_id TEXT NOT NULL,
    thread_id TEXT NOT NULL,
    user_message_id TEXT NOT NULL,
    PRIMARY KEY (project_id, thread_id)
);
