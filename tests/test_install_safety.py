"""install against hostile checkouts and awkward config files, as real processes: planted
symlinks, secrets in configs, symlinked dotfiles, read-only files and folders, files that
are not UTF-8 or nest too deeply, numbers JSON cannot round-trip through a float, and a
write that fails midway."""

from __future__ import annotations

import json
import os
import resource
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from servers import cli_command, subprocess_env

from smartsearch_mcp.install import dump_json, load_json

SECRETS = {
    "oauthAccount": {"accessToken": "sk-ant-oat01-SECRET", "refreshToken": "sk-ant-ort01-SECRET"},
    "mcpServers": {},
}
BASHRC = "# my shell\nalias ll='ls -l'\n"


def run_install(
    cwd: Path, home: Path, *args: str, **kwargs: object
) -> subprocess.CompletedProcess[str]:
    env = subprocess_env(HOME=str(home))
    for name in ("CODEX_HOME", "SMARTSEARCH_DB", "SMARTSEARCH_NAMESPACE", "SMARTSEARCH_CONFIG"):
        env.pop(name, None)
    return subprocess.run(  # type: ignore[call-overload, no-any-return]
        cli_command("install", *args),
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        **kwargs,
    )


def tree(root: Path) -> dict[str, str]:
    """Every path under `root` with what it is: a link's target, or a file's bytes."""
    found = {}
    for path in sorted(root.rglob("*")):
        key = str(path.relative_to(root))
        if path.is_symlink():
            found[key] = "-> " + os.readlink(path)
        elif path.is_file():
            found[key] = path.read_bytes().decode("latin-1")
    return found


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    (home / ".bashrc").write_text(BASHRC)
    return home


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    return repo


def test_a_planted_temp_file_symlink_cannot_redirect_the_write_out_of_the_checkout(
    home: Path, repo: Path
) -> None:
    (repo / ".claude").mkdir()
    (repo / ".claude" / "settings.json").write_text('{"model": "opus"}\n')
    # What the old code opened (O_CREAT|O_TRUNC, following links) as its temporary file.
    (repo / ".claude" / ".settings.json.smartsearch-tmp").symlink_to("../../home/.bashrc")
    (repo / "..mcp.json.smartsearch-tmp").symlink_to("../home/.bashrc")

    done = run_install(repo, home, "claude-code", "--project")

    assert done.returncode == 0, done.stderr
    assert (home / ".bashrc").read_text() == BASHRC
    settings = json.loads((repo / ".claude" / "settings.json").read_text())
    assert settings["model"] == "opus" and "UserPromptSubmit" in settings["hooks"]
    assert "smartsearch" in json.loads((repo / ".mcp.json").read_text())["mcpServers"]
    assert os.readlink(repo / ".claude" / ".settings.json.smartsearch-tmp") == (
        "../../home/.bashrc"
    )


def test_a_project_config_linked_to_the_users_secrets_is_refused_and_nothing_is_written(
    home: Path, repo: Path
) -> None:
    claude = home / ".claude.json"
    claude.write_text(json.dumps(SECRETS))
    claude.chmod(0o600)
    (repo / ".mcp.json").symlink_to(claude)
    before_home, before_repo = tree(home), tree(repo)

    done = run_install(repo, home, "claude-code", "--project")

    assert done.returncode == 1
    assert "outside the project" in done.stderr and "Traceback" not in done.stderr
    assert str(repo / ".mcp.json") in done.stderr
    assert tree(home) == before_home  # no token copied, no backup made
    assert tree(repo) == before_repo  # not even the hooks file: all is checked first


def test_a_project_folder_linked_out_of_the_checkout_is_refused(home: Path, repo: Path) -> None:
    (home / ".claude").mkdir()
    (home / ".claude" / "settings.json").write_text('{"model": "opus"}\n')
    (repo / ".claude").symlink_to(home / ".claude")
    before = tree(home)

    done = run_install(repo, home, "claude-code", "--project")

    assert done.returncode == 1
    assert f"{repo / '.claude'} is a symlink" in done.stderr
    assert tree(home) == before


def test_backups_and_rewritten_files_are_no_more_readable_than_the_original(home: Path) -> None:
    claude = home / ".claude.json"
    claude.write_text(json.dumps(SECRETS))
    claude.chmod(0o600)

    done = run_install(home, home, "claude-code", umask=0o022)

    assert done.returncode == 0, done.stderr
    (backup,) = home.glob(".claude.json.bak-smartsearch-*")
    assert stat.S_IMODE(backup.stat().st_mode) == 0o600
    assert stat.S_IMODE(claude.stat().st_mode) == 0o600
    assert json.loads(backup.read_text()) == SECRETS
    # A second change within the same second gets a backup of its own, never writing over
    # one, and the older one goes: one backup per file, of the state before the last change.
    before = claude.read_text()
    again = run_install(home, home, "claude-code", "--db", str(home / "other.db"), umask=0o022)
    assert again.returncode == 0, again.stderr
    (newest,) = home.glob(".claude.json.bak-smartsearch-*")
    assert newest != backup and stat.S_IMODE(newest.stat().st_mode) == 0o600
    assert newest.read_text() == before


