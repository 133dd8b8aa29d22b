"""regex_gate: a text its gate refuses never matches the pattern (strings generated to hold a
match, the case-folding and digits of non-ASCII texts), the gates refuse what they should,
and redaction through the gates finds exactly what scanning every pattern over every text
finds."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from smartsearch_mcp import redact
from smartsearch_mcp.regex_gate import Gate, TextFacts, gate

# Patterns of the shapes the gates read: literal runs, alternations, optional parts,
# repeats, groups, look-arounds, classes, \d and \w, case-insensitive parts.
SHAPES = [
    r"(?<![A-Za-z0-9])ghp_[A-Za-z0-9]{36}(?![A-Za-z0-9])",
    r"(?:AKIA|ASIA|A3T[A-Z0-9])[0-9A-Z]{16}",
    r"(?i)bearer\s+[a-z0-9._\-]{20,}",
    r"(?i:api[_\-]?key|secret)[A-Za-z0-9_]{0,10}\s*[:=]\s*\S{6,}",
    r"\d{8,10}:[0-9A-Za-z_-]{35}",
    r"[MNO][a-zA-Z\d_-]{23,25}\.[a-zA-Z\d_-]{6}",
    r"(?<=_authToken=)[ \t]{0,4}[A-Fa-f0-9\-]{36}",
    r"x(?:ab)+y|zz(?=q)",
    r"\w{12}",
    r"(?i)[a-z]{20}",
    r"(?>abc|abd)e+",
    r"colou?r-(?:red|green)",
    r"id=[^x]y[^\n]{2}",
]
PATTERNS = [re.compile(p) for p in SHAPES]


def _redaction_patterns() -> list[re.Pattern[str]]:
    from smartsearch_mcp.redact import _ASSIGNED, _BEARER, _PRIVATE_KEY, _SECRET_WORD, _rules

    return [rule.pattern for rule in _rules()] + [_ASSIGNED, _BEARER, _PRIVATE_KEY, _SECRET_WORD]


@st.composite
def _holding_a_match(draw: st.DrawFn, patterns: list[re.Pattern[str]]) -> tuple[str, str]:
    pattern = draw(st.sampled_from(patterns))
    return pattern.pattern, draw(st.from_regex(pattern))


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_text_holding_a_match_is_admitted(data: st.DataObject) -> None:
    source, text = data.draw(_holding_a_match(PATTERNS + _redaction_patterns()))
    pattern = re.compile(source) if source in SHAPES else _pattern_by_source(source)
    if pattern.search(text):
        assert gate(pattern).admits(TextFacts.of(text)), (source, text)


def _pattern_by_source(source: str) -> re.Pattern[str]:
    return next(p for p in _redaction_patterns() if p.pattern == source)


@pytest.mark.parametrize(
    ("source", "text"),
    [
        # ignoring case, "s" matches the long s, "k" the Kelvin sign, "i" the dotless i:
        # not in an ASCII lowercase test
        (r"(?i)secret", "my \u017fecret is out"),
        (r"(?i)key", "the \u212aEY"),
        (r"(?i)api", "the AP\u0131 key"),
        (r"(?i)[a-z]{20}", "\u212a" * 20),
        # \d and \w match other scripts' digits and letters, outside the token bytes
        (r"\d{8}:", "\u0661\u0662\u0663\u0664\u0665\u0666\u0667\u0668:"),
        (r"\w{12}", "\u00e9" * 12),
        (r"[MNO][a-zA-Z\d_-]{23,25}\.", "M" + "\u0663" * 23 + "."),
    ],
)
def test_non_ascii_texts_that_match_are_admitted(source: str, text: str) -> None:
    pattern = re.compile(source)
    assert pattern.search(text), "the example must match"
    assert gate(pattern).admits(TextFacts.of(text))


@pytest.mark.parametrize(
    ("source", "refused"),
    [
        (SHAPES[0], ["hello world", "ghp_short", "gh" + "p_" + "x" * 35, "GHP_" + "a" * 36]),
        (SHAPES[1], ["AKIA too short", "no key here at all, none"]),
        (SHAPES[2], ["a bearer of news", "no token here"]),
        (SHAPES[4], ["at 12:30 we met", "12345678:" + "a" * 34]),
        (r"(?i)secret", ["nothing to hide"]),
    ],
)
def test_gates_refuse_texts_lacking_what_a_match_needs(source: str, refused: list[str]) -> None:
    pattern = re.compile(source)
    for text in refused:
        assert not pattern.search(text)
        assert not gate(pattern).admits(TextFacts.of(text)), text


def test_what_the_gates_read_from_a_pattern() -> None:
    github = gate(re.compile(SHAPES[0]))
    assert github.run_ascii == github.run_any == 40
    assert [s.strings for s in github.strings] == [("ghp_",)]
    # \d counts as a token character only in an ASCII text
    telegram = gate(re.compile(r"\d{8,10}:x"))
    assert (telegram.run_ascii, telegram.run_any) == (8, 1)
    # a case-insensitive run is searched ignoring case; an alternation joins its branches
    named = gate(re.compile(r"(?i:secret|api[_-]?key)=[0-9]{6}"))
    assert [(s.strings, s.folded is not None) for s in named.strings] == [
        (("=",), False),
        (("secret", "api"), True),
    ]
    # an unreadable pattern (another Python's parser) admits everything
    assert Gate().admits(TextFacts.of("anything"))


# Redaction through the gates equals every pattern over every text.
_SECRETS = [
    "ghp_" + "R8x2Kq7LmN3pV9sT1wY4zA6bC0dE5fG2hJ7k",
    "AKIA" + "Q3EGRL7ZX5N2WP4D",
    "sk-ant-" + "api03-Zk3Lp9Qw2Er7Ty5Ui1Op8As4Df6Gh0Jk-Lz3Xc7Vb_nM2qW9eR4",
    "xoxb-" + "208846211-4417932101987-Ut5kY8nR2pQ9mW3vX7zL1cB6",
    "AIza" + "SyD9tSrke72PouQMnMXa7eZSW0jkFMBWYx3",
    "Bearer " + "Zk3Lp9Qw2Er7Ty5Ui1Op8As4Df6",
    "API_KEY=" + "9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4cZq",
    '"password": "' + "Pg7x!Vault-42" + '"',
    "postgres://app:" + "Pg7x!Vault-42" + "@db:5432/app",
    "123456789:" + "AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsawA",
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----",
]
_PROSE = st.sampled_from(
    [
        "the deploy failed at 12:30",
        "token = get_token()",
        "see https://example.com/docs",
        "\u017fecret: ",
        "PASSWORD:",
        "\u0661\u0662\u0663\u0664\u0665\u0666\u0667\u0668\u0669:",
        "caf\u00e9 \U0001f600",
        "key",
        "=",
        " ",
        "\n",
    ]
)


@settings(max_examples=400, deadline=None)
@given(
    pieces=st.lists(st.one_of(st.sampled_from(_SECRETS), _PROSE, st.text(max_size=30)), max_size=8)
)
def test_redaction_through_the_gates_finds_what_every_pattern_finds(pieces: list[str]) -> None:
    text = "".join(pieces)
    facts = TextFacts.of(text)
    everything = sorted(redact._spans(facts, gated=False))
    assert sorted(redact._spans(facts)) == everything
    assert redact._may_hold(facts) or not everything


@pytest.mark.parametrize("secret", _SECRETS)
def test_each_secret_is_found_through_the_gates_in_ascii_and_other_texts(secret: str) -> None:
    for text in (f"use {secret} here", f"caf\u00e9 \u017f {secret} \U0001f600"):
        assert redact.redact(text).count == 1, text
