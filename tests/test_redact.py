"""Secrets never reach the disk: redact.py's placeholders for each kind, what it leaves
alone, linear time on hostile text, and every way in (the Claude Code hook, import, the
remember tool) leaving none of a corpus of secrets in the database file, its WAL, exports or
the hook log; `redact --apply` for turns stored without redaction."""

from __future__ import annotations

import json
import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import pytest
from mcp import Client
from servers import run_cli, write_lexical_config

from smartsearch_mcp.config import Config
from smartsearch_mcp.memory import Memory
from smartsearch_mcp.redact import PLACEHOLDER_RE, redact
from smartsearch_mcp.server import create_server
from smartsearch_mcp.types import TurnInput

ROOT = Path(__file__).parents[1]
TRANSCRIPT = Path(__file__).parent / "fixtures" / "claude_code" / "session.jsonl"

# Real-looking secrets of each kind (made up: none is a live credential), and the kind each
# must be stored as. Built by concatenation so that no scanner flags this file.
SECRETS = {
    "ghp_" + "R8x2Kq7LmN3pV9sT1wY4zA6bC0dE5fG2hJ7k": "github-token",
    "github_pat_" + "11AB2CD3E0a1B2c3D4e5F6_g7H8i9J0k1L2m3N4o5P6q7R8s9T0u1V2w3X4y5Z6a7B8c9D0e1F2": (
        "github-token"
    ),
    "AKIA" + "Q3EGRL7ZX5N2WP4D": "aws-access-key",
    "sk-ant-" + "api03-Zk3Lp9Qw2Er7Ty5Ui1Op8As4Df6Gh0Jk-Lz3Xc7Vb_nM2qW9eR4": "anthropic-key",
    "sk-proj-" + "Vb7Nm3Qw9Er2Ty6Ui4Op1As8Df5Gh0JkLz3Xc": "openai-key",
    "sk_live_" + "51HqLyjWDarjtT1zdp7dcQ8x": "stripe-key",
    "xoxb-" + "208846211-4417932101987-Ut5kY8nR2pQ9mW3vX7zL1cB6": "slack-token",
    "AIza" + "SyD9tSrke72PouQMnMXa7eZSW0jkFMBWYx3": "google-api-key",
    "hf_" + "QwErTyUiOpAsDfGhJkLzXcVbNm1234567890": "huggingface-token",
    "eyJhbGciOiJIUzI1NiJ9" + ".eyJzdWIiOiJjaS1ib3QiLCJleHAiOjE3OTk5OTk5OTl9"
    ".Xq3kZ9pL2mN7vB4cW8yT1rF6gH0jD5sA": "jwt",
}
URL_PASSWORD = "Pg7" + "x!Vault-42"
ENV_SECRET = "9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c" + "Zq"
KEY_BODY = "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW" + "QyNTUxOQ"
PRIVATE_KEY = (
    "-----BEGIN OPENSSH PRIVATE KEY-----\n"
    f"{KEY_BODY}\nAAAAIPlsW7xC0qYk3RbZ1uJm9nVt5eHg\n"
    "-----END OPENSSH PRIVATE KEY-----"
)
EVERY_VALUE = [*SECRETS, URL_PASSWORD, ENV_SECRET, KEY_BODY]


def _prompt() -> str:
    """A prompt holding secrets of six and more kinds, as a developer pastes them."""
    tokens = " ".join(SECRETS)
    return (
        f"use these for the CI: {tokens}\n"
        f"and the database is postgresql://deploy:{URL_PASSWORD}@db.internal:5432/prod\n"
        f"my .env:\n```\nSECRET_KEY={ENV_SECRET}\nDEBUG=true\n```\n"
        f"the deploy key:\n{PRIVATE_KEY}\nthanks"
    )


@contextmanager
def within(seconds: int) -> Iterator[None]:
    def fail(*_: object) -> None:
        raise TimeoutError(f"over {seconds} s")

    previous = signal.signal(signal.SIGALRM, fail)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def test_each_kind_becomes_its_placeholder_and_the_rest_of_the_turn_stays() -> None:
    for secret, kind in SECRETS.items():
        result = redact(f"use {secret} for the CI")
        assert result.text == f"use [REDACTED:{kind}] for the CI", secret
        assert result.kinds == (kind,)
    result = redact(_prompt())
    assert not [value for value in EVERY_VALUE if value in result.text]
    assert "postgresql://deploy:[REDACTED:password-in-url]@db.internal" in result.text
    assert "SECRET_KEY=[REDACTED:secret]\nDEBUG=true" in result.text
    assert "the deploy key:\n[REDACTED:private-key]\nthanks" in result.text
    assert result.count == len(SECRETS) + 3
    assert redact(result.text).text == result.text  # a placeholder is never a secret


def test_a_private_key_pasted_without_its_end_is_hidden_up_to_the_blank_line() -> None:
    text = f"-----BEGIN RSA PRIVATE KEY-----\n{KEY_BODY}\n{KEY_BODY}\n\nand then"
    assert redact(text).text == "[REDACTED:private-key]\n\nand then"


