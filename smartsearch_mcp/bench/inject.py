"""`bench inject`: what the prompt hook injects (smartsearch_mcp.inject), over small memories.

Each memory of `data/small_memories.json` is stored in a fresh database (namespace "bench",
with the next memory in namespace "neighbour" beside it: nothing of it may be injected), and
each prompt of `data/inject_prompts.json` is asked as the hook asks it: the prompt (and, for
a follow-up, the turns of its session before it) is stored in a current session first, then
recalled over the turns stored before it, in two ways —

- "server": `Memory.recall` with the bench's configuration, what a running server answers
  through the recall socket;
- "local": `Memory.recall` with `inject.fallback_config`, the hook's own recall when no server
  runs —

and `inject.confident_passages` / `render_injection` choose and render what goes into the
context. The passages recalled are kept, so the bar (min_confidence x min_shared_words) is also
swept without recalling again. The precise and contentless questions of small_memories.json
are asked the same way as a second set the prompts file's bar was not chosen on.

Latency is the hook as a client runs it: `smartsearch-mcp hook claude-code user-prompt`, one
process per prompt, wall time and the process's CPU time, with no server running (cold) and
with `serve` running on the database (warm, its recall socket answering).
"""

from __future__ import annotations

import dataclasses
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from smartsearch_mcp.bench.small import load_memories, session_turns
from smartsearch_mcp.config import Config
from smartsearch_mcp.inject import confident_passages, fallback_config, render_injection
from smartsearch_mcp.output import recall_output
from smartsearch_mcp.tokens import TokenCounter, get_token_counter
from smartsearch_mcp.types import InputError, TurnInput

DEFAULT_PROMPTS = Path(__file__).parent / "data" / "inject_prompts.json"
NAMESPACE = "bench"
NEIGHBOUR = "neighbour"
MODES = ("server", "local")
CONFIDENCE_GRID = (0.0, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5, 0.6)
SHARED_GRID = (0, 1, 2, 3)
SERVER_START_S = 300.0


@dataclass
class PromptCase:
    """One prompt of a set: its memory, kind, gold turn keys and current session."""

    set_name: str  # prompts | small-questions
    memory: str
    kind: str  # answerable | unrelated | follow-up
    prompt: str
    gold: list[str] = field(default_factory=list)
    session: list[list[Any]] = field(default_factory=list)


@dataclass
class Recalled:
    """What one mode's recall returned for one case (to be judged at any bar)."""

    case: PromptCase
    mode: str
    passages: list[dict[str, Any]]
    gold_ids: list[int]
    current_session: str
    rankers: list[str] = field(default_factory=list)


@dataclass
class Judged:
    """One case at one bar: what was injected."""

    set_name: str
    memory: str
    kind: str
    mode: str
    prompt: str
    injected: list[int]
    tokens: int
    answer_injected: bool | None  # None: not an answerable prompt
    leaked: bool  # a turn of the current session or of another namespace


def load_prompts(path: str | Path | None = None) -> list[PromptCase]:
    """The prompts of an inject-prompts file (default: the one shipped with the package)."""
    source = Path(path) if path is not None else DEFAULT_PROMPTS
    try:
        items = json.loads(source.read_text(encoding="utf-8"))["prompts"]
        cases = [
            PromptCase(
                set_name="prompts",
                memory=item["memory"],
                kind=item["kind"],
                prompt=item["prompt"],
                gold=list(item.get("gold", [])),
                session=list(item.get("session", [])),
            )
            for item in items
        ]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise InputError(
            f"{source}: not an inject-prompts file ({exc}); see {DEFAULT_PROMPTS} for the shape"
        ) from exc
    kinds = {c.kind for c in cases} - {"answerable", "unrelated", "follow-up"}
    if kinds:
        raise InputError(f"{source}: unknown prompt kinds {sorted(kinds)}")
    return cases


