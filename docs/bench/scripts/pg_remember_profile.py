"""Backend CPU (from /proc/<backend pid>/stat) per 10,000 bench-scale turns, by what the
insert maintains (docs/bench/postgres.md). Run with `setup` first, then test names:
    python pg_remember_profile.py setup heap btree fk count trig trignolen ginfts trgm all
URL below: a throw-away cluster of your own."""

# ruff: noqa: E501

import asyncio
import os
import sys
import time

import psycopg

from smartsearch_mcp.bench.scale import TurnSynthesizer, load_source_corpus
from smartsearch_mcp.store.postgres import PostgresStore
from smartsearch_mcp.store.postgres_schema import TS_CONFIG, fts_document
from smartsearch_mcp.store.queries import folded

URL = "postgresql://postgres@127.0.0.1:55771/postgres"
N = int(os.environ.get("N", "10000"))


def cpu(pid):
    with open(f"/proc/{pid}/stat") as stat:
        f = stat.read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


async def setup():
    corpus = load_source_corpus(["../shared/data/locomo", "../shared/data/beam-100k"])
    turns = list(TurnSynthesizer(corpus, 0).turns(N))
    with psycopg.connect(URL, autocommit=True) as c:
        c.execute("DROP SCHEMA IF EXISTS prof CASCADE")
        c.execute("CREATE SCHEMA prof")
    store = await PostgresStore.open(URL + "?options=-csearch_path%3Dprof")
    await store.remember("scale", "s0", turns)
    await store.close()


BASE = """CREATE TABLE {t} (id BIGINT PRIMARY KEY, namespace TEXT COLLATE "C" NOT NULL,
 session_id TEXT COLLATE "C" NOT NULL, position INTEGER NOT NULL, speaker TEXT COLLATE "C",
 role TEXT NOT NULL CHECK (role IN ('user','assistant','other')), text TEXT COLLATE "C" NOT NULL,
 timestamp TEXT COLLATE "C", timestamp_raw TEXT, created_at TEXT NOT NULL, metadata TEXT NOT NULL DEFAULT '{{}}',
 content_hash TEXT NOT NULL, fts TSVECTOR, fts_tokens INTEGER NOT NULL DEFAULT 0)"""
COLS = "id, namespace, session_id, position, speaker, role, text, timestamp, timestamp_raw, created_at, metadata, content_hash"


def run(name, ddl, insert, pre=(), reps=2):
    out = []
    for _ in range(reps):
        with psycopg.connect(URL, autocommit=True) as c:
            c.execute("SET search_path = prof, public")
            c.execute("DROP TABLE IF EXISTS x CASCADE")
            c.execute(BASE.format(t="x"))
            for d in ddl:
                c.execute(d)
            pid = c.execute("SELECT pg_backend_pid()").fetchone()[0]
            for p in pre:
                c.execute(p)
            c.execute("CHECKPOINT")
            t0 = cpu(pid)
            w0 = time.perf_counter()
            with c.transaction():
                c.execute(insert)
            out.append((cpu(pid) - t0, time.perf_counter() - w0))
    print(
        f"{name:60s} cpu "
        + " / ".join(f"{a:.2f}" for a, _ in out)
        + "  wall "
        + " / ".join(f"{b:.2f}" for _, b in out),
        flush=True,
    )


PLAIN = f"INSERT INTO x ({COLS}) SELECT {COLS} FROM turns"
FTS_RE = fts_document(TS_CONFIG, "text", "speaker")
PUNCT = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"
FTS_TR = f"to_tsvector('{TS_CONFIG}'::regconfig, translate(text || ' ' || coalesce(speaker, ''), $p${PUNCT}$p$, '{' ' * len(PUNCT)}'))"
LEN = "(SELECT coalesce(max(u.positions[array_upper(u.positions, 1)]), 0) FROM unnest(v) u)"


def computed(doc):
    return f"INSERT INTO x ({COLS}, fts, fts_tokens) SELECT {COLS}, v, {LEN} FROM (SELECT *, {doc} AS v FROM turns OFFSET 0) s"


