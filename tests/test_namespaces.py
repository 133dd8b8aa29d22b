"""Namespaces: one rule for every command (--namespace, $SMARTSEARCH_NAMESPACE, the git project,
the default); project namespaces derived from the git root, stable, readable, distinct per
checkout."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from smartsearch_mcp.namespaces import (
    choose_namespace,
    directory_namespace,
    project_namespace,
    project_root,
)
from smartsearch_mcp.store import check_name


def test_a_subdirectory_of_a_git_repository_belongs_to_the_repository(tmp_path: Path):
    repo = tmp_path / "my app"
    (repo / ".git").mkdir(parents=True)
    deep = repo / "src" / "pkg"
    deep.mkdir(parents=True)
    assert project_root(deep) == repo.resolve()
    assert project_namespace(deep) == project_namespace(repo)
    assert project_namespace(repo).startswith("project:my-app-")


def test_a_worktree_whose_git_is_a_file_is_its_own_project(tmp_path: Path):
    worktree = tmp_path / "wt"
    worktree.mkdir()
    (worktree / ".git").write_text("gitdir: /elsewhere\n")
    assert project_root(worktree / ".") == worktree.resolve()


def test_without_git_the_working_directory_is_the_project(tmp_path: Path):
    plain = tmp_path / "notes"
    plain.mkdir()
    assert project_root(plain) == plain.resolve()


def test_two_checkouts_with_the_same_name_get_different_namespaces(tmp_path: Path):
    first, second = tmp_path / "a" / "app", tmp_path / "b" / "app"
    first.mkdir(parents=True)
    second.mkdir(parents=True)
    assert project_namespace(first) != project_namespace(second)


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "app"
    (repo / ".git").mkdir(parents=True)
    (repo / "src").mkdir()
    return repo


def test_the_option_wins_then_the_environment_then_the_git_project(tmp_path: Path):
    src = _repo(tmp_path) / "src"
    assert choose_namespace("work", "env", src, "default").namespace == "work"
    assert choose_namespace(None, "env", src, "default").namespace == "env"
    chosen = choose_namespace(None, None, src, "default")
    assert chosen.namespace == project_namespace(tmp_path / "app")
    assert "git repository" in chosen.reason


def test_outside_a_git_repository_the_default_namespace_is_used(tmp_path: Path):
    chosen = choose_namespace(None, "", tmp_path, "mine")
    assert chosen.namespace == "mine"
    assert "not inside a git repository" in chosen.describe()


def test_auto_skips_the_environment_and_applies_the_automatic_rule(tmp_path: Path):
    repo = _repo(tmp_path)
    assert choose_namespace("auto", "env", repo, "default").namespace == project_namespace(repo)
    assert choose_namespace(None, "AUTO", tmp_path, "default").namespace == "default"


def test_a_transcript_directory_outside_git_falls_to_the_default(tmp_path: Path):
    repo = _repo(tmp_path)
    assert directory_namespace(repo / "src") == project_namespace(repo)
    assert directory_namespace(tmp_path) is None
    gone = tmp_path / "elsewhere" / "webapp"  # a transcript from another machine
    assert directory_namespace(gone) == project_namespace(gone)


@given(st.text(min_size=1, max_size=80).filter(lambda s: "/" not in s and "\x00" not in s))
def test_any_directory_name_gives_a_valid_namespace(name: str):
    namespace = project_namespace(Path("/nonexistent-root-for-test") / name)
    assert check_name("namespace", namespace) == namespace
    assert namespace.startswith("project:")
