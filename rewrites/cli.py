"""``python -m satfuse rules check [PATHS]``: load rule packs, then measure coverage and
soundness over the corpus, print a table and exit nonzero on problems.

Exit status: 0 all rules fired and none is unsound; 1 a dead or unsound rule, or a corpus
program failed; 2 the rule files themselves do not load (parse, validation or type
errors, reported as ``path:line: rule NAME: message``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Sequence

from satfuse.engine.session import RuleError

from .coverage import check_rules
from .report import CoverageReport


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m satfuse rules check",
        description="Parse, validate and type-check rule packs, then report which rules fire on the corpus, "
                    "which never fire (dead), which are unsound (with a counterexample) and the guards each adds.")
    p.add_argument("paths", nargs="*", help="rule files (.egg) or folders of them, added to the built-in packs")
    p.add_argument("--corpus", action="append", default=[], metavar="PATH",
                   help="extra corpus: a .py file defining CASES (or `program` and `example_inputs()`), or a folder "
                        "of such files (repeatable)")
    p.add_argument("--no-builtin-corpus", action="store_true", help="do not use tests/corpus")
    p.add_argument("--no-builtin-rules", action="store_true", help="load only PATHS (plus lang.egg)")
    p.add_argument("--only", action="store_true", help="report only the rules from PATHS (built-in rules still run)")
    p.add_argument("--no-soundness", action="store_true", help="coverage only: skip the differential tests")
    p.add_argument("--examples", type=int, default=20, metavar="N",
                   help="random inputs per (rule, program) in the differential test (default 20)")
    p.add_argument("--max-programs", type=int, default=3, metavar="K",
                   help="programs per rule in the differential test (default 3)")
    p.add_argument("--json", metavar="FILE", help="also write the report as JSON ('-' for stdout)")
    p.add_argument("--quiet", action="store_true", help="print only the summary and the problems, not the table")
    p.add_argument("--verbose", action="store_true",
                   help="log each program and each rule as it is checked (on stderr; always when stderr is a terminal)")
    return p


def run_rules_check(args: argparse.Namespace) -> tuple[int, CoverageReport | None]:
    try:
        report = check_rules(
            args.paths, corpus=args.corpus, builtin_corpus=not args.no_builtin_corpus,
            builtin_rules=not args.no_builtin_rules, only_paths=args.only, soundness=not args.no_soundness,
            examples=args.examples, max_programs=args.max_programs,
            log=(lambda m: print(m, file=sys.stderr)) if args.verbose or sys.stderr.isatty() else None)
    except RuleError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2, None
    text = report.table()
    if args.quiet:
        text = "\n".join(text.split("\n\n", 1)[-1:])
    if args.json != "-":  # `--json -`: stdout carries only the JSON
        print(text)
    if args.json:
        if args.json == "-":
            print(report.dumps())
        else:
            Path(args.json).write_text(report.dumps())
    return (0 if report.ok else 1), report


def main_rules_check(argv: Sequence[str] | None = None) -> int:
    """Entry for ``python -m satfuse rules check``; returns the exit status."""
    args = build_parser().parse_args(list(argv) if argv is not None else None)
    return run_rules_check(args)[0]


def why_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m satfuse rules why",
        description="Why a rule did (not) fire on a program: its nearest partial matches in the saturated e-graph, "
                    "which atoms matched which program values (by trace line), and the first atom or :when "
                    "condition that failed, with the value it saw.")
    p.add_argument("rule", help="the rule's name (pack/what-it-does)")
    p.add_argument("file", help="a .py file with `program` and `example_inputs()` (or a corpus file with CASES)")
    p.add_argument("--case", help="which program of a corpus file (default: the first)")
    p.add_argument("--rules", action="append", default=[], metavar="PATH", help="extra rule file or folder")
    p.add_argument("--dynamic", action="store_true", help="make every input extent symbolic")
    p.add_argument("--top", type=int, default=3, help="partial matches to show (default 3)")
    p.add_argument("--svg", metavar="OUT", help="draw the e-graph around the matches (Graphviz's dot)")
    p.add_argument("--limit", type=int, default=200, help="e-nodes in the picture at most (default 200)")
    return p


def main_rules_why(argv: Sequence[str] | None = None) -> int:
    """Entry for ``python -m satfuse rules why RULE FILE``."""
    from .corpus import load_corpus
    from .forcing import run_program
    from .forms import rule_form
    from .packs import load_catalogue
    from .why import why

    args = why_parser().parse_args(list(argv) if argv is not None else None)
    try:
        cat = load_catalogue(args.rules)
        progs = load_corpus([args.file], builtin=False)
    except RuleError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    info = cat.rule(args.rule)
    if info is None:
        print(f"error: no rule {args.rule!r} (see `python -m satfuse rules list`)", file=sys.stderr)
        return 2
    prog = next((p for p in progs if p.name == args.case), None) if args.case else progs[0]
    if prog is None:
        print(f"error: {args.file} has no program {args.case!r}", file=sys.stderr)
        return 2
    if args.dynamic:
        prog.dynamic = True
    texts = {s.path: s.text.splitlines() for s in cat.sources}
    run = run_program(prog, cat.sources, cat.phases)
    report = why(rule_form(info, texts[info.path]), run, run.facts)
    print(report.render(args.top))
    if args.svg:
        from satfuse.lowering.dot import render

        from .why_dot import why_dot

        dot_text = why_dot(report, args.limit, args.top)
        try:
            Path(args.svg).write_bytes(render(dot_text))
        except RuntimeError as e:
            Path(args.svg).with_suffix(".dot").write_text(dot_text)
            print(f"error: {e}; wrote {Path(args.svg).with_suffix('.dot')} instead", file=sys.stderr)
            return 1
        print(f"wrote {args.svg}", file=sys.stderr)
    return 0


def fired_table(matches: dict[str, int], catalogue: object | None = None) -> str:
    """One program's rule matches as a table (for ``explain``): rule, matches, pack file:line."""
    where = {}
    for r in getattr(catalogue, "rules", []):
        where[r.name] = r.where
    rows = [f"{'rule':<42} {'matches':>7}  where"]
    for k, v in sorted(matches.items()):
        if not v or k.startswith("lang/"):
            continue
        base = k[:-2] if k.endswith(("=>", "<=")) else k
        rows.append(f"{k:<42} {v:>7}  {where.get(base, '')}")
    return "\n".join(rows)


if __name__ == "__main__":
    sys.exit(main_rules_check())
