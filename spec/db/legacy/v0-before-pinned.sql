-- Legacy schema v0: chat_sessions as it was before the `pinned` column existed (MIGRATION-001).
-- Databases created by early GNS3 copilot builds have this table and only the first two indexes.
CREATE TABLE IF NOT EXISTS chat_sessions (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    thread_id TEXT NOT NULL UNIQUE,
    user_id TEXT NOT NULL,
    project_id TEXT NOT NULL,
    title TEXT NOT NULL DEFAULT 'New Conversation',
    message_count INTEGER NOT NULL DEFAULT 0,
    llm_calls_count INTEGER NOT NULL DEFAULT 0,
    input_tokens INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    total_tokens INTEGER NOT NULL DEFAULT 0,
    last_message_at TIMESTAMP,
    created_at TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
    updated_at TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
    metadata TEXT,
    stats TEXT
);
CREATE UNIQUE INDEX IF NOT EXISTS idx_thread_id ON chat_sessions(thread_id);
CREATE INDEX IF NOT EXISTS idx_user_project ON chat_sessions(user_id, project_id);
