"""`smartsearch-mcp bench ...`: LoCoMo, BEAM, LongMemEval, RealMem, Mem-Gallery, QMSum and
FriendsQA recall benchmarks with baselines, the synthetic scale benchmark, and `report` to
regenerate markdown from results folders.

Examples:
    smartsearch-mcp bench locomo data/locomo --config offline --baseline bm25 \
        --baseline full-context
    smartsearch-mcp bench beam data/beam-100k --limit 50
    smartsearch-mcp bench longmemeval longmemeval_s.json
    smartsearch-mcp bench qmsum QMSum/data/ALL/val --config offline --baseline bm25
    smartsearch-mcp bench scale --turns 1000000 --data data --modes indexed,grep
    smartsearch-mcp bench loop-lag --config lexical --turns 100000 --data data
    smartsearch-mcp bench inject --config offline
    smartsearch-mcp bench ui --config lexical --turns 100000
    smartsearch-mcp bench report bench-results/locomo-offline-*/ > benchmarks.md
"""

from __future__ import annotations

import argparse
import logging
import os
import shlex
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import anyio

from smartsearch_mcp.config import Config
from smartsearch_mcp.types import InputError

log = logging.getLogger(__name__)

DEFAULT_BUDGETS: tuple[int, ...] = (750, 1500, 3000, 6000)
DEFAULT_ALPHAS: tuple[float, ...] = (0.1, 0.2, 0.3, 0.5)
DEFAULT_CASCADE_CUTS: tuple[int, ...] = (30, 60, 100, 150)  # see RunOptions.cascade_cuts
BASELINE_CHOICES = ("bm25", "full-context")
DATA_ENV = "SMARTSEARCH_BENCH_DATA"


# Where each benchmark's data comes from (public repositories) and what to pass.
DATA_SOURCES: dict[str, str] = {
    "locomo": "LoCoMo comes from https://github.com/snap-research/locomo: download "
    "data/locomo10.json from it and pass that file (or a folder of per-conversation "
    "files), e.g. `smartsearch-mcp bench locomo data/locomo10.json`.",
    "beam": "BEAM comes from https://github.com/mohammadtavakoli78/BEAM: clone it and pass a "
    "split folder holding 1/chat.json, 2/chat.json, ... (or one conversation folder), e.g. "
    "`smartsearch-mcp bench beam BEAM/chats/100K`.",
    "longmemeval": "LongMemEval comes from https://github.com/xiaowu0162/LongMemEval: get "
    "longmemeval_s.json as its README describes and pass that file, e.g. "
    "`smartsearch-mcp bench longmemeval longmemeval_s.json`.",
    "realmem": "RealMem comes from https://github.com/zhiyuan5986/RealMemBench: pass its "
    "dataset folder of *_dialogues_256k.json persona files (or one of them), e.g. "
    "`smartsearch-mcp bench realmem RealMemBench/dataset`.",
    "memgallery": "Mem-Gallery comes from https://github.com/ma-xueqian/Mem-Gallery: pass its "
    "benchmark/data/dialog folder (or one conversation file), e.g. "
    "`smartsearch-mcp bench memgallery Mem-Gallery/benchmark/data/dialog`.",
    "qmsum": "QMSum comes from https://github.com/Yale-LILY/QMSum: pass data/ALL (its train/ "
    "and val/ folders are the two halves), one split folder, or one meeting file, e.g. "
    "`smartsearch-mcp bench qmsum QMSum/data/ALL/val`.",
    "friendsqa": "FriendsQA comes from https://github.com/emorynlp/FriendsQA: pass a split "
    "file such as dat/friendsqa_dev.json, e.g. "
    "`smartsearch-mcp bench friendsqa FriendsQA/dat/friendsqa_dev.json`.",
}