def test_a_symlinked_user_config_is_written_through_and_the_link_is_kept(home: Path) -> None:
    dotfiles = home / "dotfiles"
    dotfiles.mkdir()
    (dotfiles / "claude.json").write_text('{"numStartups": 3}\n')
    (home / ".claude.json").symlink_to("dotfiles/claude.json")

    done = run_install(home, home, "claude-code")

    assert done.returncode == 0, done.stderr
    assert os.readlink(home / ".claude.json") == "dotfiles/claude.json"
    written = json.loads((dotfiles / "claude.json").read_text())
    assert written["numStartups"] == 3 and "smartsearch" in written["mcpServers"]
    assert len(list(dotfiles.glob("claude.json.bak-smartsearch-*"))) == 1


def test_a_read_only_config_is_refused_not_rewritten(home: Path) -> None:
    claude = home / ".claude.json"
    claude.write_text('{"numStartups": 3}\n')
    claude.chmod(0o444)

    done = run_install(home, home, "claude-code")

    assert done.returncode == 1
    assert "read-only (mode 0444)" in done.stderr and "Traceback" not in done.stderr
    assert claude.read_text() == '{"numStartups": 3}\n'
    assert stat.S_IMODE(claude.stat().st_mode) == 0o444


@pytest.fixture
def read_only_home(tmp_path: Path) -> Iterator[Path]:
    """A home folder its user cannot write (root ignores modes: there it is immutable)."""
    home = tmp_path / "ro-home"
    home.mkdir()
    home.chmod(0o555)
    immutable = os.geteuid() == 0
    if immutable and subprocess.run(["chattr", "+i", str(home)], check=False).returncode:
        pytest.skip("running as root and chattr +i is not available here")
    try:
        yield home
    finally:
        if immutable:
            subprocess.run(["chattr", "-i", str(home)], check=True)
        home.chmod(0o755)


def test_a_read_only_home_gives_one_clear_error(read_only_home: Path) -> None:
    home = read_only_home
    done = run_install(home, home, "claude-code")
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert "cannot write in" in done.stderr and "nothing was changed" in done.stderr
    assert list(home.iterdir()) == []


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"name": "caf\xe9"}\n'.encode("latin-1"), "is not UTF-8 text"),
        (b'{"a": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "nested too deeply"),
        (b'{"big": NaN}', "not valid JSON"),
    ],
    ids=["latin-1", "deep", "nan"],
)
def test_a_config_that_cannot_be_edited_safely_gets_a_clear_error_and_is_kept(
    home: Path, content: bytes, message: str
) -> None:
    config = home / ".cursor" / "mcp.json"
    config.parent.mkdir()
    config.write_bytes(content)

    done = run_install(home, home, "cursor")

    assert done.returncode == 1
    assert message in done.stderr and "Traceback" not in done.stderr
    assert config.read_bytes() == content
    assert [p.name for p in config.parent.iterdir()] == ["mcp.json"]


def test_numbers_and_escapes_are_written_back_exactly_as_they_were(home: Path) -> None:
    config = home / ".cursor" / "mcp.json"
    config.parent.mkdir()
    config.write_text(
        '{"big": 1e400, "price": 1.10, "id": 123456789012345678901234567890, '
        '"half": "\\ud83d", "mcpServers": {}}'
    )

    done = run_install(home, home, "cursor")

    assert done.returncode == 0, done.stderr
    text = config.read_text()
    assert '"big": 1e400' in text and '"price": 1.10' in text
    assert '"id": 123456789012345678901234567890' in text and '"half": "\\ud83d"' in text
    strict = json.loads(text, parse_constant=lambda name: pytest.fail(f"{name} written"))
    assert "smartsearch" in strict["mcpServers"]


def test_a_write_that_fails_midway_leaves_no_temporary_file_and_says_why(home: Path) -> None:
    def small_files_only() -> None:  # every write past 16 bytes fails with EFBIG
        resource.setrlimit(resource.RLIMIT_FSIZE, (16, 16))

    done = run_install(home, home, "claude-code", preexec_fn=small_files_only)

    assert done.returncode == 1
    assert "cannot write" in done.stderr and "Traceback" not in done.stderr
    assert tree(home) == {".bashrc": BASHRC}


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@given(json_values)
def test_the_json_writer_formats_exactly_like_json_dumps(value: object) -> None:
    expected = json.dumps(value, indent=2, ensure_ascii=False)
    assert dump_json(value) == expected
    assert dump_json(load_json(expected)) == expected