def question_cases(memories: list[dict[str, Any]]) -> list[PromptCase]:
    """The precise questions (answerable) and contentless queries (unrelated) of the small
    memories, as a second set of prompts."""
    cases: list[PromptCase] = []
    for spec in memories:
        for q in spec["questions"]:
            cases.append(
                PromptCase("small-questions", spec["name"], "answerable", q["q"], q["gold"])
            )
        for q in spec.get("contentless", []):
            cases.append(PromptCase("small-questions", spec["name"], "unrelated", q))
    return cases


async def recall_cases(
    config: Config, memories: list[dict[str, Any]], cases: list[PromptCase]
) -> list[Recalled]:
    """Store each memory (and its neighbour) in a fresh database and recall every case of it
    in both modes, the prompt stored first in its current session."""
    from smartsearch_mcp.memory import Memory

    by_name = {spec["name"]: spec for spec in memories}
    unknown = {c.memory for c in cases} - set(by_name)
    if unknown:
        raise InputError(f"prompts name memories not in the memories file: {sorted(unknown)}")
    names = list(by_name)
    recalled: list[Recalled] = []
    for name in names:
        spec = by_name[name]
        mine = [c for c in cases if c.memory == name]
        if not mine:
            continue
        neighbour = by_name[names[(names.index(name) + 1) % len(names)]]
        with tempfile.TemporaryDirectory(prefix="smartsearch-inject-") as tmp:
            db = Path(tmp) / "memory.db"
            warm = await Memory.open(config, db, NAMESPACE)
            cold = await Memory.open(fallback_config(config), db, NAMESPACE)
            try:
                ids = await _store_memory(warm, spec, NAMESPACE)
                if neighbour is not spec:
                    await _store_memory(warm, neighbour, NEIGHBOUR)
                await warm.pipeline.embed_backlog()
                reference = datetime.fromisoformat(spec["reference"])
                for index, case in enumerate(mine):
                    session = f"current-{index}"
                    # The session's turns a minute apart, the prompt last, at `reference`;
                    # the recall sees the turns stored before the hook began (until).
                    turns = [
                        TurnInput(text, speaker or role, role, _minutes_before(reference, n))
                        for n, (role, speaker, text) in zip(
                            range(len(case.session), 0, -1), case.session, strict=True
                        )
                    ]
                    turns.append(TurnInput(case.prompt, "user", "user", reference.isoformat()))
                    await warm.remember(turns, session_id=session)
                    cold.pipeline.invalidate()
                    gold = [ids[g] for g in case.gold]
                    for mode, memory in (("server", warm), ("local", cold)):
                        result = await memory.recall(
                            case.prompt, reference=reference, until=reference.isoformat()
                        )
                        out = recall_output(result).model_dump(mode="json")
                        recalled.append(
                            Recalled(case, mode, out["passages"], gold, session, out["rankers"])
                        )
                    await warm.forget(session_id=session)
                    cold.pipeline.invalidate()
            finally:
                await warm.close()
                await cold.close()
    return recalled


def _minutes_before(moment: datetime, minutes: int) -> str:
    return (moment - timedelta(minutes=minutes)).isoformat()


async def _store_memory(memory: Any, spec: dict[str, Any], namespace: str) -> dict[str, int]:
    ids: dict[str, int] = {}
    for session in spec["sessions"]:
        result = await memory.remember(
            session_turns(session), session_id=session["id"], namespace=namespace
        )
        for index, turn_id in enumerate(result.ids):
            ids[f"{session['id']}#{index}"] = turn_id
    return ids


def judge(
    recalled: list[Recalled],
    min_confidence: float,
    min_shared_words: int,
    max_tokens: int,
    counter: TokenCounter,
) -> list[Judged]:
    """What the hook would inject for each recall at this bar."""
    judged: list[Judged] = []
    for item in recalled:
        chosen = confident_passages(
            {"passages": item.passages, "rankers": item.rankers},
            item.case.prompt,
            NAMESPACE,
            item.current_session,
            min_confidence,
            min_shared_words,
        )
        text, kept = render_injection(chosen, counter, max_tokens)
        injected = [p.id for p in kept]
        by_id = {p["id"]: p for p in item.passages}
        leaked = any(
            by_id[i]["session_id"] == item.current_session or by_id[i]["namespace"] != NAMESPACE
            for i in injected
        )
        judged.append(
            Judged(
                set_name=item.case.set_name,
                memory=item.case.memory,
                kind=item.case.kind,
                mode=item.mode,
                prompt=item.case.prompt,
                injected=injected,
                tokens=counter.count(text) if text else 0,
                answer_injected=(
                    any(i in item.gold_ids for i in injected)
                    if item.case.kind == "answerable"
                    else None
                ),
                leaked=leaked,
            )
        )
    return judged