def run_bench(argv: list[str], config: Config, config_name: str | None) -> int:
    """Run `smartsearch-mcp bench` with the arguments after `bench`; return the exit code.

    `config` is the configuration the main CLI loaded (named `config_name`); a `--config`
    given after the bench name replaces it.
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "handler", None):
        parser.print_help(sys.stderr)
        return 2
    if args.log_level:
        logging.getLogger().setLevel(getattr(logging, args.log_level.upper()))
    if args.config:
        config, config_name = Config.load(args.config), args.config
    handler: Callable[[argparse.Namespace, Config, str | None, list[str]], int] = args.handler
    return handler(args, config, config_name, argv)


def build_parser() -> argparse.ArgumentParser:
    """The `bench` argument parser (exposed for tests and docs)."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--config", help="TOML config file or preset name (e.g. offline)")
    common.add_argument(
        "--out", help="results folder (default: bench-results/<bench>-<config>-<time>)"
    )
    common.add_argument("--no-progress", action="store_true", help="no progress bars")
    common.add_argument("--no-plots", action="store_true", help="write no PNG plots")
    common.add_argument("--log-level", default=None, help="debug, info, warning, error")

    parser = argparse.ArgumentParser(
        prog="smartsearch-mcp bench", description="Reproducible benchmarks (see README)."
    )
    sub = parser.add_subparsers(title="benchmarks", metavar="BENCH")
    for name, target, help_text in (
        ("locomo", "PATH", "LoCoMo: a folder of per-conversation files, or locomo10.json"),
        ("beam", "PATH", "BEAM: a split folder (1/chat.json, ...) or one conversation folder"),
        ("longmemeval", "FILE", "LongMemEval: a JSON file of records (e.g. longmemeval_s.json)"),
        ("realmem", "PATH", "RealMem: a folder of persona files (*_dialogues_256k.json) or one"),
        ("memgallery", "PATH", "Mem-Gallery: a folder of conversation files (dialog/) or one"),
        ("qmsum", "PATH", "QMSum: data/ALL (train/, val/ as halves), one split folder or file"),
        ("friendsqa", "FILE", "FriendsQA: a split file (e.g. friendsqa_dev.json)"),
    ):
        bench = sub.add_parser(name, parents=[common], help=help_text, description=help_text)
        bench.add_argument("path", metavar=target)
        _retrieval_options(bench, name)
        bench.set_defaults(handler=_cmd_retrieval, bench=name)

    scale = sub.add_parser(
        "scale", parents=[common], help="synthetic memory: throughput, size, latency, RSS"
    )
    scale.add_argument("--turns", type=_positive_int, default=100_000, help="turns to build")
    scale.add_argument(
        "--data",
        action="append",
        help=f"LoCoMo/BEAM data to recombine (repeatable; default ${DATA_ENV})",
    )
    scale.add_argument("--modes", default="indexed,grep", help="retrieval modes to time")
    scale.add_argument(
        "--checkpoints", help="sizes to measure at (default 10000,100000,1000000 and --turns)"
    )
    scale.add_argument("--queries", type=_positive_int, default=20, help="timed queries")
    scale.add_argument("--seed", type=int, default=0)
    scale.add_argument("--batch-size", type=_positive_int, default=10_000)
    scale.add_argument(
        "--embed-sample", type=int, default=1000, help="turns embedded to time the bi-encoder"
    )
    scale.add_argument("--max-tokens", type=_positive_int, default=None, help="recall budget")
    scale.add_argument(
        "--keep-db",
        help="build the database at this path and keep it, or in this postgresql:// URL's "
        "database (which must hold no 'scale' turns yet)",
    )
    scale.set_defaults(handler=_cmd_scale)

    lag = sub.add_parser(
        "loop-lag",
        parents=[common],
        help="does one client's recall stall another's requests? (streamable HTTP)",
    )
    lag.add_argument("--turns", type=_positive_int, default=100_000, help="turns to build")
    lag.add_argument(
        "--data",
        action="append",
        help=f"LoCoMo/BEAM data to recombine (repeatable; default ${DATA_ENV})",
    )
    lag.add_argument("--recalls", type=_positive_int, default=20, help="timed recalls")
    lag.add_argument("--seed", type=int, default=0)
    lag.add_argument("--max-tokens", type=_positive_int, default=None, help="recall budget")
    lag.add_argument(
        "--keep-db", help="build the database at this path and keep it (reused when it exists)"
    )
    lag.set_defaults(handler=_cmd_loop_lag)
    ui = sub.add_parser(
        "ui", parents=[common], help="memory browser: each view's render time on a large memory"
    )
    ui.add_argument("--turns", type=_positive_int, default=100_000, help="turns to build")
    ui.add_argument("--repeats", type=_positive_int, default=20, help="timed requests per view")
    ui.add_argument("--seed", type=int, default=0)
    ui.add_argument(
        "--keep-db", help="build the database at this path and keep it (reused when it exists)"
    )
    ui.set_defaults(handler=_cmd_ui)
    small = sub.add_parser(
        "small",
        parents=[common],
        help="small realistic memories: answer first, passages returned, contentless queries",
    )
    small.add_argument(
        "path", nargs="?", default=None, help="a small-memories JSON file (default: built in)"
    )
    small.set_defaults(handler=_cmd_small)
    agent = sub.add_parser(
        "agent",
        parents=[common],
        help="memories like agents store (coding sessions, team channels, chats): per kind",
    )
    agent.add_argument(
        "path", nargs="?", default=None, help="an agent-memories JSON file (default: built in)"
    )
    agent.add_argument(
        "--check", action="store_true", help="only verify the file's gold and superseded labels"
    )
    agent.add_argument(
        "--ablate",
        action="store_true",
        help="also run with each post-fusion adjustment off, one at a time",
    )
    agent.set_defaults(handler=_cmd_agent)
    inject = sub.add_parser(
        "inject",
        parents=[common],
        help="what the prompt hook injects: answers injected, false injections, tokens, latency",
    )
    inject.add_argument(
        "prompts", nargs="?", default=None, help="an inject-prompts JSON file (default: built in)"
    )
    inject.add_argument(
        "--runs", type=int, default=20, help="hook processes timed per mode (0: no timing)"
    )
    inject.set_defaults(handler=_cmd_inject)
    cold = sub.add_parser(
        "cold-recall",
        parents=[common],
        help="a command-line recall with no server running: wall and CPU time per process",
    )
    cold.add_argument("--runs", type=_positive_int, default=6, help="recalls, one process each")
    cold.set_defaults(handler=_cmd_cold_recall)
    rankers = sub.add_parser(
        "rankers",
        parents=[common],
        help="rank-stage speed with the configured rankers' shapes (random weights, offline)",
        description="Time the rank stage with random-weight models of the configured "
        "cross-encoder's and ColBERT's exact shapes: recall's way against the naive way.",
    )
    rankers.add_argument(
        "--data",
        default=os.environ.get(DATA_ENV),
        help=f"LoCoMo or BEAM data for realistic candidates (default ${DATA_ENV}; "
        "generated text when absent)",
    )
    rankers.add_argument("--candidates", type=_positive_int, default=60)
    rankers.add_argument("--repeats", type=_positive_int, default=20, help="timed queries")
    rankers.add_argument(
        "--precision",
        choices=("auto", "fp32", "bf16", "int8"),
        help="override models.precision for recall's way",
    )
    rankers.add_argument(
        "--questions",
        type=int,
        default=40,
        help="LoCoMo questions of the whole-recall timing (0: skip it; needs LoCoMo in --data)",
    )
    rankers.add_argument("--json", action="store_true", help="print the summary as JSON")
    rankers.set_defaults(handler=_cmd_rankers)

    report = sub.add_parser(
        "report", help="regenerate summary.md and plots; print the README Benchmarks section"
    )
    report.add_argument("folders", nargs="+", metavar="RESULTS_DIR")
    report.add_argument("-o", "--output", help="also write the markdown to this file")
    report.add_argument("--no-plots", action="store_true")
    report.add_argument("--config", help=argparse.SUPPRESS)
    report.add_argument("--log-level", default=None, help=argparse.SUPPRESS)
    report.set_defaults(handler=_cmd_report)

    compare = sub.add_parser(
        "compare",
        help="did a change help? two runs of one benchmark, paired by question",
        description="Two results folders of one benchmark (before and after a change), paired "
        "by question: per budget the recall of each, the difference and its 95 %% interval "
        "(resampling conversations, then their questions), and whether the change helps, "
        "hurts or makes no clear difference.",
    )
    compare.add_argument("before", metavar="BEFORE_DIR")
    compare.add_argument("after", metavar="AFTER_DIR")
    compare.add_argument(
        "--half", help="only the questions of this half (A or B; QMSum: train or val)"
    )
    compare.add_argument("--system", default="smartsearch", help="the system compared")
    compare.add_argument("--samples", type=_positive_int, default=2000, help="resamples")
    compare.add_argument("--seed", type=int, default=0)
    compare.add_argument("--config", help=argparse.SUPPRESS)
    compare.add_argument("--log-level", default=None, help=argparse.SUPPRESS)
    compare.set_defaults(handler=_cmd_compare)
    return parser