@pytest.mark.parametrize(
    "text",
    [
        "commit 3f2a1b0c9d8e7f6a5b4c3f2a1b0c9d8e7f6a5b4c fixed the login redirect",
        "sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        "see src/smartsearch_mcp/pipeline/recall.py and tests/test_redact.py",
        "password = orm.Column(orm.String(255), nullable=True)",
        "account = Account(email=email, password=pw_digest)",
        "token = os.environ['DEPLOY_TOKEN']",
        "api_key=${API_KEY} and PASSWORD=<your-password> and secret: ***",
        "export DATABASE_URL=postgresql://user:password@localhost/db",
        "the token is required; set password: required in the form",
        "uuid 123e4567-e89b-12d3-a456-426614174000 and ACCOMMODATIONSANDSUCH",
        "https://github.com/org/repo/pull/42#issuecomment-1234567890",
        "My sister Ilka moved to Graz and her password manager is 1Password.",
    ],
)
def test_what_is_not_a_secret_is_left_alone(text: str) -> None:
    assert redact(text).text == text


HOSTILE = {
    "jwt starts": "eyJ" * 350_000,
    "token starts": "ghp_" * 260_000,
    "url users": "a://b:" * 175_000,
    "assignments": "password=" * 115_000,
    "key blocks": "-----BEGIN RSA PRIVATE KEY-----\n" * 32_000,
    "slashes": "// " * 350_000,
    "bearer": "Bearer " * 150_000,
    "base64": "QUJD" * 260_000,
    "one word": "a" * 1_000_000,
    "keys and dashes": "sk-" * 350_000,
}


@pytest.mark.parametrize("name", HOSTILE)
def test_redaction_is_linear_time_on_a_megabyte_of_hostile_text(name: str) -> None:
    with within(30):
        redact(HOSTILE[name])


def _claude_code_transcript(prompt: str, reply: str) -> str:
    """The fixture session with its prompt and its reply (u-003, a-002) holding secrets,
    moved to the last minute (a live session: the hook's own prompt is stored "now")."""
    from datetime import UTC, datetime, timedelta

    lines = []
    start = datetime.now(UTC) - timedelta(seconds=60)
    for number, line in enumerate(TRANSCRIPT.read_text().splitlines()):
        try:
            record = json.loads(line)
        except ValueError:  # the fixture holds a broken line on purpose
            continue
        if "timestamp" in record:
            record["timestamp"] = (start + timedelta(seconds=number)).isoformat()[:23] + "Z"
        if record.get("uuid") == "u-003":
            record["message"] = {**record["message"], "content": prompt}
        if record.get("uuid") == "a-002":
            content = [{"type": "text", "text": reply}]
            record["message"] = {**record["message"], "content": content}
        lines.append(json.dumps(record))
    return "\n".join(lines) + "\n"


def _on_disk(folder: Path) -> bytes:
    return b"".join(path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file())


def _hook(env: dict[str, str], kind: str, payload: dict[str, object]) -> None:
    done = run_cli(["hook", "claude-code", kind], env=env, input=json.dumps(payload), timeout=120)
    assert done.returncode == 0, done.stderr