TRIGGER = [
    """CREATE OR REPLACE FUNCTION prof.smartsearch_turn_fts() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN NEW.fts := """
    + fts_document(TS_CONFIG, 'NEW.text COLLATE "C"', "NEW.speaker")
    + """;
            NEW.fts_tokens := (SELECT coalesce(max(u.positions[array_upper(u.positions, 1)]), 0) FROM unnest(NEW.fts) u);
            RETURN NEW; END $$""",
    "CREATE TRIGGER x_fts BEFORE INSERT ON x FOR EACH ROW EXECUTE FUNCTION prof.smartsearch_turn_fts()",
]
BTREES = [
    "CREATE INDEX ON x (namespace, session_id, position)",
    "CREATE INDEX ON x (namespace, timestamp, id)",
    "CREATE INDEX ON x (namespace, id)",
]
GIN_FTS = ["CREATE INDEX ON x USING GIN (fts)"]
GIN_TRGM = [f"CREATE INDEX ON x USING GIN (({folded('text')}) gin_trgm_ops)"]
FK = [
    "ALTER TABLE x ADD FOREIGN KEY (namespace, session_id) REFERENCES sessions (namespace, id) ON DELETE CASCADE"
]
COUNT = [
    "CREATE TRIGGER x_counted AFTER INSERT ON x REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION smartsearch_count_turns()"
]


def main():
    if "setup" in sys.argv:
        asyncio.run(setup())
    which = sys.argv[1:]
    P = PLAIN
    tests = {
        "heap": ("heap + pk", [], P),
        "btree": ("+ 3 btrees", BTREES, P),
        "fk": ("+ FK to sessions", FK, P),
        "count": ("+ statement count trigger", COUNT, P),
        "trig": ("trigger tsvector (today)", TRIGGER, P),
        "re": ("tsvector in INSERT SELECT, regexp", [], computed(FTS_RE)),
        "tr": ("tsvector in INSERT SELECT, translate", [], computed(FTS_TR)),
        "noreplace": (
            "to_tsvector without punct replace",
            [],
            computed(
                f"to_tsvector('{TS_CONFIG}'::regconfig, text || ' ' || coalesce(speaker, ''))"
            ),
        ),
        "simple": (
            "to_tsvector simple config (bound)",
            [],
            computed("to_tsvector('simple'::regconfig, text)"),
        ),
        "ginfts": ("fts GIN (fts precomputed in trigger)", TRIGGER + GIN_FTS, P),
        "trgm": ("trigram GIN", GIN_TRGM, P),
        "trgm64": ("trigram GIN, work_mem 64MB", GIN_TRGM, P, ["SET work_mem = '64MB'"]),
        "trgm256": ("trigram GIN, work_mem 256MB", GIN_TRGM, P, ["SET work_mem = '256MB'"]),
        "trgmnofu": (
            "trigram GIN pending 64MB",
            [GIN_TRGM[0] + " WITH (gin_pending_list_limit = 65536)"],
            P,
        ),
        "trgmbuild": ("trigram GIN built after rows", [], P),
        "all": ("everything (today)", TRIGGER + BTREES + FK + COUNT + GIN_FTS + GIN_TRGM, P),
        "stage": ("staged INSERT SELECT, OFFSET 0, regexp", [], computed(FTS_RE)),
        "stageall": (
            "everything, staged tsvector, wm64",
            BTREES + FK + COUNT + GIN_FTS + GIN_TRGM,
            computed(FTS_RE),
            ["SET work_mem = '64MB'"],
        ),
        "trignolen": (
            "trigger tsvector without the length",
            [
                TRIGGER[0].replace(
                    "NEW.fts_tokens := (SELECT coalesce(max(u.positions[array_upper(u.positions, 1)]), 0) FROM unnest(NEW.fts) u);",
                    "",
                ),
                TRIGGER[1],
            ],
            P,
        ),
        "all64": (
            "everything, work_mem 64MB",
            TRIGGER + BTREES + FK + COUNT + GIN_FTS + GIN_TRGM,
            P,
            ["SET work_mem = '64MB'"],
        ),
    }
    for w in which:
        if w == "setup":
            continue
        t = tests[w]
        run(t[0], t[1], t[2], t[3] if len(t) > 3 else ())


main()