def _retrieval_options(parser: argparse.ArgumentParser, bench: str) -> None:
    parser.add_argument("--limit", type=_positive_int, help="evaluate at most N questions")
    categories = {
        "locomo": "LoCoMo categories, e.g. 1,2,3,4 (default; add 5 for adversarial)",
        "beam": "BEAM abilities, e.g. information_extraction,temporal_reasoning (default all)",
        "longmemeval": "question types, e.g. multi-session,temporal-reasoning (default all)",
        "realmem": "query categories, e.g. 'Dynamic Updating,Implicit Preference' (default all)",
        "memgallery": "question types, e.g. FR,TR,VS (default all; AR has no gold)",
        "qmsum": "meeting sources: product,academic,committee (default all)",
        "friendsqa": "question words: who,what,where,when,why,how (default all)",
    }[bench]
    parser.add_argument("--categories", help=categories)
    parser.add_argument(
        "--baseline",
        action="append",
        choices=BASELINE_CHOICES,
        default=[],
        help="also run a baseline (repeatable): bm25, full-context",
    )
    parser.add_argument(
        "--budgets",
        default=",".join(map(str, DEFAULT_BUDGETS)),
        help="token budgets (default 750,1500,3000,6000 ≈ 500/1000/2000/4000 words)",
    )
    parser.add_argument(
        "--ablate",
        action="store_true",
        help="also rank every question with each adjustment of rank.adjust off, one at a "
        "time (recall at the default budget; the report's 'Each adjustment off' table)",
    )
    parser.add_argument(
        "--alphas",
        default=",".join(f"{a:g}" for a in DEFAULT_ALPHAS),
        help="truncation thresholds compared at the default budget on the same rankings, "
        "for the curve of tokens returned against recall (default "
        + ",".join(f"{a:g}" for a in DEFAULT_ALPHAS)
        + "; empty: none)",
    )
    parser.add_argument(
        "--cascade-cuts",
        default=",".join(map(str, DEFAULT_CASCADE_CUTS)),
        help="cascade cuts (rank.expensive_candidates) at which to report the gold evidence "
        "that the first pass (the rankers but the cross-encoder and ColBERT) keeps among its "
        "best N candidates (default " + ",".join(map(str, DEFAULT_CASCADE_CUTS)) + "; empty: none)",
    )
    parser.add_argument(
        "--db",
        metavar="URL",
        help="run on PostgreSQL: each haystack in a schema of its own in this database "
        "(postgresql://…; default: a temporary SQLite file per haystack)",
    )
    parser.add_argument(
        "--half",
        help="evaluate only the haystacks of this half of the split by conversation (A, B; "
        "QMSum: train, val), e.g. to score a ranker trained on the other half",
    )
    parser.add_argument(
        "--keep-ranking",
        type=int,
        default=0,
        metavar="N",
        help="also write each question's best N ranked passages and its gold passages, with "
        "the texts the rankers read, to ranking.jsonl (training data: see training/)",
    )
    parser.add_argument(
        "--embed-cache",
        metavar="FILE",
        help="reuse passage embeddings across runs: vectors by model and text, in this SQLite "
        "file (created when missing; results are identical, later runs skip the embedding)",
    )
    qa = parser.add_argument_group("QA accuracy (optional; any OpenAI-compatible endpoint)")
    qa.add_argument("--answer-model", help="model answering from the recalled context")
    qa.add_argument("--judge-model", help="model judging answers (default: the answer model)")
    qa.add_argument("--base-url", help="endpoint base URL, e.g. http://localhost:8000/v1")
    qa.add_argument(
        "--api-key-env", default="OPENAI_API_KEY", help="environment variable holding the key"
    )
    qa.add_argument("--qa-budget", type=_positive_int, help="context budget for answering")


