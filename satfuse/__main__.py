"""``python -m satfuse``: demo, optimize/explain a program, check rule packs.

Exit codes: 0 success; 1 a check failed (``rules check``: a rule is unsound, dead or malformed);
2 a usage mistake (a missing file, a malformed trace or rule pack, a program that cannot be
captured), reported as one line ``FILE:LINE: what is wrong``; 3 an internal error of satfuse (a
traceback: please report it). ``--debug`` (before the command) shows the traceback of any error.
"""

from __future__ import annotations

import argparse
import runpy
import sys
from pathlib import Path
from typing import Sequence


class UserMistake(Exception):
    """A mistake in what the user gave us: printed as one ``FILE:LINE: message`` line, exit 2."""


def _load_program(path: str):
    """A FILE is either a printed Trace (``def computation(x: "f32[8, 16]"): ...``) or a
    Python file defining ``program`` and ``example_inputs()``. A trace is validated fully
    (``parse_trace``) before anything is optimized."""
    from satfuse.engine import IRError, parse_trace

    try:
        text = Path(path).read_text()
    except OSError as e:
        raise UserMistake(f"{path}: cannot read: {e.strerror or e}") from None
    if "import" not in text and "def " in text and '"' in text.split("def ", 1)[1].split(")", 1)[0]:
        try:
            return parse_trace(text), ()
        except IRError as e:
            msg = str(e)
            if msg.startswith("line "):
                line, _, rest = msg[5:].partition(": ")
                raise UserMistake(f"{path}:{line}: {rest}") from None
            raise UserMistake(f"{path}: {msg}") from None
    try:
        ns = runpy.run_path(path)
        if "program" not in ns or "example_inputs" not in ns:
            raise UserMistake(f"{path}:1: define `program` and `example_inputs()` (or give a printed trace)")
        return ns["program"], tuple(ns["example_inputs"]())
    except UserMistake:
        raise
    except SyntaxError as e:
        raise UserMistake(f"{path}:{e.lineno}: {type(e).__name__}: {e.msg}") from None
    except Exception as e:  # noqa: BLE001 - the user's program raised: point at its line
        raise UserMistake(f"{_where(e, path)}: {type(e).__name__}: {e}") from None


def _where(e: BaseException, path: str) -> str:
    """``path:line`` of the deepest frame of ``e``'s traceback in ``path`` (else ``path``)."""
    line = None
    tb = e.__traceback__
    target = str(Path(path).resolve())
    while tb is not None:
        if str(Path(tb.tb_frame.f_code.co_filename).resolve()) == target:
            line = tb.tb_lineno
        tb = tb.tb_next
    return f"{path}:{line}" if line is not None else path


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
    """Run one command; user mistakes are one line on stderr and exit 2 (module docstring)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv[:1]
    if debug:
        argv = argv[1:]
    try:
        return _main(argv)
    except UserMistake as e:
        if debug:
            _traceback_exit(e)
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except Exception as e:  # noqa: BLE001 - sorted into user mistakes and satfuse bugs below
        from satfuse import ERRORS

        user = tuple(getattr(__import__("satfuse"), n) for n in ERRORS if n not in ("SegmentError", "BackendError"))
        if not isinstance(e, user):
            print("satfuse: internal error (please report it with the command that caused it):", file=sys.stderr)
            return _traceback_exit(e)
        if debug:
            _traceback_exit(e)
        first, *rest = str(e).splitlines() or [""]
        print(f"error: {type(e).__name__}: {first}", file=sys.stderr)
        for line in rest[:20]:
            print(f"  {line}", file=sys.stderr)
        return 2


def _traceback_exit(e: BaseException) -> int:
    import traceback

    traceback.print_exception(e)
    return 3


def _main(argv: list[str]) -> int:
    if argv[:2] == ["rules", "check"]:  # its own parser: options and paths pass through untouched
        from satfuse.rewrites.cli import main_rules_check

        return main_rules_check(argv[2:])
    if argv[:2] == ["rules", "why"]:
        from satfuse.rewrites.cli import main_rules_why

        return main_rules_why(argv[2:])
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
    rsub.add_parser("why", help="why a rule did (not) fire on a program: nearest partial matches (see `rules why -h`)")
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
