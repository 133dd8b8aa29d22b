"""The README and docs/ hold together: links resolve, commands parse, the test command is CI's."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from servers import subprocess_env

from smartsearch_mcp.cli import build_parser

ROOT = Path(__file__).parents[1]
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.M | re.S)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    found: set[str] = set()
    for heading in re.findall(r"^#{1,6} (.+)$", text, re.M):
        base = slug(heading)
        name, n = base, 0
        while name in found:
            n += 1
            name = f"{base}-{n}"
        found.add(name)
    return found


def links(page: Path) -> list[str]:
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    text = re.sub(r"`[^`\n]*`", "", text)  # code spans are not links
    return [target for target in LINK.findall(text) if "://" not in target]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_relative_link_points_to_an_existing_file_and_heading(page: Path):
    broken = []
    for target in links(page):
        path, _, fragment = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            broken.append(f"{target} (no such file)")
        elif fragment and dest.suffix == ".md" and fragment not in anchors(dest):
            broken.append(f"{target} (no heading #{fragment} in {dest.name})")
    assert not broken, f"{page.relative_to(ROOT)}: broken links: {broken}"


def readme_commands() -> list[list[str]]:
    """Each `smartsearch-mcp …` line of the README's shell blocks, as arguments after the name."""
    commands = []
    for lang, block in FENCE.findall(README.read_text(encoding="utf-8")):
        if lang not in ("bash", "sh", "shell"):
            continue
        for line in block.splitlines():
            line = line.split(" #")[0].strip()
            for part in re.split(r"&&|\|", line):
                words = shlex.split(part)
                if words and words[0].endswith("smartsearch-mcp"):
                    commands.append(words[1:])
    return commands


def test_the_readme_shows_smartsearch_commands():
    assert len(readme_commands()) >= 5


@pytest.mark.parametrize("argv", readme_commands(), ids=" ".join)
def test_every_command_in_the_readme_is_accepted_by_the_command_line(argv: list[str]):
    parser = build_parser()
    try:
        parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits 2 on a usage error
        pytest.fail(f"`smartsearch-mcp {' '.join(argv)}` is not a valid command ({exc})")


def test_the_readmes_test_command_is_the_one_ci_runs():
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    last = [line for line in ci if re.search(r"python -m pytest", line)][-1]
    command = re.search(r"python -m pytest.*$", last)
    assert command is not None
    shown = [
        line.strip()
        for lang, block in FENCE.findall(README.read_text(encoding="utf-8"))
        for line in block.splitlines()
        if "-m pytest" in line
    ]
    assert any(line.endswith(command.group(0)) for line in shown), (
        f"README.md should show CI's test command `{command.group(0)}`; it shows {shown}"
    )


# A path that names one machine: a home directory, or the folders a checkout sits in there.
MACHINE_PATH = re.compile(r"(?<![\w.~])/(?:home|Users|root|work)/[\w.-]+|[A-Z]:\\Users\\")
DOC_FILES = [
    README,
    *sorted((ROOT / "docs").rglob("*.md")),
    *sorted((ROOT / "training").rglob("*.md")),
]


@pytest.mark.parametrize("page", DOC_FILES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_no_page_names_a_path_of_our_machines(page: Path):
    found = MACHINE_PATH.findall(page.read_text(encoding="utf-8"))
    assert found == [], f"{page.name}: {found[:5]}"


def test_bench_reports_show_paths_relative_to_the_checkout_or_home(monkeypatch, tmp_path):
    from smartsearch_mcp.bench.cli import command_line

    checkout = tmp_path / "repo"
    checkout.mkdir()
    monkeypatch.chdir(checkout)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    argv = ["locomo", str(tmp_path / "shared" / "data"), "--out", str(checkout / "runs" / "a")]
    shown = command_line([*argv, "--embed-cache", str(tmp_path / "home" / "e.db")], None)
    assert shown == (
        "smartsearch-mcp bench locomo ../shared/data --out runs/a --embed-cache ~/e.db"
    )


@pytest.mark.slow
def test_the_python_client_in_docs_clients_remembers_and_recalls(tmp_path: Path):
    """docs/clients.md's "Testing from Python" block, run as written except for where the
    server is (this checkout's module) and the scratch database (in tmp_path)."""
    page = (ROOT / "docs" / "clients.md").read_text(encoding="utf-8")
    section = page.split("### Testing from Python", 1)[1]
    (code,) = [block for lang, block in FENCE.findall(section) if lang == "python"][:1]
    given = {
        '"/path/to/smartsearch-mcp/.venv/bin/smartsearch-mcp"': repr(sys.executable),
        'args=["serve", "--db", "try.db"': (
            f'args=["-m", "smartsearch_mcp", "serve", "--db", {str(tmp_path / "try.db")!r}'
        ),
    }
    for old, new in given.items():
        assert old in code, f"the block no longer holds {old}"
        code = code.replace(old, new)
    env = subprocess_env(HOME=str(tmp_path / "home"), XDG_CACHE_HOME=str(tmp_path / "cache"))
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "We fly to Lisbon on 3 June." in result.stdout
    assert result.stdout.startswith("1 passage from 1 session")
