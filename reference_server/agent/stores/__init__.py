"""Where a project's chat data lives: `chat_sessions`, the checkpoints and the busy lease (base.py).

sqlite.py is the design document's embedded default, one file per project (DB-001); postgres.py keeps every project
in one PostgreSQL database shared by several worker processes. The agent, the turn and the routes see only base.py.
"""
