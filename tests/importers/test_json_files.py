import zipfile
from pathlib import Path

import pytest

from smartsearch_mcp.importers.json_files import load_export_json, load_json
from smartsearch_mcp.types import InputError


def test_zip_member_is_found_at_the_shallowest_depth_ignoring_macos_metadata(
    tmp_path: Path,
) -> None:
    archive = tmp_path / "export.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr("__MACOSX/conversations.json", "garbage")
        zipped.writestr("a/b/conversations.json", "[2]")
        zipped.writestr("a/conversations.json", "[1]")

    assert load_export_json(archive, member="conversations.json", what="an export") == [1]


def test_plain_json_file_is_read_as_is(tmp_path: Path) -> None:
    path = tmp_path / "conversations.json"
    path.write_text('{"a": 1}')

    assert load_export_json(path, member="conversations.json", what="an export") == {"a": 1}


def test_damaged_zip_raises_an_input_error(tmp_path: Path) -> None:
    archive = tmp_path / "export.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr("conversations.json", "[1]" * 100)
    data = bytearray(archive.read_bytes())
    data[40:60] = b"\x00" * 20
    archive.write_bytes(bytes(data))

    with pytest.raises(InputError):
        load_export_json(archive, member="conversations.json", what="an export")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "does not exist; expected a thing"),
        (b"\xff\xfe[", "is not UTF-8 text"),
        (b"[1,", "is not valid JSON .* at line 1, column 4"),
    ],
)
def test_unreadable_files_name_the_file_and_what_was_expected(
    tmp_path: Path, content: bytes | None, message: str
) -> None:
    path = tmp_path / "data.json"
    if content is not None:
        path.write_bytes(content)

    with pytest.raises(InputError, match=message):
        load_json(path, what="a thing")


def test_folder_instead_of_file_raises(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="is a folder"):
        load_json(tmp_path, what="a thing")
