"""``python -m satfuse``: demo, optimize/explain a program, check rule packs."""

from __future__ import annotations

import argparse
import runpy
import sys
from pathlib import Path
from typing import Sequence


def _load_program(path: str):
    """A FILE is either a printed Trace (``def computation(x: "f32[8, 16]"): ...``) or a
    Python file defining ``program`` and ``example_inputs()``."""
    from satfuse.engine import parse_trace

    text = Path(path).read_text()
    if "import" not in text and "def " in text and '"' in text.split("def ", 1)[1].split(")", 1)[0]:
        return parse_trace(text), ()
    ns = runpy.run_path(path)
    if "program" not in ns or "example_inputs" not in ns:
        raise SystemExit(f"{path}: define `program` and `example_inputs()` (or give a printed trace)")
    return ns["program"], tuple(ns["example_inputs"]())


def _write_svg(dot_text: str, out: str) -> int:
    """Render to ``out``; where Graphviz is missing, write the DOT text beside it and say why."""
    from satfuse.lowering.dot import render

    try:
        Path(out).write_bytes(render(dot_text))
    except RuntimeError as e:
        Path(out).with_suffix(".dot").write_text(dot_text)
        print(f"error: {e}; wrote {Path(out).with_suffix('.dot')} instead", file=sys.stderr)
        return 1
    print(f"wrote {out}", file=sys.stderr)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:2] == ["rules", "check"]:  # its own parser: options and paths pass through untouched
        from satfuse.rewrites.cli import main_rules_check

        return main_rules_check(argv[2:])
    p = argparse.ArgumentParser(prog="python -m satfuse", description=__doc__)
    sub = p.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("demo", help="optimize seed 002's cross-entropy and print the plan")
    d.add_argument("--n", type=int, default=512, help="rows (default 512)")
    d.add_argument("--c", type=int, default=32768, help="classes (default 32768)")
    for name, what in (("optimize", "print the optimized plan"), ("explain", "print the plan's segment/rule table")):
        o = sub.add_parser(name, help=f"{what} of FILE")
        o.add_argument("file", help="a printed trace, or a .py file with `program` and `example_inputs()`")
        o.add_argument("--target", default="nvfuser", choices=["nvfuser", "eager"], help="cost model (default nvfuser)")
        o.add_argument("--rules", action="append", default=[], help="extra rule file or folder (repeatable)")
        o.add_argument("--extractor", default="hybrid", choices=["greedy-dag", "hybrid", "ilp"], help="extraction method")
        o.add_argument("--dynamic", action="store_true", help="make every input extent symbolic")
        o.add_argument("--svg", metavar="OUT", help="also draw the plan (segments, fallbacks, write-backs, bytes) "
                                                    "as SVG with Graphviz's dot")
    r = sub.add_parser("rules", help="rule-pack tools")
    rsub = r.add_subparsers(dest="rcmd", required=True)
    rsub.add_parser("check", help="parse, type-check, coverage and soundness of rule packs (see `rules check -h`)")
    rsub.add_parser("list", help="list the rules in the built-in packs")
    args = p.parse_args(argv)

    if args.cmd == "demo":
        from satfuse.demo import main as demo

        return demo(args.n, args.c)
    if args.cmd in ("optimize", "explain"):
        import satfuse

        prog, inputs = _load_program(args.file)
        plan = satfuse.optimize(prog, *inputs, options={"target": args.target, "rules": args.rules,
                                                         "extractor": args.extractor, "dynamic": args.dynamic})
        print(plan if args.cmd == "optimize" else plan.explain())
        if args.svg:
            return _write_svg(plan.to_dot(title=f"{Path(args.file).name}: the plan"), args.svg)
        return 0
    if args.cmd == "rules" and args.rcmd == "list":
        from satfuse.rewrites import builtin_catalogue

        for rule in builtin_catalogue().rules:
            print(f"{rule.name:<40} {rule.ruleset:<14} {rule.where}")
        return 0
    raise AssertionError(f"unhandled command {args}")


if __name__ == "__main__":
    sys.exit(main())
