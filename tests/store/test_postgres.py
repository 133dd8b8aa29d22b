"""What only the PostgreSQL store does: URLs and their passwords, the missing driver, a server
that is down or goes away, read-only use (a replica), NUL, and the CLI on a URL."""

from __future__ import annotations

import json
import logging
import os
import sys
import uuid
from pathlib import Path

import anyio
import pytest
from servers import LEXICAL_TOML

from smartsearch_mcp.postgres_url import is_postgres_url, mask_url, scrub
from smartsearch_mcp.store import DatabaseError, open_store
from smartsearch_mcp.store.postgres_schema import MIGRATIONS
from smartsearch_mcp.types import InputError, Scope, TurnInput

pytestmark = pytest.mark.anyio


def test_urls_are_recognised_and_their_passwords_masked():
    assert is_postgres_url("postgresql://u@h/db") and is_postgres_url(" POSTGRES://h/db")
    assert not is_postgres_url("/tmp/memory.db") and not is_postgres_url(":memory:")
    assert (
        mask_url("postgresql://ann:s%40cret@db.example:5432/mem?sslmode=require")
        == "postgresql://ann:***@db.example:5432/mem?sslmode=require"
    )
    assert mask_url("postgresql://h/mem?password=pw&sslmode=verify-full") == (
        "postgresql://h/mem?password=***&sslmode=verify-full"
    )
    assert mask_url("postgresql://ann@h/mem") == "postgresql://ann@h/mem"
    url = "postgresql://ann:s%40cret@h/db"
    assert scrub("failed for s@cret and s%40cret; password=other", url) == (
        "failed for *** and ***; password=***"
    )


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        # a "#" in the password starts a fragment for urlsplit, which then sees no password
        ("postgresql://u:PASS#WORD@127.0.0.1:1/db", "postgresql://u:***@127.0.0.1:1/db"),
        # an IPv6 host without its "]": urlsplit refuses the URL
        ("postgresql://u:PASSWORD@[::1/db", "postgresql://u:***@[::1/db"),
        ("postgresql://u:PASS@WORD@h/db", "postgresql://u:***@h/db"),
        (
            "postgres://u@h/db?sslmode=disable;password=PASSWORD",
            "postgres://u@h/db?sslmode=disable;password=***",
        ),
    ],
)
def test_a_url_urlsplit_misreads_or_refuses_still_has_its_password_masked(url, shown):
    assert mask_url(url) == shown
    assert "WORD" not in scrub(f"the driver said: bad URI {url!r}", url)


async def test_a_url_without_the_driver_is_one_error_naming_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "smartsearch_mcp.store.postgres", None)  # not importable
    with pytest.raises(DatabaseError, match=r"pip install -e '\.\[postgres\]'") as caught:
        await open_store("postgresql://ann:hunter2@127.0.0.1:1/mem")
    assert "hunter2" not in str(caught.value) and "ann:***@" in str(caught.value)


async def test_a_server_that_is_down_at_start_is_a_clear_error_without_the_password(caplog):
    pytest.importorskip("psycopg")
    caplog.set_level(logging.DEBUG)
    url = "postgresql://ann:hunter2@127.0.0.1:1/mem?connect_timeout=2"
    with anyio.fail_after(30), pytest.raises(DatabaseError, match="cannot be reached") as caught:
        await open_store(url)
    message = str(caught.value)
    assert "ann:***@127.0.0.1:1/mem" in message and "PostgreSQL is running" in message
    assert "hunter2" not in message and "hunter2" not in caplog.text