# ---------------------------------------------------------------------- commands


def _cmd_retrieval(
    args: argparse.Namespace, config: Config, config_name: str | None, argv: list[str]
) -> int:
    from smartsearch_mcp.bench import datasets
    from smartsearch_mcp.bench.ablation import ablations
    from smartsearch_mcp.bench.metrics import summarize, summarize_halves
    from smartsearch_mcp.bench.report import write_summary
    from smartsearch_mcp.bench.results import (
        config_snapshot,
        default_out_dir,
        machine_info,
        now_iso,
        write_rankings,
        write_results,
    )
    from smartsearch_mcp.bench.runner import RunOptions, primary_budget, run_benchmark
    from smartsearch_mcp.tokens import get_token_counter

    if not Path(args.path).exists():
        raise InputError(f"{args.path}: no such file or folder. {DATA_SOURCES[args.bench]}")
    budgets = _parse_budgets(args.budgets)
    categories = _split(args.categories)
    halved = {
        "realmem": datasets.load_realmem_bench,
        "memgallery": datasets.load_memgallery_bench,
        "qmsum": datasets.load_qmsum_bench,
        "friendsqa": datasets.load_friendsqa_bench,
    }
    if args.bench == "locomo":
        numbers = _parse_locomo_categories(categories) if categories else (1, 2, 3, 4)
        benchmark = datasets.load_locomo_bench(args.path, numbers)
    elif args.bench in halved:  # the sets whose haystacks are split into halves
        benchmark = halved[args.bench](args.path, categories or None)
    elif args.bench == "beam":
        benchmark = datasets.load_beam_bench(args.path, categories or None)
    else:
        benchmark = datasets.load_longmemeval_bench(args.path, categories or None)
    if args.half is not None:
        benchmark = _only_half(benchmark, args.half)
    if not any(h.questions for h in benchmark.haystacks):
        raise InputError(f"{args.path}: no questions to evaluate (check --categories)")
    qa = _qa_evaluator(args)
    main_budget = primary_budget(budgets, config.truncation.max_tokens)
    options = RunOptions(
        budgets=budgets,
        baselines=tuple(dict.fromkeys(args.baseline)),
        limit=args.limit,
        progress=not args.no_progress,
        qa=qa,
        qa_budget=args.qa_budget,
        embed_cache=Path(args.embed_cache) if args.embed_cache else None,
        alphas=_parse_alphas(args.alphas),
        ablations=tuple(ablations(config).items()) if args.ablate else (),
        database=args.db,
        cascade_cuts=_parse_cuts(args.cascade_cuts),
        ranking_depth=max(0, args.keep_ranking),
    )
    out_dir = Path(args.out) if args.out else default_out_dir(args.bench, config_name)
    started = time.perf_counter()
    output = anyio.run(run_benchmark, benchmark, config, options)
    elapsed = time.perf_counter() - started
    data: dict[str, Any] = {
        "bench": benchmark.name,
        "data": str(args.path),
        "command": command_line(argv, config_name),
        "created": now_iso(),
        "elapsed_s": round(elapsed, 1),
        "config_name": Path(config_name).stem if config_name else "default",
        "config": config_snapshot(config),
        "tokenizer": get_token_counter(config.truncation.tokenizer).name,
        "budget_unit": "tokens",
        "budgets": list(budgets),
        "primary_budget": main_budget,
        "baselines": list(options.baselines),
        "limit": args.limit,
        "categories": categories or None,
        "machine": machine_info(),
        "rankers_used": output.rankers,
        "warnings": output.warnings,
        "qa_settings": None
        if qa is None
        else {
            "answer_model": qa.answer_model,
            "judge_model": qa.judge_model,
            "base_url": args.base_url,
            "budget": args.qa_budget or main_budget,
        },
        "haystacks": output.haystacks,
        "summary": summarize(output.outcomes, budgets, benchmark.category_order),
        "split": benchmark.split,
        "halves": summarize_halves(output.outcomes, budgets, benchmark.category_order),
        "data_counts": benchmark.counts,
        "questions": output.outcomes,
    }
    write_results(out_dir, data)
    if options.ranking_depth:
        write_rankings(out_dir, output.rankings)
    summary_path = write_summary(out_dir, data, plots=not args.no_plots)
    print(summary_path.read_text(encoding="utf-8"))
    print(f"results: {out_dir}", file=sys.stderr)
    return 0


