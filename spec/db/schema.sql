-- The chat_sessions table and its indexes: the database contract (DB-003, DB-004).
-- Columns and indexes are those of the GNS3 design document (gns3-copilot-chat-api-design.md,
-- "chat_sessions Table Structure"); thread_id is unique. Statements are idempotent, so an implementation
-- may run this file on every open, after the migrations of spec/db/contract.yaml.
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
    stats TEXT,
    pinned BOOLEAN DEFAULT FALSE
);
CREATE UNIQUE INDEX IF NOT EXISTS idx_thread_id ON chat_sessions(thread_id);
CREATE INDEX IF NOT EXISTS idx_user_project ON chat_sessions(user_id, project_id);
CREATE INDEX IF NOT EXISTS idx_pinned_updated ON chat_sessions(pinned DESC, updated_at DESC);