def summarize(judged: list[Judged]) -> dict[str, Any]:
    """Per set and mode: answerable prompts with the answer injected, unrelated prompts with
    anything injected (false injections), follow-ups with anything injected, leaks, tokens."""
    summary: dict[str, Any] = {}
    for set_name in sorted({j.set_name for j in judged}):
        for mode in MODES:
            rows = [j for j in judged if j.set_name == set_name and j.mode == mode]
            if not rows:
                continue
            summary[f"{set_name}/{mode}"] = _numbers(rows)
    return summary


def _numbers(rows: list[Judged]) -> dict[str, Any]:
    def of(kind: str) -> list[Judged]:
        return [j for j in rows if j.kind == kind]

    def share(items: list[Judged], ok: Any) -> float | None:
        return round(sum(1 for j in items if ok(j)) / len(items), 3) if items else None

    injected = [j for j in rows if j.injected]
    return {
        "prompts": len(rows),
        "answerable": len(of("answerable")),
        "answer_injected": share(of("answerable"), lambda j: j.answer_injected),
        "unrelated": len(of("unrelated")),
        "false_injections": share(of("unrelated"), lambda j: bool(j.injected)),
        "follow_ups": len(of("follow-up")),
        "follow_ups_injected": share(of("follow-up"), lambda j: bool(j.injected)),
        "leaks": sum(1 for j in rows if j.leaked),
        "mean_tokens": round(statistics.fmean(j.tokens for j in rows), 1),
        "mean_tokens_when_injected": (
            round(statistics.fmean(j.tokens for j in injected), 1) if injected else 0.0
        ),
    }


def sweep(recalled: list[Recalled], max_tokens: int, counter: TokenCounter) -> list[dict[str, Any]]:
    """The headline numbers of each set and mode at every bar of the grid."""
    rows: list[dict[str, Any]] = []
    for confidence in CONFIDENCE_GRID:
        for shared in SHARED_GRID:
            numbers = summarize(judge(recalled, confidence, shared, max_tokens, counter))
            for key, values in numbers.items():
                rows.append({"bar": [confidence, shared], "set": key, **values})
    return rows


# ---------------------------------------------------------------------- hook latency


