"""Rule coverage and soundness, measured over a corpus of programs.

For every rule of a catalogue this answers: did it fire on the corpus (from the per-rule
match counts of each program's ``SaturationReport``; a ``birewrite`` "p/x" reports
"p/x=>" and "p/x<="), how often and on which programs, which rules never fired (dead),
is it sound, and which guard obligations it attaches.

Soundness is a differential test with the rule *forced* into the plan. Each corpus
program is saturated once with every rule. For a rule R and a program where R fired,
the saturated e-graph is searched (here, in Python, over the serialized graph) for the
places where R applied: a match of R's left side whose e-class also holds R's right side
(or, for a right side that is a variable, the class that variable is bound to). The
extraction costs are then rewritten so that the plan must take R's right side there: R's
left-side nodes in those classes cost 1e12, R's right-side nodes cost 0, nodes that no
rule created keep their cost, and nodes other rules created cost 1e6 (so they are used
only where R's right side needs them). The plan is decoded and compared with the
original program on random inputs generated with hypothesis: symbolic extents at several
values (0 and 1 included when the program's guards allow), random values, and inf/NaN/-0
injected into float inputs; a failing example is shrunk and reported with shapes, values
and both results.

Helper rules that only derive relations (no union) have no right side to force; their
status is "facts" and they are checked through the rewrites that read them.

Guards: a rule states the obligations it relies on in a ``; guard: ...`` comment line
above it; rules without one report "none".
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from satfuse.engine.session import Budget, Source

from .corpus import Program, load_corpus
from .differential import _static_cex, differential
from .direct import judge
from .forcing import ProgramRun, coverage_sources, forced_plan, isolated_sources, run_program
from .forms import RuleForm, rule_form
from .packs import Catalogue
from .report import CoverageReport, RuleCoverage
from .why import why_dead


def coverage(cat: Catalogue, programs: Sequence[Program], *, soundness: bool = True, examples: int = 20,
             max_programs: int = 3, rules: Iterable[str] | None = None, budget: Budget | None = None,
             seed: int = 0, log: Callable[[str], None] | None = None, engine: Any = None) -> CoverageReport:
    """Fire counts, dead rules, soundness (forced differential tests) and guards for ``cat``'s rules.
    Programs are saturated by ``engine`` (a ``satfuse.Engine``; default: the default engine)."""
    t0 = time.perf_counter()
    sources = coverage_sources(cat)
    texts = {s.path: s.text.splitlines() for s in cat.sources}
    wanted = set(rules) if rules is not None else None
    forms = [rule_form(r, texts[r.path]) for r in cat.rules if wanted is None or r.name in wanted]
    runs: list[ProgramRun] = []
    errors: list[str] = []
    for prog in programs:
        run = run_program(prog, sources, cat.phases, budget, engine=engine)
        if log:
            log(f"  {prog.name}: {run.seconds * 1e3:.0f} ms, {run.nodes} nodes{' ' + run.error if run.error else ''}")
        if run.error:
            errors.append(f"program {prog.name}: {run.error}")
        runs.append(run)
    report = CoverageReport([], [], errors, soundness=soundness)
    for run in runs:
        report.programs.append({"name": run.program.name, "dynamic": bool(run.program.dynamic), "seconds": run.seconds,
                                "nodes": run.nodes, "stop": run.stop, "error": run.error,
                                "extent_conflicts": run.conflicts})
    for f in forms:
        info = f.info
        rc = RuleCoverage(info.name, info.pack, info.ruleset, info.where, info.kind, f.doc, f.guards)
        for run in runs:
            n = sum(v for k, v in run.matches.items() if k == info.name or k in (info.name + "=>", info.name + "<="))
            if n:
                rc.programs[run.program.name] = n
                rc.fires += n
        report.rules.append(rc)
        if rc.dead:
            rc.status = "dead"
            rc.why = why_dead(f, runs)
            continue
        if not f.directions:
            rc.status, rc.detail = "facts", f.note
            continue
        if not soundness:
            rc.status, rc.detail = "not checked", ""
            continue
        _check_rule(rc, f, runs, examples, max_programs, seed, cat, sources, budget, engine)
        if log:
            log(f"  {rc.name}: {rc.status} {rc.detail}")
    report.seconds = time.perf_counter() - t0
    return report


def _check_rule(rc: RuleCoverage, f: RuleForm, runs: list[ProgramRun], examples: int, max_programs: int,
                seed: int, cat: Catalogue, sources: Sequence[Source], budget: Budget | None, engine: Any) -> None:
    """Judge ``f`` on its own at its matches (both sides on the same operands), then force it
    into plans of (up to ``max_programs``) programs where it fired and test them.

    Forcing is first in an e-graph saturated with this rule alone (plus the analysis), so
    nothing else can be blamed; where the rule needs other rules' results to match, in the
    full e-graph."""
    notes: list[str] = []
    direct = judge(f, [r for r in runs if r.view is not None], examples, seed)
    rc.direct_matches, rc.direct_cases = direct.matches, direct.cases
    if direct.counterexample is not None:
        rc.status = "unsound"
        rc.detail = f"the two sides differ: {direct.counterexample.problem}"
        rc.counterexample = direct.counterexample
        return
    iso_sources = isolated_sources(sources, cat, f.info)
    for suffix, lhs, rhs in f.directions:
        key = f.name + suffix
        fired = [r for r in runs if r.view is not None and r.matches.get(key)]
        fired.sort(key=lambda r: (bool(r.conflicts), -r.matches.get(key, 0)))
        tried = 0
        for run in fired:
            if tried >= max_programs:
                break
            iso = run_program(run.program, iso_sources, [f.info.ruleset], budget, like=run, engine=engine)
            plan, why = (forced_plan(iso, lhs, rhs) if iso.view is not None and iso.matches.get(key)
                         else (None, "does not fire alone"))
            target, how = iso, "alone"
            if plan is None:
                plan, why2 = forced_plan(run, lhs, rhs, route=True)
                target, how = run, "with all rules"
                why = f"{why}; {why2}" if plan is None else why2
            if plan is None:
                notes.append(f"{run.program.name}{suffix}: {why}")
                continue
            tried += 1
            rc.checked.append(f"{run.program.name}{suffix} ({how})")
            if why:  # the right side does not even make a valid program here
                rc.status = "unsound"
                rc.detail = f"the rewritten program is ill-typed on {run.program.name} ({how}): {why}"
                rc.counterexample = _static_cex(target, suffix, why)
                return
            cex = differential(target, plan, examples, seed, suffix)
            rc.examples = examples
            if cex is not None:
                rc.status = "unsound"
                rc.detail = f"differs from the original program on {cex.program} ({how}): {cex.problem}"
                rc.counterexample = cex
                return
    if rc.checked or rc.direct_cases:
        rc.status, rc.detail = "sound", "" if rc.checked else "; ".join(notes[:3])
    else:
        rc.status, rc.detail = "not forced", "; ".join(notes[:3])


def check_rules(paths: Sequence[str | Path] = (), *, corpus: Sequence[str | Path] = (), builtin_corpus: bool = True,
                builtin_rules: bool = True, only_paths: bool = False, soundness: bool = True, examples: int = 20,
                max_programs: int = 3, budget: Budget | None = None, log: Callable[[str], None] | None = None
                ) -> CoverageReport:
    """Load rule packs (built-in plus ``paths``), then measure coverage and soundness over the
    corpus. Loading errors (parse, validation, type errors) raise ``RuleError`` with file:line.
    ``only_paths``: report only the rules from ``paths`` (the built-in ones still run)."""
    from .packs import load_catalogue

    cat = load_catalogue(list(paths), include_builtin=builtin_rules)
    programs = load_corpus(corpus, builtin=builtin_corpus)
    rules = None
    if only_paths:
        user = {str(Path(p).resolve()) for p in paths}
        rules = [r.name for r in cat.rules if any(str(Path(r.path).resolve()).startswith(u) for u in user)]
    return coverage(cat, programs, soundness=soundness, examples=examples, max_programs=max_programs, rules=rules,
                    budget=budget, log=log)