def _cmd_ui(
    args: argparse.Namespace, config: Config, config_name: str | None, argv: list[str]
) -> int:
    from smartsearch_mcp.bench.results import (
        default_out_dir,
    )
    from smartsearch_mcp.bench.ui import UiBenchOptions, format_report, run_ui_bench

    options = UiBenchOptions(
        turns=args.turns,
        repeats=args.repeats,
        seed=args.seed,
        db_path=Path(args.keep_db) if args.keep_db else None,
    )
    out_dir = Path(args.out) if args.out else default_out_dir("ui", config_name)
    with tempfile.TemporaryDirectory() as workdir:
        measured = run_ui_bench(config, options, Path(workdir))
    return _report_measured("ui", measured, format_report, out_dir, argv, config, config_name)


def _cmd_small(
    args: argparse.Namespace, config: Config, config_name: str | None, argv: list[str]
) -> int:
    from dataclasses import asdict

    from smartsearch_mcp.bench.results import default_out_dir, now_iso, write_results
    from smartsearch_mcp.bench.small import format_small, load_memories, run_small, summarize_small

    memories = load_memories(args.path)
    started = time.perf_counter()
    outcomes = anyio.run(run_small, config, memories)
    summary = summarize_small(outcomes)
    name = Path(config_name).stem if config_name else "default"
    report = format_small(summary, outcomes, name)
    out_dir = Path(args.out) if args.out else default_out_dir("small", config_name)
    write_results(
        out_dir,
        {
            "bench": "small",
            "command": command_line(argv, config_name),
            "created": now_iso(),
            "elapsed_s": round(time.perf_counter() - started, 1),
            "config_name": name,
            "summary": summary,
            "questions": [asdict(o) for o in outcomes],
        },
    )
    (out_dir / "summary.md").write_text(report, encoding="utf-8")
    print(report)
    print(f"results: {out_dir}", file=sys.stderr)
    return 0


def _cmd_agent(
    args: argparse.Namespace, config: Config, config_name: str | None, argv: list[str]
) -> int:
    from dataclasses import asdict

    from smartsearch_mcp.bench import agent
    from smartsearch_mcp.bench.results import default_out_dir, now_iso, write_results

    memories = agent.load_memories(args.path)
    problems = agent.check_memories(memories)
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        raise InputError(f"{len(problems)} label problem(s) in the agent memories; see above")
    if args.check:
        questions = sum(len(m.get("questions", [])) for m in memories)
        print(f"{len(memories)} memories, {questions} questions: every label holds")
        return 0
    started = time.perf_counter()
    name = Path(config_name).stem if config_name else "default"
    runs = {"as configured": config}
    if args.ablate:
        runs.update(agent.ablations(config))
    results: dict[str, Any] = {}
    report = ""
    for label, run_config in runs.items():
        outcomes = anyio.run(agent.run_agent, run_config, memories)
        summary = agent.summarize_agent(outcomes)
        results[label] = {"summary": summary, "questions": [asdict(o) for o in outcomes]}
        if not report:
            report = agent.format_agent(summary, outcomes, name)
        print(f"{label}: done", file=sys.stderr)
    if args.ablate:
        report += "\n" + agent.format_ablation({k: v["summary"] for k, v in results.items()})
    out_dir = Path(args.out) if args.out else default_out_dir("agent", config_name)
    write_results(
        out_dir,
        {
            "bench": "agent",
            "command": command_line(argv, config_name),
            "created": now_iso(),
            "elapsed_s": round(time.perf_counter() - started, 1),
            "config_name": name,
            "runs": results,
        },
    )
    (out_dir / "summary.md").write_text(report, encoding="utf-8")
    print(report)
    print(f"results: {out_dir}", file=sys.stderr)
    return 0