def time_hooks(
    config: Config,
    config_name: str | None,
    memories: list[dict[str, Any]],
    cases: list[PromptCase],
    runs: int,
    with_server: bool,
) -> dict[str, Any]:
    """Wall time of `runs` hook processes (cycling over `cases`, on one database holding
    every memory in namespace "bench"), with or without `serve` running on the database."""
    import anyio

    from smartsearch_mcp.recall_socket import RUNTIME_ENV, socket_path

    with tempfile.TemporaryDirectory(prefix="smartsearch-inject-hook-") as tmp:
        root = Path(tmp)
        db = root / "memory.db"
        runtime = root / "run"
        runtime.mkdir(mode=0o700)
        anyio.run(_store_all, config, db, memories)
        env = dict(os.environ, **{RUNTIME_ENV: str(runtime)}, HF_HUB_OFFLINE="1")
        env.pop("SMARTSEARCH_CONFIG", None)
        options = ["--db", str(db), "--namespace", NAMESPACE]
        if config_name:
            options += ["--config", config_name]
        server = None
        try:
            if with_server:
                sock = socket_path(db, runtime=runtime)
                server = subprocess.Popen(
                    [sys.executable, "-m", "smartsearch_mcp", "serve", *options],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    env=env,
                )
                _wait_for(sock, server)
                for case in cases[:2]:  # the server's first recalls load its models
                    _run_hook(env, options, case.prompt, "warm-up", root)
            seconds: list[float] = []
            cpu: list[float] = []
            injected = 0
            for index in range(runs):
                case = cases[index % len(cases)]
                before = children_cpu_s()
                elapsed, printed = _run_hook(env, options, case.prompt, f"run-{index}", root)
                cpu.append(children_cpu_s() - before)
                seconds.append(elapsed)
                injected += bool(printed)
            log_text = (root / "hooks.log").read_text(encoding="utf-8", errors="replace")
        finally:
            if server is not None:
                server.terminate()
                try:
                    server.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    server.kill()
    ordered = sorted(seconds)
    return {
        "server": with_server,
        "runs": runs,
        "p50_ms": round(statistics.median(ordered) * 1000),
        "p95_ms": round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))] * 1000),
        "max_ms": round(ordered[-1] * 1000),
        "cpu_p50_ms": round(statistics.median(cpu) * 1000),
        "injected": injected,
        "server_recalls": log_text.count("server recall"),
        "local_recalls": log_text.count("local recall"),
        "time_limits": log_text.count(": time limit"),
    }


async def _store_all(config: Config, db: Path, memories: list[dict[str, Any]]) -> None:
    from smartsearch_mcp.memory import Memory

    memory = await Memory.open(config, db, NAMESPACE)
    try:
        for spec in memories:
            for session in spec["sessions"]:
                turns = session_turns(session)
                await memory.remember(turns, session_id=f"{spec['name']}:{session['id']}")
        await memory.pipeline.embed_backlog()
    finally:
        await memory.close()


def children_cpu_s() -> float:
    """CPU seconds (user + system) of this process's finished child processes so far (0
    where the platform cannot tell): a hook's own cost, which other jobs on a shared machine
    change less than its wall time."""
    try:
        import resource
    except ImportError:  # Windows
        return 0.0
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _wait_for(sock: Path | None, server: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + SERVER_START_S
    while time.monotonic() < deadline:
        if sock is not None and sock.exists():
            return
        if server.poll() is not None:
            raise InputError(f"the server exited ({server.returncode}) before it listened")
        time.sleep(0.2)
    raise InputError(f"the server did not listen on {sock} within {SERVER_START_S:.0f} s")


def _run_hook(
    env: dict[str, str], options: list[str], prompt: str, session: str, cwd: Path
) -> tuple[float, str]:
    payload = json.dumps({"session_id": session, "cwd": str(cwd), "prompt": prompt})
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "smartsearch_mcp", "hook", "claude-code", "user-prompt", *options],
        input=payload,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise InputError(f"the hook exited {done.returncode}: {done.stderr[-500:]}")
    return elapsed, done.stdout


# ---------------------------------------------------------------------- the report


def run_inject(
    config: Config,
    config_name: str | None,
    prompts_path: str | None,
    runs: int,
) -> dict[str, Any]:
    """Every measurement of `bench inject`, as one JSON-ready dict."""
    import anyio

    memories = load_memories()
    cases = load_prompts(prompts_path)
    held_out = question_cases(memories)
    counter = get_token_counter(config.truncation.tokenizer)
    settings = config.inject
    recalled = anyio.run(recall_cases, config, memories, cases + held_out)
    judged = judge(
        recalled,
        settings.min_confidence,
        settings.min_shared_words,
        settings.max_tokens,
        counter,
    )
    latency = []
    if runs:
        latency = [
            time_hooks(config, config_name, memories, cases, runs, with_server=False),
            time_hooks(config, config_name, memories, cases, runs, with_server=True),
        ]
    return {
        "settings": dataclasses.asdict(settings),
        "summary": summarize(judged),
        "sweep": sweep(recalled, settings.max_tokens, counter),
        "latency": latency,
        "prompts": [dataclasses.asdict(j) for j in judged],
    }