@pytest.mark.slow
def test_secrets_captured_imported_or_remembered_never_reach_the_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    data = tmp_path / "data"
    db = data / "memory.db"
    config = write_lexical_config(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SMARTSEARCH_DB": str(db)}
    env["SMARTSEARCH_CONFIG"] = str(config)
    env.pop("SMARTSEARCH_NAMESPACE", None)
    prompt = _prompt()
    reply = f"Set it in CI:\n```yaml\nenv:\n  TOKEN: {next(iter(SECRETS))}\n```\n{PRIVATE_KEY}"
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(_claude_code_transcript(prompt, reply))
    session = "7f3c2a1e-5b6d-4e8f-9a0b-1c2d3e4f5a6b"  # the fixture's
    base = {"session_id": session, "transcript_path": str(transcript), "cwd": str(tmp_path)}
    _hook(env, "user-prompt", {**base, "hook_event_name": "UserPromptSubmit", "prompt": prompt})
    for _ in range(2):  # captured again: recognised, not stored twice
        _hook(env, "stop", {**base, "hook_event_name": "Stop", "stop_hook_active": False})

    records = [{"text": prompt, "speaker": "dev", "session_id": "imported"}]
    import_file = tmp_path / "import.jsonl"
    import_file.write_text("".join(json.dumps(r) + "\n" for r in records))
    imported = cli("import", str(import_file), "--db", str(db), "--config", str(config))
    assert "secrets stored as [REDACTED" in imported.stderr, imported.stderr
    import_file.unlink()  # the user's own file, not ours

    async def through_the_tool() -> dict[str, object]:
        async with Client(create_server(Config.load(config), db)) as client:
            result = await client.call_tool("remember", {"text": prompt})
            return dict(result.structured_content or {})

    remembered = anyio.run(through_the_tool)
    assert remembered["secrets_redacted"] == len(SECRETS) + 3
    assert remembered["dated_now"] == 1  # a note without a timestamp: dated when stored
    exported = tmp_path / "export.jsonl"
    cli("export", "--all", "--db", str(db), "--config", str(config), "-o", str(exported))

    text = exported.read_text()
    roles = [json.loads(line)["role"] for line in text.splitlines()]
    assert roles.count("assistant") == 2 and len(roles) == 5  # the hook's two replies
    assert text.count("[REDACTED:private-key]") == 4  # prompt (hook, import, tool), reply
    written = _on_disk(data) + exported.read_bytes()
    leaked = [value for value in EVERY_VALUE if value.encode() in written]
    assert leaked == []
    recalled = cli("recall", "which token for the CI?", "--db", str(db), "--config", str(config))
    assert "[REDACTED:github-token]" in recalled.stdout


@pytest.mark.anyio
async def test_redaction_can_be_switched_off_and_per_namespace(tmp_path: Path) -> None:
    config = write_lexical_config(tmp_path)
    raw = tmp_path / "raw.toml"
    raw.write_text(config.read_text() + '\n[store]\nverbatim_namespaces = ["vault"]\n')
    memory = await Memory.open(Config.load(raw), tmp_path / "m.db", "default")
    try:
        secret = next(iter(SECRETS))
        kept = await memory.remember([TurnInput(text=f"key {secret}")], namespace="vault")
        hidden = await memory.remember([TurnInput(text=f"key {secret}")], namespace="work")
        turns = await memory.store.get_turns([kept.ids[0], hidden.ids[0]])
    finally:
        await memory.close()
    assert (kept.secrets_redacted, hidden.secrets_redacted) == (0, 1)
    assert [t.text for t in turns] == [f"key {secret}", "key [REDACTED:github-token]"]


def test_redact_apply_rewrites_what_earlier_releases_stored_and_vacuums(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    lexical = write_lexical_config(tmp_path)
    verbatim = tmp_path / "verbatim.toml"
    verbatim.write_text(lexical.read_text() + "\n[store]\nredact_secrets = false\n")
    prompt = _prompt()
    for text in (prompt, "We fly to Lisbon on 3 June."):
        cli("remember", text, "--db", str(db), "--config", str(verbatim))
    assert all(value.encode() in db.read_bytes() + _wal(db) for value in SECRETS)

    scan = cli("redact", "--db", str(db), "--config", str(lexical))
    assert f"{len(SECRETS) + 3} secrets in 1 turn" in scan.stdout and "turns: 1" in scan.stdout
    assert not [value for value in EVERY_VALUE if value in scan.stdout + scan.stderr]
    copy = tmp_path / "copy.db"
    migrate = ["migrate", "--from", str(db), "--to", str(copy), "--config", str(lexical)]
    first, again = cli(*migrate), cli(*migrate)  # the redacted copy is still recognised
    assert "in 1 turn of the copy" in first.stderr, first.stderr
    assert "verified" in again.stderr and "REDACTED" not in again.stderr
    copied = b"".join(p.read_bytes() for p in tmp_path.glob("copy.db*"))
    assert copied and [value for value in EVERY_VALUE if value.encode() in copied] == []
    refused = cli("redact", "--apply", "--db", str(db), "--config", str(lexical), check=False)
    assert refused.returncode != 0 and "--yes" in refused.stderr
    assert all(value.encode() in db.read_bytes() + _wal(db) for value in SECRETS)

    applied = cli("redact", "--apply", "--yes", "--db", str(db), "--config", str(lexical))
    assert "rewrote 1 turn " in applied.stdout and "VACUUM" in applied.stdout, applied.stdout
    on_disk = b"".join(p.read_bytes() for p in tmp_path.glob("m.db*"))
    assert on_disk and not _wal(db)
    assert [value for value in EVERY_VALUE if value.encode() in on_disk] == []
    again = cli("redact", "--db", str(db), "--config", str(lexical))
    assert "no secrets found" in again.stdout
    found = cli("recall", "which token for the CI?", "--db", str(db), "--config", str(lexical))
    assert "[REDACTED:github-token]" in found.stdout
    assert PLACEHOLDER_RE.search(found.stdout)


def cli(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = run_cli(list(args))
    assert not check or done.returncode == 0, done.stderr
    return done


def _wal(db: Path) -> bytes:
    wal = db.with_name(db.name + "-wal")
    return wal.read_bytes() if wal.exists() else b""


def test_the_library_patterns_are_kept_in_the_cache_and_a_broken_cache_is_rebuilt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from smartsearch_mcp import redact as module

    monkeypatch.setattr(module, "_cache_dir", lambda: tmp_path / "cache")
    built = module._library_patterns()
    (kept,) = (tmp_path / "cache").iterdir()
    assert json.loads(kept.read_text()) == [list(p) for p in built]
    assert ("github-token", "(ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9_]{36}", 32) in built
    kept.write_text("{not json")
    assert module._library_patterns() == built
    assert json.loads(kept.read_text()) == [list(p) for p in built]
