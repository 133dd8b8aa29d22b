"""Ordered schema migrations of the PostgreSQL store. Migration N brings a database from
version N-1 to N (the same version table as SQLite's: `schema_version`).

The tables mirror SQLite's (store/schema.py) so that `migrate` copies rows as they are. Text
columns that are compared or sorted use the "C" collation: SQLite compares bytes, and an ISO
timestamp must sort the same on any server locale. Never edit a released migration: append one.
"""

from __future__ import annotations

from smartsearch_mcp.store.queries import folded

# The text search configuration of `turns.fts`: English Snowball stems and no stop words, like
# SQLite's `porter unicode61` tokenizer (which keeps every word). Named in the column's
# expression, so it must exist before the table.
TS_CONFIG = "smartsearch_english"
# ASCII punctuation becomes space before parsing (under the "C" collation [[:punct:]] is
# ASCII only): PostgreSQL's parser would otherwise keep "config.toml", "v1.2" or "a@b.com" as
# one token, which a query of words (store/queries.py, `fts_quote`) never matches; FTS5's
# tokenizer splits them into words too.
FTS_DOCUMENT = (
    f"to_tsvector('{TS_CONFIG}'::regconfig, "
    "regexp_replace(text || ' ' || coalesce(speaker, ''), '[[:punct:]]+', ' ', 'g'))"
)

MIGRATIONS: list[tuple[str, ...]] = [
    (
        """CREATE TABLE IF NOT EXISTS schema_version (
            version INTEGER PRIMARY KEY,
            applied_at TEXT NOT NULL
        )""",
        # Trusted extensions (PostgreSQL 13+): a database owner may create them. Present
        # already (created by an administrator), this is a no-op that needs no privilege.
        "CREATE EXTENSION IF NOT EXISTS pg_trgm",
        "CREATE TEXT SEARCH DICTIONARY smartsearch_english_stem "
        "(TEMPLATE = snowball, Language = english)",
        f"CREATE TEXT SEARCH CONFIGURATION {TS_CONFIG} (COPY = english)",
        f"ALTER TEXT SEARCH CONFIGURATION {TS_CONFIG} ALTER MAPPING FOR asciiword, "
        "asciihword, hword_asciipart, word, hword, hword_part WITH smartsearch_english_stem",
        """CREATE TABLE sessions (
            namespace TEXT COLLATE "C" NOT NULL,
            id TEXT COLLATE "C" NOT NULL,
            first_timestamp TEXT COLLATE "C",
            last_timestamp TEXT COLLATE "C",
            turn_count INTEGER NOT NULL DEFAULT 0,
            created_at TEXT COLLATE "C" NOT NULL,
            PRIMARY KEY (namespace, id)
        )""",
        # Ids come from this sequence, taken by `remember` under the write lock: never reused
        # (a rolled-back call's ids are skipped), and they commit in increasing order.
        "CREATE SEQUENCE turns_id_seq AS BIGINT",
        f"""CREATE TABLE turns (
            id BIGINT PRIMARY KEY,
            namespace TEXT COLLATE "C" NOT NULL,
            session_id TEXT COLLATE "C" NOT NULL,
            position INTEGER NOT NULL,
            speaker TEXT COLLATE "C",
            role TEXT NOT NULL CHECK (role IN ('user', 'assistant', 'other')),
            text TEXT COLLATE "C" NOT NULL,
            timestamp TEXT COLLATE "C",
            timestamp_raw TEXT,
            created_at TEXT NOT NULL,
            metadata TEXT NOT NULL DEFAULT '{{}}',
            content_hash TEXT NOT NULL,
            fts TSVECTOR GENERATED ALWAYS AS ({FTS_DOCUMENT}) STORED,
            FOREIGN KEY (namespace, session_id) REFERENCES sessions (namespace, id)
                ON DELETE CASCADE
        )""",
        "CREATE INDEX turns_session ON turns (namespace, session_id, position)",
        "CREATE INDEX turns_time ON turns (namespace, timestamp, id)",
        "CREATE INDEX turns_namespace_id ON turns (namespace, id)",
        "CREATE INDEX turns_fts ON turns USING GIN (fts)",
        # grep's substring prefilter (`folded(text) LIKE '%…%'`) is served by this index.
        f"CREATE INDEX turns_trigram ON turns USING GIN (({folded('text')}) gin_trgm_ops)",
        """CREATE TABLE embeddings (
            model TEXT COLLATE "C" NOT NULL,
            turn_id BIGINT NOT NULL REFERENCES turns (id) ON DELETE CASCADE,
            start INTEGER NOT NULL,
            vector BYTEA NOT NULL,
            PRIMARY KEY (model, turn_id, start)
        )""",
        "CREATE INDEX embeddings_turn ON embeddings (turn_id)",
        """CREATE TABLE remember_calls (
            namespace TEXT COLLATE "C" NOT NULL,
            digest TEXT NOT NULL,
            session_id TEXT NOT NULL,
            ids TEXT NOT NULL,
            created_at TEXT COLLATE "C" NOT NULL,
            PRIMARY KEY (namespace, digest)
        )""",
        "CREATE INDEX remember_calls_created ON remember_calls (created_at)",
        # One row: every write of turns takes its lock first (one writer at a time, as in
        # SQLite, whichever machine it runs on) and counts up `version`, which every reader
        # anywhere sees change on commit (the store's `data_version`).
        """CREATE TABLE store_changes (
            id INTEGER PRIMARY KEY CHECK (id = 1),
            version BIGINT NOT NULL
        )""",
        "INSERT INTO store_changes (id, version) VALUES (1, 0)",
    ),
]