def _cmd_inject(
    args: argparse.Namespace, config: Config, config_name: str | None, argv: list[str]
) -> int:
    from smartsearch_mcp.bench.inject import format_inject, run_inject
    from smartsearch_mcp.bench.results import default_out_dir, now_iso, write_results

    started = time.perf_counter()
    results = run_inject(config, config_name, args.prompts, max(0, args.runs))
    name = Path(config_name).stem if config_name else "default"
    command = command_line(argv, config_name)
    report = format_inject(results, name, command)
    out_dir = Path(args.out) if args.out else default_out_dir("inject", config_name)
    write_results(
        out_dir,
        {
            "bench": "inject",
            "command": command,
            "created": now_iso(),
            "elapsed_s": round(time.perf_counter() - started, 1),
            "config_name": name,
            **results,
        },
    )
    (out_dir / "summary.md").write_text(report, encoding="utf-8")
    print(report)
    print(f"results: {out_dir}", file=sys.stderr)
    return 0


def _cmd_cold_recall(
    args: argparse.Namespace, config: Config, config_name: str | None, argv: list[str]
) -> int:
    from smartsearch_mcp.bench.cold_recall import (
        build_memory,
        format_cold,
        summarize,
        time_cold_recalls,
    )
    from smartsearch_mcp.bench.results import default_out_dir, now_iso, write_results

    name = Path(config_name).stem if config_name else "default"
    with tempfile.TemporaryDirectory(prefix="smartsearch-cold-") as tmp:
        db = Path(tmp) / "memory.db"
        question, turns = anyio.run(build_memory, config, db)
        runs = time_cold_recalls(config_name, db, question, args.runs, Path(tmp) / "onnx")
    summary = summarize(runs, turns, question)
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    report = format_cold(summary, name, load)
    out_dir = Path(args.out) if args.out else default_out_dir("cold-recall", config_name)
    write_results(
        out_dir,
        {
            "bench": "cold-recall",
            "command": command_line(argv, config_name),
            "created": now_iso(),
            "config_name": name,
            "load_average": load,
            "summary": summary,
        },
    )
    (out_dir / "summary.md").write_text(report, encoding="utf-8")
    print(report)
    print(f"results: {out_dir}", file=sys.stderr)
    return 0


def _cmd_scale(
    args: argparse.Namespace, config: Config, config_name: str | None, argv: list[str]
) -> int:
    from smartsearch_mcp.bench.report import write_summary
    from smartsearch_mcp.bench.results import (
        config_snapshot,
        default_out_dir,
        machine_info,
        now_iso,
        write_results,
    )
    from smartsearch_mcp.bench.scale import (
        FIRST_NAMES,
        LAST_NAMES,
        SPAN_YEARS,
        ScaleOptions,
        load_source_corpus,
        run_scale,
    )

    corpus = load_source_corpus(_recombined_sources(args, "scale"))
    modes = tuple(_split(args.modes))
    options = ScaleOptions(
        turns=args.turns,
        modes=modes,
        checkpoints=tuple(_parse_budgets(args.checkpoints)) if args.checkpoints else None,
        batch_size=args.batch_size,
        queries=args.queries,
        seed=args.seed,
        max_tokens=args.max_tokens or config.truncation.max_tokens,
        embed_sample=max(0, args.embed_sample),
        progress=not args.no_progress,
        db_path=args.keep_db or None,
    )
    out_dir = Path(args.out) if args.out else default_out_dir("scale", config_name)
    started = time.perf_counter()
    output = anyio.run(run_scale, config, options, corpus)
    elapsed = time.perf_counter() - started
    throughput = output.stored / output.remember_s if output.remember_s else 0.0
    data: dict[str, Any] = {
        "bench": "scale",
        "command": command_line(argv, config_name),
        "created": now_iso(),
        "elapsed_s": round(elapsed, 1),
        "config_name": Path(config_name).stem if config_name else "default",
        "config": config_snapshot(config),
        "machine": machine_info(),
        "seed": options.seed,
        "turns": args.turns,
        "stored": output.stored,
        "duplicates_skipped": output.duplicates,
        "batch_size": options.batch_size,
        "queries": options.queries,
        "max_tokens": options.max_tokens,
        "modes": list(modes),
        "corpus": {
            "sources": corpus.sources,
            "source_turns": len(corpus.texts),
            "mean_words": round(sum(len(t.split()) for t in corpus.texts) / len(corpus.texts), 1),
            "names": len(FIRST_NAMES) * len(LAST_NAMES),
            "years": SPAN_YEARS,
        },
        "remember_s": output.remember_s,
        "generate_s": output.generate_s,
        "remember_turns_per_s": throughput,
        "remember_words_per_s": output.words / output.remember_s if output.remember_s else 0.0,
        "mean_words_per_turn": output.words / args.turns,
        "embedding": output.embedding,
        "checkpoints": output.checkpoints,
        "skipped": output.skipped,
    }
    data["targets"] = scale_targets(data)
    write_results(out_dir, data)
    summary_path = write_summary(out_dir, data, plots=not args.no_plots)
    print(summary_path.read_text(encoding="utf-8"))
    print(f"results: {out_dir}", file=sys.stderr)
    return 0