async def test_a_database_that_goes_away_gives_a_clear_error_and_recovers_when_back():
    pg = pytest.importorskip("postgres_server")
    pytest.importorskip("psycopg")
    if (reason := pg.cluster_unavailable_reason()) is not None:
        pytest.skip(f"PostgreSQL cluster of its own (to stop and start) unavailable: {reason}")
    from smartsearch_mcp.store.postgres import PostgresStore

    with pg.own_cluster() as cluster:
        store = await PostgresStore.open(cluster.url, connect_timeout_s=3)
        try:
            first = await store.remember("ns", "s", [TurnInput("before the outage")])
            cluster.stop()
            with anyio.fail_after(60), pytest.raises(DatabaseError, match="cannot be reached"):
                await store.remember("ns", "s", [TurnInput("during the outage")])
            with anyio.fail_after(60), pytest.raises(DatabaseError, match="cannot be reached"):
                await store.scope_turns(Scope(("ns",)))
            cluster.start()
            with anyio.fail_after(60):
                again = await store.remember("ns", "s", [TurnInput("after the outage")])
                texts = [t.text for t in await store.scope_turns(Scope(("ns",)))]
            assert texts == ["before the outage", "after the outage"]
            assert again.ids[0] > first.ids[0]
        finally:
            await store.close()


async def test_postgres_refuses_a_nul_character_and_stores_nothing(postgres_url):
    store = await open_store(postgres_url)
    try:
        with pytest.raises(InputError, match=r"turns\[1\]\.text holds a NUL"):
            await store.remember("ns", "s", [TurnInput("fine"), TurnInput("NUL\x00byte")])
        assert (await store.stats()).turns == 0
    finally:
        await store.close()


async def test_a_read_only_store_reads_and_refuses_writes(postgres_url):
    with pytest.raises(DatabaseError, match="no memory in the database"):
        await open_store(postgres_url, read_only=True)
    writer = await open_store(postgres_url)
    await writer.remember("ns", "s", [TurnInput("replicated turn")])
    await writer.close()
    reader = await open_store(postgres_url, read_only=True)
    try:
        assert [t.text for t in await reader.scope_turns(Scope(("ns",)))] == ["replicated turn"]
        with pytest.raises(InputError, match="read-only"):
            await reader.remember("ns", "s", [TurnInput("refused")])
    finally:
        await reader.close()


async def test_a_database_with_someone_elses_turns_table_is_left_alone(postgres_url):
    import psycopg

    with psycopg.connect(postgres_url, autocommit=True) as db:
        db.execute("CREATE TABLE turns (id int)")
    with pytest.raises(DatabaseError, match="not smartsearch-mcp's: nothing was changed"):
        await open_store(postgres_url)
    with psycopg.connect(postgres_url, autocommit=True) as db:
        assert db.execute("SELECT to_regclass('schema_version')").fetchone() == (None,)