def format_inject(results: dict[str, Any], config_name: str, command: str) -> str:
    """The markdown report: targets, the bar swept, hook latency, every prompt."""
    s = results["settings"]
    lines = [
        f"# Injected context at each prompt, `{config_name}` preset",
        "",
        f"`{command}`. Bar: confidence ≥ {s['min_confidence']}, words shared with the prompt "
        f"≥ {s['min_shared_words']}; "
        f"budget {s['max_tokens']} tokens; time limit {s['time_limit_s']} s. "
        "server: the recall a running server gives (this configuration); local: the hook's "
        f"own recall (`{s['fallback_config'] or 'this configuration'}`). "
        "`prompts` is the set the bar was chosen on, `small-questions` the precise and "
        "contentless questions of bench small (not looked at when choosing).",
        "",
        "| set / recall | answer injected (≥ 70 %) | false injections (≤ 10 %) | "
        "follow-ups injected | leaks | mean tokens (≤ 150) | mean when injected |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for key, n in results["summary"].items():
        lines.append(
            f"| {key} | {_pct(n['answer_injected'])} of {n['answerable']} | "
            f"{_pct(n['false_injections'])} of {n['unrelated']} | "
            f"{_pct(n['follow_ups_injected'])} of {n['follow_ups']} | {n['leaks']} | "
            f"{n['mean_tokens']} | {n['mean_tokens_when_injected']} |"
        )
    if results["latency"]:
        lines += [
            "",
            "Hook latency: one `smartsearch-mcp hook claude-code user-prompt` process per "
            "prompt, wall time (Python start, storing the prompt, recall, output), and the "
            "hook process's CPU time (user + system; the server's is not in it).",
            "",
            "| server running | runs | p50 ms | p95 ms (target) | max ms | CPU p50 ms | "
            "injected | server / local recalls | over the time limit |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for t in results["latency"]:
            target = "≤ 300" if t["server"] else "≤ 1,500"
            lines.append(
                f"| {'yes' if t['server'] else 'no (cold)'} | {t['runs']} | {t['p50_ms']} | "
                f"{t['p95_ms']} ({target}) | {t['max_ms']} | {t.get('cpu_p50_ms', '–')} | "
                f"{t['injected']} | {t['server_recalls']} / {t['local_recalls']} | "
                f"{t['time_limits']} |"
            )
    lines += [
        "",
        "## The bar swept (prompts set)",
        "",
        "answer injected / false injections / mean tokens, per recall, at each "
        "min_confidence (rows) x min_shared_words (columns).",
        "",
    ]
    for mode in MODES:
        key = f"prompts/{mode}"
        lines += [
            f"**{mode}**",
            "",
            "| conf \\ shared words | " + " | ".join(map(str, SHARED_GRID)) + " |",
        ]
        lines.append("|---|" + "---|" * len(SHARED_GRID))
        for confidence in CONFIDENCE_GRID:
            cells = []
            for shared in SHARED_GRID:
                row = next(
                    r
                    for r in results["sweep"]
                    if r["set"] == key and r["bar"] == [confidence, shared]
                )
                cells.append(
                    f"{_pct(row['answer_injected'])} / {_pct(row['false_injections'])} / "
                    f"{row['mean_tokens']:.0f}"
                )
            lines.append(f"| {confidence} | " + " | ".join(cells) + " |")
        lines.append("")
    lines += [
        "## Every prompt",
        "",
        "| set | recall | memory | kind | prompt | injected turns | tokens | answer |",
        "|---|---|---|---|---|---|---:|---|",
    ]
    for p in results["prompts"]:
        answer = "" if p["answer_injected"] is None else ("yes" if p["answer_injected"] else "no")
        prompt = p["prompt"].replace("|", "\\|")
        lines.append(
            f"| {p['set_name']} | {p['mode']} | {p['memory']} | {p['kind']} | {prompt} | "
            f"{', '.join(map(str, p['injected']))} | {p['tokens']} | {answer} |"
        )
    return "\n".join(lines) + "\n"


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{value:.0%}"