def _cmd_loop_lag(
    args: argparse.Namespace, config: Config, config_name: str | None, argv: list[str]
) -> int:
    from smartsearch_mcp.bench.loop_lag import LoopLagOptions, format_report, run_loop_lag
    from smartsearch_mcp.bench.results import (
        default_out_dir,
    )
    from smartsearch_mcp.bench.scale import load_source_corpus

    corpus = load_source_corpus(_recombined_sources(args, "loop-lag"))
    options = LoopLagOptions(
        turns=args.turns,
        recalls=args.recalls,
        seed=args.seed,
        max_tokens=args.max_tokens or config.truncation.max_tokens,
        progress=not args.no_progress,
        config_name=config_name,
        db_path=Path(args.keep_db) if args.keep_db else None,
    )
    out_dir = Path(args.out) if args.out else default_out_dir("loop-lag", config_name)
    measured = anyio.run(run_loop_lag, config, options, corpus)
    return _report_measured("loop-lag", measured, format_report, out_dir, argv, config, config_name)


def _report_measured(
    bench: str,
    measured: dict[str, Any],
    format_report: Callable[[dict[str, Any]], str],
    out_dir: Path,
    argv: list[str],
    config: Config,
    config_name: str | None,
) -> int:
    """Write a bench's results (what it measured, with the command, config and machine) and
    its report to `out_dir`, and print the report; the exit code."""
    from smartsearch_mcp.bench.results import (
        config_snapshot,
        machine_info,
        now_iso,
        write_results,
    )

    data: dict[str, Any] = {
        "bench": bench,
        "command": command_line(argv, config_name),
        "created": now_iso(),
        "config_name": Path(config_name).stem if config_name else "default",
        "config": config_snapshot(config),
        "machine": machine_info(),
        **measured,
    }
    write_results(out_dir, data)
    report = format_report(data)
    (out_dir / "summary.md").write_text(report + "\n", encoding="utf-8")
    print(report)
    print(f"results: {out_dir}", file=sys.stderr)
    return 0


def command_line(argv: Sequence[str], config_name: str | None) -> str:
    """The command that reproduces a run (naming the config even when it was given before
    `bench` or through $SMARTSEARCH_CONFIG)."""
    args = [portable_path(arg) for arg in argv]
    if config_name and "--config" not in args:
        args[1:1] = ["--config", portable_path(config_name)]
    return "smartsearch-mcp bench " + " ".join(map(_quoted, args))


def _quoted(arg: str) -> str:
    home, _, rest = arg.partition("/")
    return arg if home == "~" and shlex.quote(rest) == rest else shlex.quote(arg)


def portable_path(arg: str) -> str:
    """`arg` as a report may show it: an absolute path inside the working directory made
    relative to it, one in the home directory written from ~ (no machine's paths in
    reports that go into docs/)."""
    if not os.path.isabs(arg):
        return arg
    for base, shown in ((os.getcwd(), "."), (os.path.expanduser("~"), "~")):
        relative = os.path.relpath(arg, base)
        if base != os.sep and not relative.startswith(os.pardir):
            return relative if shown == "." else os.path.join(shown, relative)
    parent = os.path.relpath(arg, os.path.dirname(os.getcwd()))
    return os.path.join(os.pardir, parent) if not parent.startswith(os.pardir) else arg


def scale_targets(data: dict[str, Any]) -> list[str]:
    """The issue's targets, each marked met / missed / not measured."""
    targets = []
    rate = data["remember_turns_per_s"]
    words = data.get("mean_words_per_turn")
    length = f" of {words:,.0f} words on average" if words else ""
    targets.append(
        f"bulk remember ≥ 5,000 turns/s: {rate:,.0f} turns/s{length} — {_verdict(rate >= 5000)}"
    )
    at_million = [p for p in data["checkpoints"] if p["turns"] >= 1_000_000]
    if at_million and "indexed" in at_million[0]["recall"]:
        p50 = at_million[0]["recall"]["indexed"]["p50"]
        targets.append(
            f"indexed recall p50 ≤ 1 s at 1M turns: {p50:,.0f} ms — {_verdict(p50 <= 1000)}"
        )
    else:
        targets.append("indexed recall p50 ≤ 1 s at 1M turns: not measured in this run")
    peak = max((p["peak_rss_mb"] for p in data["checkpoints"]), default=0.0)
    targets.append(f"peak RSS ≤ 1.5 GB: {peak:,.0f} MB — {_verdict(peak <= 1536)}")
    return targets


def _verdict(ok: bool) -> str:
    return "**met**" if ok else "**missed**"


