"""Secrets out of the memory: API keys, tokens, private keys and passwords in a turn are
replaced by a typed, visible placeholder (`[REDACTED:github-token]`) before the turn reaches
the database, its full-text index, its embeddings, exports or logs.

The provider patterns are detect-secrets' (Yelp's scanner, its regex plugins: AWS, GitHub,
GitLab, Slack, Stripe, OpenAI, SendGrid, Discord, Telegram, Azure, Square, PyPI, npm,
Twilio, Mailchimp, URLs with a password); added here are the key kinds it does not know
(Anthropic, OpenAI project keys, GitHub fine-grained tokens, Google, Hugging Face), whole
private-key blocks (it finds only their first line), bearer tokens and a high-entropy
value assigned to a name that says secret (`API_KEY=…`, `"password": "…"`).

Every pattern is matched only where a token starts (not inside a longer word), so each runs
in linear time however hostile the text (tests/test_redact.py times 1 MB inputs), and it
cannot fire in the middle of a hash or an identifier. A pattern is run only over a text
holding what each of its matches needs (its literal prefix, a long enough run of token
characters: `regex_gate`, exact), so a turn costs a few string tests, not thirty scans.
The turn stays readable and recallable: "which token did we use for CI?" still finds
"use [REDACTED:github-token] for the CI". Redacting is idempotent: a placeholder is never a
secret.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from smartsearch_mcp.regex_gate import TextFacts, gate

PLACEHOLDER = "[REDACTED:{kind}]"
PLACEHOLDER_RE = re.compile(r"\[REDACTED:[a-z0-9-]{1,40}\]")
# A token starts at the start of the text or after a character that cannot be part of one.
_START = r"(?<![A-Za-z0-9_\-+/.])"
_END = r"(?![A-Za-z0-9_\-])"
MAX_PRIVATE_KEY_CHARS = 50_000  # a key block longer than this is cut at it (and still hidden)

# detect-secrets plugin module and class -> our placeholder kinds, one per pattern of its
# denylist (in order); None leaves a pattern out (a whole-block rule below replaces it).
_LIBRARY = (
    ("aws", "AWSKeyDetector", ("aws-access-key", "aws-secret-key")),
    ("github_token", "GitHubTokenDetector", ("github-token",)),
    ("gitlab_token", "GitLabTokenDetector", ("gitlab-token",) * 12),
    ("slack", "SlackDetector", ("slack-token", "slack-webhook")),
    ("stripe", "StripeDetector", ("stripe-key",)),
    ("openai", "OpenAIDetector", ("openai-key",)),
    ("sendgrid", "SendGridDetector", ("sendgrid-key",)),
    ("discord", "DiscordBotTokenDetector", ("discord-token",)),
    ("telegram_token", "TelegramBotTokenDetector", ("telegram-token",)),
    ("azure_storage_key", "AzureStorageKeyDetector", ("azure-storage-key",)),
    ("square_oauth", "SquareOAuthDetector", ("square-secret",)),
    ("pypi_token", "PypiTokenDetector", ("pypi-token", "pypi-token")),
    ("twilio", "TwilioKeyDetector", ("twilio-sid", "twilio-key")),
    ("mailchimp", "MailchimpDetector", ("mailchimp-key",)),
    ("basic_auth", "BasicAuthDetector", ("password-in-url",)),
)
_UNANCHORED = {"password-in-url", "aws-secret-key"}
# The kinds detect-secrets does not know (its OpenAI pattern needs the legacy T3BlbkFJ).
_OWN = (
    ("anthropic-key", r"sk-ant-[A-Za-z0-9_\-]{20,400}"),
    ("openai-key", r"sk-(?:proj|svcacct|admin|None)-[A-Za-z0-9_\-]{20,400}"),
    ("openai-key", r"sk-[A-Za-z0-9]{40,400}"),
    ("github-token", r"github_pat_[A-Za-z0-9_]{22,255}"),
    ("google-api-key", r"AIza[0-9A-Za-z_\-]{35}"),
    ("huggingface-token", r"hf_[A-Za-z0-9]{30,80}"),
    ("npm-token", r"npm_[A-Za-z0-9]{36}"),
    # detect-secrets' npm pattern (`//.+/:_authToken=`) is quadratic on a line of "// // …"
    ("npm-token", r"(?<=_authToken=)[ \t]{0,4}[A-Fa-f0-9\-]{36}"),
    ("jwt", r"eyJ[A-Za-z0-9_\-]{8,4000}\.eyJ[A-Za-z0-9_\-]{8,8000}\.[A-Za-z0-9_\-]{0,4000}"),
)
_BEARER = re.compile(r"(?i:(?<![A-Za-z0-9_])bearer)\s{1,4}([A-Za-z0-9._~+/\-]{20,2000}=*)")
# `NAME = value` / `"name": "value"` where the name says what the value is.
_SECRET_NAME = (
    r"passw(?:or)?d|passwd|pwd|pass|secret|token|api[_\-]?key|apikey|access[_\-]?key"
    r"|auth[_\-]?key|private[_\-]?key|credentials?"
)
_GIVEN = r"[\"']?[ \t]{0,4}(?::=|=>|=|:)"  # the name's closing quote, then ":", "=", "=>"…
_ASSIGNED = re.compile(
    rf"(?<![A-Za-z0-9_])(?i:[A-Za-z0-9_.\-]{{0,40}}?(?P<word>{_SECRET_NAME})[A-Za-z0-9_\-]{{0,40}})"
    rf"{_GIVEN}[ \t]{{0,4}}[\"']?(?P<value>[^\s\"'`,;{{}}()<>\[\]]{{6,400}})"
)
# The part of _ASSIGNED from the name to the ":" or "=": a text without it holds no match.
# Its scan is cheap where the whole pattern's is not (that one tries every length of name
# before the word, at every word's start). The names are lowercase: in an ASCII text it is
# searched case-sensitively in the text lowercased, which is the same test and faster.
_NAME_GIVEN = rf"(?:{_SECRET_NAME})[A-Za-z0-9_\-]{{0,40}}"
_ASSIGNED_NEAR = re.compile(rf"(?i:{_NAME_GIVEN}){_GIVEN}")
_ASSIGNED_NEAR_LOWERED = re.compile(rf"{_NAME_GIVEN}{_GIVEN}")
_PRIVATE_KEY = re.compile(
    r"-----BEGIN (?:[A-Z0-9]{1,12} ){0,4}PRIVATE KEY(?: BLOCK)?-----|PuTTY-User-Key-File-\d: "
)
_PRIVATE_KEY_END = re.compile(r"-----END (?:[A-Z0-9]{1,12} ){0,4}PRIVATE KEY(?: BLOCK)?-----")
_URL_USER = re.compile(r"://[^\s/@]{1,200}:[^\s@]{1,400}@")
_SECRET_WORD = re.compile(r"(?i:pass|pwd|secret|token|key|credential)")


# Values that stand for a secret in examples and docs, not a secret.
_DOTTED_NAME = re.compile(r"[A-Za-z_]\w{0,60}(?:\.[A-Za-z_]\w{0,60}){1,8}")
_EXAMPLE_WORDS = ("your", "my_", "my-", "example", "placeholder", "changeme", "change_me", "xxx")
_EXAMPLE_PASSWORDS = {"password", "pass", "passwd", "pw", "pwd", "secret", "token", "p@ssw0rd"}


@dataclass(frozen=True, slots=True)
class Redacted:
    text: str
    kinds: tuple[str, ...]  # one per secret replaced, in the order they appear

    @property
    def count(self) -> int:
        return len(self.kinds)


@dataclass(frozen=True, slots=True)
class _Rule:
    kind: str
    pattern: re.Pattern[str]


def redact(text: str) -> Redacted:
    """`text` with every secret found replaced by `[REDACTED:<kind>]`."""
    facts = TextFacts.of(text)
    if not _may_hold(facts):
        return Redacted(text, ())
    spans = sorted(_spans(facts), key=lambda s: (s[0], -s[1]))
    pieces: list[str] = []
    kinds: list[str] = []
    end = 0
    for start, stop, kind in spans:
        if start < end:  # inside (or overlapping) a secret already replaced
            if stop > end:
                end = stop
            continue
        pieces += [text[end:start], PLACEHOLDER.format(kind=kind)]
        kinds.append(kind)
        end = stop
    if not kinds:
        return Redacted(text, ())
    pieces.append(text[end:])
    return Redacted("".join(pieces), tuple(kinds))


def _may_hold(facts: TextFacts) -> bool:
    """Cheap tests that a text may hold a secret at all: most turns do not, and are left
    alone without loading the patterns. A secret is a long run of token characters, or a
    key block, a URL with a user part, or a name that says secret beside a value."""
    text = facts.text
    return (
        facts.has_run(16)
        or "PRIVATE KEY" in text
        or "PuTTY" in text
        or ("://" in text and _URL_USER.search(text) is not None)
        or (("=" in text or ":" in text) and gate(_SECRET_WORD).admits(facts))
    )


def _spans(facts: TextFacts, gated: bool = True) -> Iterator[tuple[int, int, str]]:
    """Each secret's (start, end, kind). A pattern runs only over a text that holds what it
    needs (`gated`, from its parse: see regex_gate); the tests compare with every pattern
    run over every text."""
    text = facts.text

    def scan(pattern: re.Pattern[str]) -> Iterator[re.Match[str]]:
        return pattern.finditer(text) if not gated or gate(pattern).admits(facts) else iter(())

    for match in scan(_PRIVATE_KEY):
        yield match.start(), _private_key_end(text, match.end()), "private-key"
    for rule in _rules():
        for match in scan(rule.pattern):
            group = 1 if rule.kind in _UNANCHORED and match.group(1) else 0
            if _is_placeholder(text, match.start(group)):
                continue
            if rule.kind == "password-in-url" and _is_reference(match.group(group)):
                continue  # user:password@host, user:${PASSWORD}@host: an example
            yield match.start(group), match.end(group), rule.kind
    for match in scan(_BEARER):
        if _looks_random(match.group(1)):
            yield match.start(1), match.end(1), "bearer-token"
    if gated and not _may_assign(facts):  # a stricter test than _ASSIGNED's gate
        return
    for match in _ASSIGNED.finditer(text):
        value = match.group("value")
        if text[match.end("value") : match.end("value") + 1] in ("(", "[", "."):
            continue  # password = hash(…), token = data["…"]: code, not a value
        word = match.group("word").lower()
        password = word.startswith("pas") or word == "pwd"
        if (password and _is_password_value(value)) or (not password and _looks_random(value)):
            yield match.start("value"), match.end("value"), "password" if password else "secret"


def _may_assign(facts: TextFacts) -> bool:
    if facts.lowered is not None:
        return _ASSIGNED_NEAR_LOWERED.search(facts.lowered) is not None
    return _ASSIGNED_NEAR.search(facts.text) is not None


def _private_key_end(text: str, start: int) -> int:
    """Where the key block that starts before `start` ends: after its END line, else at
    the first blank line (a key pasted without its end), at most MAX_PRIVATE_KEY_CHARS."""
    limit = min(len(text), start + MAX_PRIVATE_KEY_CHARS)
    end = _PRIVATE_KEY_END.search(text, start, limit)
    if end is not None:
        return end.end()
    blank = text.find("\n\n", start, limit)
    return limit if blank < 0 else blank


@cache
def _rules() -> tuple[_Rule, ...]:
    """The provider patterns, each anchored where a token starts (see the module doc)."""
    rules: list[_Rule] = []
    for kind, source, flags in _library_patterns():
        # a URL's password follows its scheme, AWS's secret key a name: no token start
        anchored = _START + source + _END if kind not in _UNANCHORED else source
        rules.append(_Rule(kind, re.compile(anchored, flags)))
    rules += [_Rule(kind, re.compile(_START + source + _END)) for kind, source in _OWN]
    # detect-secrets stops a URL's password at "!", "$", "&"…, which a password may hold
    url_password = r"(?<=://)[^\s/@:]{1,128}:([^\s/@]{1,256})@"
    rules.append(_Rule("password-in-url", re.compile(url_password)))
    return tuple(rules)


def _library_patterns() -> list[tuple[str, str, int]]:
    """(kind, regex, flags) of detect-secrets' plugins in `_LIBRARY`. Importing them costs
    ~130 ms (the package loads its scanner and `requests`), too much for a hook on every
    prompt, so they are kept in the cache, one file per detect-secrets version."""
    import hashlib
    import importlib.util

    # keyed by where the plugins are and when they last changed (reading the installed
    # version through importlib.metadata costs 65 ms: it scans every distribution)
    spec = importlib.util.find_spec("detect_secrets")
    if spec is None or spec.origin is None:
        raise ImportError("detect-secrets is not installed: pip install detect-secrets")
    plugins = Path(spec.origin).parent / "plugins"
    key = f"{plugins}:{plugins.stat().st_mtime_ns}".encode()
    path = _cache_dir() / f"detect-secrets-{hashlib.sha256(key).hexdigest()[:16]}.json"
    try:
        kept = json.loads(path.read_text(encoding="utf-8"))
        if all(
            isinstance(k, str) and isinstance(p, str) and isinstance(f, int) for k, p, f in kept
        ):
            return [(k, p, f) for k, p, f in kept]
    except (OSError, ValueError, TypeError):
        pass
    import importlib

    patterns: list[tuple[str, str, int]] = []
    for module_name, class_name, names in _LIBRARY:
        module = importlib.import_module(f"detect_secrets.plugins.{module_name}")
        denylist = getattr(module, class_name).denylist
        for kind, pattern in zip(names, denylist, strict=False):
            patterns.append((kind, pattern.pattern, int(pattern.flags)))
    with contextlib.suppress(OSError):  # no cache: the next process imports them again
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        temporary = path.with_suffix(f".{os.getpid()}.tmp")
        temporary.write_text(json.dumps(patterns), encoding="utf-8")
        os.replace(temporary, path)
    return patterns


def _cache_dir() -> Path:
    from smartsearch_mcp.paths import user_cache_dir

    return user_cache_dir()


def _is_placeholder(text: str, start: int) -> bool:
    return text.startswith("[REDACTED:", max(0, start - 10)) and text.find("]", start) > start


def _entropy(value: str) -> float:
    counts = Counter(value)
    return -sum(n / len(value) * math.log2(n / len(value)) for n in counts.values())


def _looks_random(value: str) -> bool:
    """A value that reads as a generated key: 16+ characters, letters and digits mixed,
    high entropy; not a placeholder, a variable, a path or a word."""
    if len(value) < 16 or _is_reference(value):
        return False
    digits = sum(c.isdigit() for c in value)
    upper = sum(c.isupper() for c in value)
    lower = sum(c.islower() for c in value)
    mixed = (digits >= 1 and upper + lower >= 4) or (
        upper >= 2 and lower >= 2 and digits + upper >= 6
    )
    return mixed and _entropy(value) >= 3.5


def _is_password_value(value: str) -> bool:
    """A value given to a password-named key that is a password, not code or a placeholder:
    6+ characters with a digit or a symbol in it, that is not a reference."""
    if _is_reference(value) or value.lower() in {"required", "optional", "string", "none"}:
        return False
    # a digit or a symbol other than "_": `password=hashed_password` passes a variable
    return any(not c.isalpha() and c != "_" for c in value) and _entropy(value) >= 2.0


def _is_reference(value: str) -> bool:
    """A value that names where the secret is rather than holding it: `$VAR`, `${VAR}`,
    `<your-key>`, `os.environ[...]`, `***`, `xxxx`, a placeholder, a call, a path."""
    lowered = value.lower()
    return (
        _DOTTED_NAME.fullmatch(value) is not None
        or lowered.startswith(_EXAMPLE_WORDS)
        or lowered in _EXAMPLE_PASSWORDS
        or value[0] in "$%<*{[#@&"
        or PLACEHOLDER_RE.match(value) is not None
        or len(set(lowered)) <= 2
        or lowered.startswith(("os.", "env.", "process.env", "settings.", "config.", "self."))
        or ("/" in value.strip("/") and "." not in value and not any(c.isdigit() for c in value))
        or lowered in {"true", "false", "null", "undefined", "nil"}
    )