@pytest.fixture
def cli_env(postgres_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    config = tmp_path / "lexical.toml"
    config.write_text(LEXICAL_TOML)
    monkeypatch.setenv("SMARTSEARCH_DB", postgres_url)
    monkeypatch.setenv("SMARTSEARCH_CONFIG", str(config))
    monkeypatch.setenv("SMARTSEARCH_NAMESPACE", "team")
    return postgres_url


def test_the_cli_remembers_recalls_exports_and_forgets_on_a_url(cli_env, tmp_path, capsys):
    from smartsearch_mcp.cli import main

    assert main(["remember", "the staging database moved to port 6543"]) == 0
    capsys.readouterr()
    assert main(["recall", "--local", "--json", "which port does staging use"]) == 0
    out = capsys.readouterr().out
    passages = json.loads(out)["passages"]
    assert passages and "6543" in passages[0]["text"]
    assert main(["export", "--all", "-o", str(tmp_path / "out.jsonl")]) == 0
    [record] = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert record["text"] == "the staging database moved to port 6543"
    assert main(["stats"]) == 0
    assert "postgresql://" in capsys.readouterr().out
    assert main(["doctor", "--skip-models"]) == 0
    assert "integrity check passed" in capsys.readouterr().out
    assert main(["forget", "--all", "--yes"]) == 0
    assert main(["grep", "6543"]) == 0
    assert "staging database moved" not in capsys.readouterr().out


def test_redact_apply_rewrites_turns_on_a_url_and_search_follows(cli_env, capsys, monkeypatch):
    from smartsearch_mcp.cli import main

    secret = "ghp_" + "R8x2Kq7LmN3pV9sT1wY4zA6bC0dE5fG2hJ7k"
    verbatim = Path(os.environ["SMARTSEARCH_CONFIG"]).with_name("verbatim.toml")
    verbatim.write_text(LEXICAL_TOML + "\n[store]\nredact_secrets = false\n")
    assert main(["remember", f"the CI token is {secret}", "--config", str(verbatim)]) == 0
    assert main(["remember", "the staging database moved to port 6543"]) == 0
    capsys.readouterr()
    assert main(["redact", "--apply", "--yes"]) == 0
    assert "rewrote 1 turn " in capsys.readouterr().out
    assert main(["grep", "ghp_"]) == 0
    assert secret not in capsys.readouterr().out
    assert main(["recall", "--local", "--json", "which CI token"]) == 0
    texts = [p["text"] for p in json.loads(capsys.readouterr().out)["passages"]]
    assert "the CI token is [REDACTED:github-token]" in texts
    assert main(["doctor", "--skip-models"]) == 0  # BM25 totals and index still consistent
    assert "integrity check passed" in capsys.readouterr().out
    assert main(["redact"]) == 0
    assert "no secrets found" in capsys.readouterr().out


async def test_a_read_only_database_like_a_replica_serves_reads_and_refuses_writes_clearly(
    postgres_url,
):
    import psycopg

    writer = await open_store(postgres_url)
    await writer.remember("ns", "s", [TurnInput("written on the primary")])
    await writer.close()
    name = postgres_url.rsplit("/", 1)[1]
    with psycopg.connect(postgres_url, autocommit=True) as db:  # as a hot standby refuses writes
        db.execute(f'ALTER DATABASE "{name}" SET default_transaction_read_only = on')
    store = await open_store(postgres_url)  # a server opens it as usual: nothing to migrate
    try:
        assert [t.text for t in await store.scope_turns(Scope(("ns",)))] == [
            "written on the primary"
        ]
        with pytest.raises(DatabaseError, match=r"read-only.*write through the primary"):
            await store.remember("ns", "s", [TurnInput("refused")])
    finally:
        await store.close()


async def test_a_least_privilege_role_runs_the_memory_the_owner_migrated(postgres_url):
    """docs/teams.md's grants are enough for a server: read, write, forget."""
    import psycopg

    owner = await open_store(postgres_url)  # the owner migrates
    await owner.close()
    role = f"app_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(postgres_url, autocommit=True) as db:
        db.execute(f"CREATE ROLE {role} LOGIN")
        name = postgres_url.rsplit("/", 1)[1]
        for grant in (
            f'GRANT CONNECT ON DATABASE "{name}" TO {role}',
            f"GRANT USAGE ON SCHEMA public TO {role}",
            f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {role}",
            f"GRANT USAGE, SELECT, UPDATE ON SEQUENCE turns_id_seq TO {role}",
        ):
            db.execute(grant)
    app_url = postgres_url.replace("postgresql://postgres@", f"postgresql://{role}@")
    try:
        store = await open_store(app_url)
        try:
            stored = await store.remember("ns", "s", [TurnInput("by the app role")])
            await store.put_embeddings("m", [(stored.ids[0], 0, b"v")])
            assert (await store.forget("ns", ids=stored.ids)).deleted_turn_ids == stored.ids
        finally:
            await store.close()
    finally:
        with psycopg.connect(postgres_url, autocommit=True) as db:
            db.execute(f"DROP OWNED BY {role}")
            db.execute(f"DROP ROLE {role}")


@pytest.mark.slow
def test_the_capture_hooks_store_a_claude_code_exchange_in_a_postgres_memory(
    postgres_url, tmp_path
):
    from test_capture import PROMPT, _payload, _recorded_now, _run_hook

    from smartsearch_mcp.namespaces import project_namespace

    project = tmp_path / "webapp"
    (project / ".git").mkdir(parents=True)
    dropped = ("SMARTSEARCH_NAMESPACE", "SMARTSEARCH_CONFIG")
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    env.update(
        PYTHONPATH=str(Path(__file__).parents[2]),
        SMARTSEARCH_DB=postgres_url,
        XDG_DATA_HOME=str(tmp_path / "xdg"),  # hooks.log lives in the data dir
        HF_HUB_OFFLINE="1",
    )
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("\n".join(_recorded_now()) + "\n")
    stop = _payload("Stop", transcript, project, stop_hook_active=False)
    for _ in range(2):  # a second run stores nothing new
        done = _run_hook(env, "claude-code", "stop", stdin=stop)
        assert done.returncode == 0 and done.stdout == "", done.stderr

    async def stored() -> list[tuple[str, str]]:
        store = await open_store(postgres_url)
        try:
            return [(t.namespace, t.text) async for t in store.iter_turns()]
        finally:
            await store.close()

    turns = anyio.run(stored)
    assert len(turns) == 3 and turns[0][1] == PROMPT
    assert {ns for ns, _ in turns} == {project_namespace(project)}
    log = (tmp_path / "xdg" / "smartsearch-mcp" / "hooks.log").read_text()
    assert "stored 3 turns" in log and "stored 0 turns" in log


async def test_servers_starting_together_on_a_new_database_migrate_it_once(postgres_url):
    """Eight servers started at once on an empty database: one migrates, the others wait
    and find the schema current (none takes the new tables for someone else's)."""
    stores: list = []

    async def start() -> None:
        stores.append(await open_store(postgres_url))

    try:
        with anyio.fail_after(120):
            async with anyio.create_task_group() as group:
                for _ in range(8):
                    group.start_soon(start)
        assert len(stores) == 8
        assert {await s.schema_version() for s in stores} == {len(MIGRATIONS)}
        await stores[0].remember("ns", "s", [TurnInput("after the start")])
        assert (await stores[7].stats()).turns == 1
    finally:
        for store in stores:
            await store.close()


async def test_a_role_that_may_not_create_the_tables_gets_a_clear_error(postgres_url):
    import psycopg

    role = f"ro_{uuid.uuid4().hex[:8]}"
    name = postgres_url.rsplit("/", 1)[1]
    with psycopg.connect(postgres_url, autocommit=True) as db:
        db.execute(f"CREATE ROLE {role} LOGIN")
        db.execute(f'GRANT CONNECT ON DATABASE "{name}" TO {role}')
        db.execute(f"REVOKE CREATE ON SCHEMA public FROM PUBLIC, {role}")
    try:
        url = postgres_url.replace("postgresql://postgres@", f"postgresql://{role}@")
        refused = r"refused this role: permission denied for schema public — grant"
        with pytest.raises(DatabaseError, match=refused):
            await open_store(url)
    finally:
        with psycopg.connect(postgres_url, autocommit=True) as db:
            db.execute(f"DROP OWNED BY {role}")
            db.execute(f"DROP ROLE {role}")


async def test_memories_in_two_schemas_of_one_database_share_its_extensions(postgres_url):
    """Two memories in schemas of their own in one database (two `bench locomo --db URL` at
    once): the second migrates although the first created pg_trgm and unaccent, and it still
    searches once the first schema is dropped with everything in it."""
    import psycopg

    from smartsearch_mcp.postgres_url import with_search_path
    from smartsearch_mcp.store.postgres import create_schema, drop_schema

    for schema in ("first_memory", "second_memory"):
        await create_schema(postgres_url, schema)
    first = await open_store(with_search_path(postgres_url, "first_memory"))
    await first.close()
    second = await open_store(with_search_path(postgres_url, "second_memory"))
    try:
        await drop_schema(postgres_url, "first_memory")
        await second.remember("ns", "s", [TurnInput("The café in Porto serves pastéis")])
        found = await second.search_fts('"cafe"', Scope(("ns",)), 5)
        assert len(found) == 1
        with psycopg.connect(postgres_url) as db:
            index = db.execute("SELECT to_regclass('second_memory.turns_trigram')").fetchone()
            assert index is not None and index[0] is not None
            places = db.execute(
                "SELECT e.extname, n.nspname FROM pg_extension e JOIN pg_namespace n "
                "ON n.oid = e.extnamespace WHERE e.extname IN ('pg_trgm', 'unaccent')"
            ).fetchall()
        assert sorted(places) == [("pg_trgm", "public"), ("unaccent", "public")]
    finally:
        await second.close()