def _recombined_sources(args: argparse.Namespace, bench: str) -> list[str]:
    """The data a bench that recombines real turns reads: --data, else $SMARTSEARCH_BENCH_DATA;
    an InputError saying so when neither is given."""
    sources = args.data or ([os.environ[DATA_ENV]] if os.environ.get(DATA_ENV) else [])
    if not sources:
        raise InputError(
            f"the {bench} bench recombines real turns: give --data PATH (a LoCoMo folder, a "
            f"BEAM split, or a folder holding both) or set ${DATA_ENV}"
        )
    return list(sources)


def _cmd_rankers(
    args: argparse.Namespace, config: Config, config_name: str | None, argv: list[str]
) -> int:
    from smartsearch_mcp.bench import rankers

    # The rankers to time are the paper's (the default preset) unless a config is named.
    return rankers.main(args, config if config_name else Config.load("default"))


def _cmd_report(
    args: argparse.Namespace, config: Config, config_name: str | None, argv: list[str]
) -> int:
    from smartsearch_mcp.bench.report import render_report, write_summary
    from smartsearch_mcp.bench.results import load_results

    results = []
    for folder in args.folders:
        data = load_results(folder)
        path = Path(folder)
        write_summary(path if path.is_dir() else path.parent, data, plots=not args.no_plots)
        results.append(data)
    markdown = render_report(results)
    if args.output:
        Path(args.output).write_text(markdown, encoding="utf-8")
    print(markdown)
    return 0


def _cmd_compare(
    args: argparse.Namespace, config: Config, config_name: str | None, argv: list[str]
) -> int:
    from smartsearch_mcp.bench.compare import compare_runs, format_comparison
    from smartsearch_mcp.bench.results import load_results

    before, after = load_results(args.before), load_results(args.after)
    differences = compare_runs(before, after, args.system, args.half, args.samples, args.seed)
    print(format_comparison(differences, args.before, args.after, args.half, args.samples))
    return 0


# ---------------------------------------------------------------------- parsing helpers


def _only_half(benchmark: Any, half: str) -> Any:
    """`benchmark` with only the haystacks of `half`, or an error naming the halves it has."""
    from dataclasses import replace

    halves = sorted({h.half for h in benchmark.haystacks if h.half is not None})
    if half not in halves:
        named = ", ".join(halves) if halves else "none"
        raise InputError(f"--half {half}: {benchmark.name} has no such half (halves: {named})")
    return replace(benchmark, haystacks=[h for h in benchmark.haystacks if h.half == half])


def _qa_evaluator(args: argparse.Namespace) -> Any:
    from smartsearch_mcp.bench.qa import ChatClient, QAEvaluator

    if not (args.answer_model or args.judge_model or args.base_url):
        return None
    if not args.answer_model or not args.base_url:
        raise InputError(
            "QA accuracy needs --answer-model and --base-url (and optionally --judge-model)"
        )
    api_key = os.environ.get(args.api_key_env)
    if not api_key:
        log.warning(
            "$%s is not set; calling %s without an API key", args.api_key_env, args.base_url
        )
    return QAEvaluator(
        ChatClient(args.base_url, api_key),
        answer_model=args.answer_model,
        judge_model=args.judge_model or args.answer_model,
    )


def _split(value: str | None) -> list[str]:
    return [part.strip() for part in (value or "").split(",") if part.strip()]


def _parse_alphas(value: str) -> tuple[float, ...]:
    try:
        alphas = sorted({float(part) for part in _split(value)})
    except ValueError as exc:
        raise InputError(f"alphas must be comma-separated numbers, got {value!r}") from exc
    if any(not 0 <= a <= 1 for a in alphas):
        raise InputError(f"alphas must be within 0..1, got {value!r}")
    return tuple(alphas)


def _parse_cuts(value: str) -> tuple[int, ...]:
    cuts = []
    for part in _split(value):
        try:
            cuts.append(_positive_int(part))
        except argparse.ArgumentTypeError:
            raise InputError(
                f"--cascade-cuts: {part!r} is not a positive whole number; give cuts such as "
                "30,60,100"
            ) from None
    return tuple(sorted(set(cuts)))


def _parse_budgets(value: str) -> tuple[int, ...]:
    try:
        budgets = sorted({int(part) for part in _split(value)})
    except ValueError as exc:
        raise InputError(f"budgets must be comma-separated integers, got {value!r}") from exc
    if not budgets or budgets[0] < 1:
        raise InputError(f"budgets must be positive integers, got {value!r}")
    return tuple(budgets)


def _parse_locomo_categories(values: Sequence[str]) -> tuple[int, ...]:
    try:
        numbers = tuple(sorted({int(v) for v in values}))
    except ValueError as exc:
        raise InputError(f"LoCoMo --categories are numbers 1-5, got {values!r}") from exc
    if any(n not in range(1, 6) for n in numbers):
        raise InputError(f"LoCoMo --categories are numbers 1-5, got {values!r}")
    return numbers


def _positive_int(value: str) -> int:
    try:
        number = int(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value!r}") from exc
    if number < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value!r}")
    return number
