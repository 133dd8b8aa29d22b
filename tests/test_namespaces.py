"""Project namespaces: derived from the git root, stable, readable, distinct per checkout."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from smartsearch_mcp.namespaces import project_namespace, project_root, resolve_auto
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


def test_auto_resolves_to_the_project_and_other_names_pass_through(tmp_path: Path):
    assert resolve_auto("auto", tmp_path) == project_namespace(tmp_path)
    assert resolve_auto("work", tmp_path) == "work"
    assert resolve_auto(None, tmp_path) is None


@given(st.text(min_size=1, max_size=80).filter(lambda s: "/" not in s and "\x00" not in s))
def test_any_directory_name_gives_a_valid_namespace(name: str):
    namespace = project_namespace(Path("/nonexistent-root-for-test") / name)
    assert check_name("namespace", namespace) == namespace
    assert namespace.startswith("project:")
