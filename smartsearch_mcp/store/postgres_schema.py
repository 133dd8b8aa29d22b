"""Ordered schema migrations of the PostgreSQL store. Migration N brings a database from
version N-1 to N (the same version table as SQLite's: `schema_version`).

The tables mirror SQLite's (store/schema.py) so that `migrate` copies rows as they are. Text
columns that are compared or sorted use the "C" collation: SQLite compares bytes, and an ISO
timestamp must sort the same on any server locale. Never edit a released migration: append one.
"""

from __future__ import annotations

from smartsearch_mcp.store.queries import folded

# The text search configuration of `turns.fts` since migration 2: diacritics folded, the
# Porter stemmer (the algorithm of SQLite's `porter` tokenizer) and no stop words (FTS5 keeps
# every word). Migration 1's configuration (English Snowball stems) stays for its column
# expression.
TS_CONFIG = "smartsearch_porter"
_V1_TS_CONFIG = "smartsearch_english"

# The extensions the migrations create (trusted ones: a database owner may), once per
# database, in `public` where possible (store/postgres_open.py, `_shared_extensions`).
EXTENSIONS = ("pg_trgm", "unaccent")


def fts_document(config: str, text: str, speaker: str) -> str:
    """The tsvector of a turn's text and speaker. ASCII punctuation becomes space before
    parsing (under the "C" collation [[:punct:]] is ASCII only): PostgreSQL's parser would
    otherwise keep "config.toml", "v1.2" or "a@b.com" as one token, which a query of words
    (store/queries.py, `fts_quote`) never matches; FTS5's tokenizer splits them into words
    too."""
    return (
        f"to_tsvector('{config}'::regconfig, "
        f"regexp_replace({text} || ' ' || coalesce({speaker}, ''), '[[:punct:]]+', ' ', 'g'))"
    )


# A turn's length for BM25, as FTS5 counts it (its number of tokens): the last position in
# its tsvector (positions count every token; PostgreSQL keeps them up to 16,383).
_DOCUMENT_LENGTH = (
    "(SELECT coalesce(max(u.positions[array_upper(u.positions, 1)]), 0) FROM unnest(NEW.fts) u)"
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
        f"CREATE TEXT SEARCH CONFIGURATION {_V1_TS_CONFIG} (COPY = english)",
        f"ALTER TEXT SEARCH CONFIGURATION {_V1_TS_CONFIG} ALTER MAPPING FOR asciiword, "
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
            fts TSVECTOR GENERATED ALWAYS AS ({fts_document(_V1_TS_CONFIG, "text", "speaker")})
                STORED,
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
    # 2: full-text search ranks by FTS5's BM25 (store/postgres_fts.py), which needs each
    # turn's length and the table's turn and token totals, and it stems as FTS5's porter
    # tokenizer does. `fts` is filled by a trigger with the turn's length (one tsvector per
    # row: a generated length would parse the text a second time); the totals are kept in
    # `store_changes` by statement triggers, in the writing transaction. Every turn is
    # parsed again here, with the new stems.
    (
        # Diacritics folded before stemming, as FTS5's `remove_diacritics 2` does (a trusted
        # extension that ships with PostgreSQL, like pg_trgm).
        "CREATE EXTENSION IF NOT EXISTS unaccent",
        "CREATE TEXT SEARCH DICTIONARY smartsearch_porter_stem "
        "(TEMPLATE = snowball, Language = porter)",
        f"CREATE TEXT SEARCH CONFIGURATION {TS_CONFIG} (COPY = english)",
        f"ALTER TEXT SEARCH CONFIGURATION {TS_CONFIG} ALTER MAPPING FOR asciiword, "
        "asciihword, hword_asciipart WITH smartsearch_porter_stem",
        f"ALTER TEXT SEARCH CONFIGURATION {TS_CONFIG} ALTER MAPPING FOR word, hword, "
        "hword_part WITH unaccent, smartsearch_porter_stem",
        "ALTER TABLE turns ALTER COLUMN fts DROP EXPRESSION",
        "ALTER TABLE turns ADD COLUMN fts_tokens INTEGER NOT NULL DEFAULT 0",
        f"""CREATE FUNCTION smartsearch_turn_fts() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            NEW.fts := {fts_document(TS_CONFIG, 'NEW.text COLLATE "C"', "NEW.speaker")};
            NEW.fts_tokens := {_DOCUMENT_LENGTH};
            RETURN NEW;
        END $$""",
        "CREATE TRIGGER turns_fts BEFORE INSERT OR UPDATE OF text, speaker ON turns "
        "FOR EACH ROW EXECUTE FUNCTION smartsearch_turn_fts()",
        "UPDATE turns SET text = text",
        "ALTER TABLE store_changes ADD COLUMN turns BIGINT NOT NULL DEFAULT 0, "
        "ADD COLUMN tokens BIGINT NOT NULL DEFAULT 0",
        "UPDATE store_changes SET turns = (SELECT count(*) FROM turns), "
        "tokens = (SELECT coalesce(sum(fts_tokens), 0) FROM turns)",
        """CREATE FUNCTION smartsearch_count_turns() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF TG_OP IN ('INSERT', 'UPDATE') THEN
                UPDATE store_changes SET turns = turns + a.n, tokens = tokens + a.t
                FROM (SELECT count(*) AS n, coalesce(sum(fts_tokens), 0) AS t FROM added) a
                WHERE id = 1;
            END IF;
            IF TG_OP IN ('DELETE', 'UPDATE') THEN
                UPDATE store_changes SET turns = turns - r.n, tokens = tokens - r.t
                FROM (SELECT count(*) AS n, coalesce(sum(fts_tokens), 0) AS t FROM removed) r
                WHERE id = 1;
            END IF;
            RETURN NULL;
        END $$""",
        "CREATE TRIGGER turns_counted_insert AFTER INSERT ON turns REFERENCING NEW TABLE AS "
        "added FOR EACH STATEMENT EXECUTE FUNCTION smartsearch_count_turns()",
        "CREATE TRIGGER turns_counted_delete AFTER DELETE ON turns REFERENCING OLD TABLE AS "
        "removed FOR EACH STATEMENT EXECUTE FUNCTION smartsearch_count_turns()",
        "CREATE TRIGGER turns_counted_update AFTER UPDATE ON turns REFERENCING OLD TABLE AS "
        "removed NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION "
        "smartsearch_count_turns()",
    ),
]
