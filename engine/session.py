"""The egglog session: load .egg sources, add a program's terms, saturate phase by
phase under a budget, and serialize for extraction.

egglog 13.2 has no node or time limit of its own, so each phase is stepped one
iteration at a time from here and the budget is checked in between; hitting a limit
is normal and reported as a typed ``StopReason``. Every egglog failure (including Rust
panics, which are ``BaseException``s) becomes a ``RuleError`` naming file, line and rule.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import tempfile
import time
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

os.environ.setdefault("RUST_BACKTRACE", "0")

from .bindings import bindings  # noqa: E402
from .loader import LOADER_PATH, LOADER_TEXT, tables, tsv  # noqa: E402
from .schema import VALUE_HANDLE, rules_path  # noqa: E402
from .sexp import SexpError, top_level_forms  # noqa: E402
from .terms import encode  # noqa: E402


class RuleError(ValueError):
    """A problem in a rule pack or in running it: leads with ``file:line``."""


@dataclass(frozen=True)
class Source:
    """One .egg text with the path it came from (for error locations)."""

    path: str
    text: str


@dataclass
class Budget:
    """Limits for one saturation. Per phase: ``iterations``; overall: ``nodes`` and ``seconds``.

    ``nodes`` is a floor: the e-graph may also grow to ``growth`` times the size it had once the
    program was loaded and analysed, so a 10k-op program still has room for every phase to run
    (a fixed limit was used up by the program itself). :meth:`node_limit` is the bound in force.

    ``match_limit``/``ban_length`` configure egglog's back-off scheduler, which throttles
    explosive rules (associativity, commutativity) instead of letting them run away.
    """

    iterations: int = 12
    nodes: int = 100_000
    growth: float = 4.0
    seconds: float = 10.0
    match_limit: int = 2_000
    ban_length: int = 4
    #: analysis iterations between phase steps: shape facts of a rank-r term need about r;
    #: a cap (rather than saturate) keeps a pathological analysis from running away
    analysis_iterations: int = 80

    def node_limit(self, loaded: int) -> int:
        """The e-node bound for a program whose e-graph had ``loaded`` e-nodes before any phase."""
        return max(self.nodes, int(self.growth * loaded))


@dataclass(frozen=True)
class StopReason:
    kind: str  # saturated | iterations | nodes | time | conflict | skipped (a budget stop came first)
    limit: Any = None

    def __str__(self) -> str:
        return self.kind if self.limit is None else f"{self.kind} (limit {self.limit})"


@dataclass
class PhaseReport:
    phase: str
    iterations: int = 0
    stop: StopReason = StopReason("saturated")
    matches: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    nodes: int = 0
    throttled: bool = False  # some steps ran under the back-off scheduler
    #: rules the back-off scheduler banned in the last slice (each matched more than its limit)
    banned: list[str] = field(default_factory=list)


@dataclass
class SaturationReport:
    phases: list[PhaseReport] = field(default_factory=list)
    seconds: float = 0.0
    nodes: int = 0
    #: matches of the analysis passes run before the first and after the last phase
    analysis: dict[str, int] = field(default_factory=dict)

    @property
    def matches(self) -> dict[str, int]:
        out: dict[str, int] = dict(self.analysis)
        for p in self.phases:
            for k, v in p.matches.items():
                out[k] = out.get(k, 0) + v
        return out

    #: analysis conflicts found (a rule equated values of different shapes or dtypes): relation -> rows
    conflicts: dict[str, int] = field(default_factory=dict)
    #: the rules that matched in the phase iterations just before a conflict appeared (most recent first)
    suspects: list[str] = field(default_factory=list)
    #: the e-node bound in force (``Budget.node_limit`` of the loaded program)
    node_limit: int = 0

    @property
    def hit_limit(self) -> list[str]:
        return [f"{p.phase}: {p.stop}" + (f" (banned: {', '.join(p.banned)})" if p.banned else "")
                for p in self.phases if p.stop.kind != "saturated"]

    def table(self) -> str:
        rows = [f"{'phase':<14} {'iters':>5} {'stop':<22} {'ms':>8} {'nodes':>8}  banned"]
        for p in self.phases:
            rows.append(f"{p.phase:<14} {p.iterations:>5} {str(p.stop):<22} {p.seconds * 1e3:>8.1f} {p.nodes:>8}  "
                        + ", ".join(p.banned))
        return "\n".join(rows)


_RULESET = re.compile(r"^\(ruleset\s+([^\s()]+)\s*\)", re.M)
#: analysis iterations run ahead of every phase iteration (each under the growth check: ten in one
#: unchecked command once ran on from 3,000 e-nodes to 1.4 million and then out of memory, in
#: nanquantile's gather step); past them the fixpoint is reached after the phase iteration
ANALYSIS_CHUNK = 10
#: an analysis iteration that multiplies the e-graph by more than this (once it is past the floor)
#: stops the analysis and the phases: the next one would multiply it again
ANALYSIS_GROWTH = 8
ANALYSIS_GROWTH_FLOOR = 20_000
#: an analysis iteration after one that grew the e-graph by this much runs from a snapshot (egglog's
#: push/pop), and one that then passes the checks is undone: the e-graph is extracted as it was
#: before it, not at 1.4 million e-nodes that took 17 s to serialize and extract (nanquantile's
#: gather: 800 -> 890 -> 3,000 -> 1.4 million, the last iteration alone x460)
ANALYSIS_SNAPSHOT_GROWTH = 2.0
CONFLICT_RELATIONS = ("extent-conflict", "rank-conflict", "dtype-conflict")
#: lang.egg's rules that fill them: a match in a run report means a conflict row
CONFLICT_RULES = ("lang/dim-conflict", "lang/rank-conflict", "lang/dtype-conflict")
#: a rule's matches grow by (this iteration's / the last one's) only counted from this many matches on;
#: below it a ratio says nothing (a rule that just started matching)
GROWTH_FLOOR = 64
#: a slice predicted on an e-graph that grew has this added to the power of its growth (its search may be of
#: a higher degree than the slices so far showed)
EXTRAPOLATION_MARGIN = 0.5
#: commands that only add data or run rules: a session that ran nothing else can be rolled back
_DATA_COMMANDS = (bindings.RunSchedule, bindings.PrintSize)


#: the ruleset (declared in lang.egg) that forgets facts extraction does not read: rules/cleanup.egg
#: for lang.egg's, each pack for its own relations; run only on a session about to be rolled back
CLEANUP_RULESET = "satfuse-cleanup"
#: the ``satfuse-cleanup`` rules for lang.egg's own facts
CLEANUP_PATH = rules_path("cleanup.egg")
CLEANUP_TEXT = Path(CLEANUP_PATH).read_text()
#: the engine's own packs, loaded by every Session with the language (not rewrite rule packs)
ENGINE_PACKS = (LOADER_PATH, CLEANUP_PATH)


def _is_lang(src: Source) -> bool:
    return "(constructor Ref " in src.text


def _remove_dir(path: str, owner: int) -> None:
    """Remove a session's row directory, only in the process that made it (a forked child
    exiting must not remove its parent's)."""
    if os.getpid() == owner:
        shutil.rmtree(path, ignore_errors=True)


_EGGLOG_PID: int | None = None  # the process that first used egglog


def _check_not_forked() -> None:
    """egglog is not fork-safe once used: its worker threads (and any lock one held) do not
    survive ``fork``, and a child that uses it can hang forever. Refuse clearly instead."""
    global _EGGLOG_PID
    if _EGGLOG_PID is None:
        _EGGLOG_PID = os.getpid()
    elif _EGGLOG_PID != os.getpid():
        raise RuntimeError(
            "satfuse cannot optimize in a process forked after it optimized something (egglog's "
            "threads do not survive fork, and the child could hang). Plans made before the fork run "
            "fine here; to optimize in workers, start them with multiprocessing's 'spawn' (or "
            "'forkserver') method, or optimize before forking.")


def _is_data_command(cmd: Any, text: str) -> bool:
    if isinstance(cmd, bindings.Input):  # rows into an existing table
        return True
    if isinstance(cmd, bindings.ActionCommand):  # a `let` declares a global: a table
        return isinstance(cmd.action, (bindings.Union, bindings.Set, bindings.Expr_))
    if isinstance(cmd, _DATA_COMMANDS):
        return True
    # egglog-python parses `run-schedule` as its own (UserDefined) command; a scheduler in it
    # declares tables
    return isinstance(cmd, bindings.UserDefined) and text.startswith("(run-schedule") and "let-scheduler" not in text


def _add_matches(matches: dict[str, int], into: dict[str, int]) -> int:
    """Add a report's nonzero match counts into ``into``; their total."""
    total = 0
    for k, v in matches.items():
        if v:
            into[k] = into.get(k, 0) + v
            total += v
    return total


def _growth(before: dict[str, int], now: dict[str, int], floor: int = GROWTH_FLOOR) -> float:
    """The largest factor by which a count grew (a rule's matches, a table's rows), counted
    only from ``floor`` on: below it a ratio says nothing (a rule that just started matching)."""
    return max((v / before[k] for k, v in now.items() if before.get(k, 0) >= floor), default=1.0)


class _Pace:
    """Predicts the next saturation step of a phase and picks its form: a plain ``run`` or a
    slice under the back-off scheduler with match limit :attr:`match_limit`.

    egglog cannot be interrupted inside a command, so the time budget is kept by not starting a
    step predicted to end past it. A plain step searches only new facts: its time follows its
    rules' matches, which grow with the tables they join (a cross-product rule's with the square
    of one). A slice builds a fresh scheduler, which searches everything again: its time grows as
    the largest table to a power learnt from the slices so far (2 until two slices measured it).
    Doubling N when a slice changed nothing admits the rules with at most 2N matches; it is done
    only if the slice after it, on the e-graph those matches may grow, still fits the time left."""

    def __init__(self, budget: Budget, node_limit: int, throttled: bool = False) -> None:
        self.budget = budget
        self.node_limit = node_limit
        self.match_limit: int | None = budget.match_limit if throttled else None  # None: plain steps
        self.rate = 0.0  # matches applied per second, the best seen (apply cost of a slice)
        self.rows_per_match = 1.0  # rows the largest table gained per match, the most seen
        self.nodes_per_match = 1.0  # e-nodes (analysis facts included) the e-graph gained per match, the most seen
        self.power = 2.0  # a slice's time ~ (largest table's rows) ** power
        self.last: tuple[int, float] | None = None  # (largest table's rows it searched, seconds) of the last slice

    def next(self, took: float, before: dict[str, int], counts: dict[str, int], matched: int,
             sizes_before: dict[str, int], sizes: dict[str, int], stuck: bool, left: float) -> float | StopReason:
        """The predicted time of the next step after one that took ``took`` s (matched ``matched``
        times, tables ``sizes_before`` -> ``sizes``), or why no step can run within the budget."""
        rows_before, rows = max(sizes_before.values(), default=1), max(sizes.values(), default=1)
        size = sum(sizes.values())
        if matched:
            self.rate = max(self.rate, matched / max(took, 1e-6))
            self.rows_per_match = max(self.rows_per_match, (rows - rows_before) / matched)
            self.nodes_per_match = max(self.nodes_per_match, (size - sum(sizes_before.values())) / matched)
        limit = self.budget.match_limit
        if self.match_limit is None:
            growth = max(1.0, _growth(before, counts), _growth(sizes_before, sizes, 8) ** 2)
            most = max(counts.values(), default=0)
            if most > limit or most * growth > limit:  # matched, or will match, more than the limit
                self.match_limit = limit
            return took * growth
        if self.last is not None and took > 1e-3 and rows_before > 1.2 * self.last[0]:
            seen = math.log(took / max(self.last[1], 1e-6)) / math.log(rows_before / self.last[0])
            self.power = min(4.0, max(self.power, seen))
        self.last = (rows_before, took)
        grew = rows / max(rows_before, 1)
        # the next slice's search; extrapolating over a grown e-graph adds a margin to the power (it is
        # learnt only after the fact: the pair rule's search grew as rows ** 2.2)
        search = took * grew ** (self.power + (EXTRAPOLATION_MARGIN if grew > 1.2 else 0.0))
        if not stuck:
            return search + self.match_limit / max(self.rate, 1.0)
        # the slice changed nothing: its banned rules each match more than N. Doubling N admits
        # those with at most 2N (a slice after that is predicted on the grown e-graph, as any)
        n = 2 * self.match_limit
        if size + self.nodes_per_match * n > self.node_limit:
            return StopReason("nodes", self.node_limit)
        this = search + n / max(self.rate, 1.0)
        if this > left:
            return StopReason("time", self.budget.seconds)
        self.match_limit = n
        return this


def _most_matches(it: Any) -> int:
    return max((r.num_matches for rs in it.rule_set_report.rule_reports.values() for r in rs), default=0)


def _vars(expr: Any, into: set[str]) -> set[str]:
    """The variables of a parsed query expression."""
    if isinstance(expr, bindings.Var):
        into.add(expr.name)
    elif isinstance(expr, bindings.Call):
        for arg in expr.args:
            _vars(arg, into)
    return into


def is_cross_product(rule: Any) -> bool:
    """Whether a parsed rule's query is a cross product: its atoms fall in groups that share no
    variable, so its matches multiply (every pair of sums). Such a rule's first iteration can
    already explode, before any growth is seen to predict it."""
    groups: list[set[str]] = []
    for fact in rule.body:
        names: set[str] = set()
        for e in ((fact.left, fact.right) if isinstance(fact, bindings.Eq) else (getattr(fact, "expr", None),)):
            _vars(e, names)
        if not names:
            continue  # a ground check: one match at most
        for g in [g for g in groups if g & names]:
            groups.remove(g)
            names |= g
        groups.append(names)
    return len(groups) > 1


_LOC = re.compile(r"^In (\d+):(\d+)-(\d+) of ([^:]+): (.*)$", re.S)


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _form_texts(text: str) -> list[str]:
    """``text`` as one text per top-level form, each after as many newlines as precede it, so that
    egglog's lines and offsets are the file's. egglog copies the text it parsed into the span of
    every command (13.2): parsing lang.egg whole made 327 copies of it, and loading it took twice
    as long. The whole text, as is, when anything but forms and comments is in it (egglog reports
    that) or its parentheses do not balance."""
    try:
        forms = list(top_level_forms(text))
    except SexpError:
        return [text]
    out, end = [], 0
    for line, start, form in forms:
        if _COMMENT.sub("", text[end:start]).strip():
            return [text]
        out.append("\n" * (line - 1) + form)
        end = start + len(form)
    return [text] if _COMMENT.sub("", text[end:]).strip() else out


_COMMENT = re.compile(r";[^\n]*")


def _rule_name_at(text: str, line: int) -> str | None:
    """The :name of the top-level form that covers ``line`` (for error messages)."""
    lines = text.splitlines()
    # walk back to the start of the form, then forward to its :name (egglog may name the line past the end)
    start = min(line, len(lines)) - 1
    while start > 0 and not lines[start].startswith("("):
        start -= 1
    chunk = "\n".join(lines[start:start + 12])
    m = re.search(r':name\s+"([^"]+)"', chunk)
    return m.group(1) if m else None


def rule_location(sources: Sequence[Source], name: str) -> str:
    """``path:line`` of the rule named ``name`` (the line its form starts on), or ``name``'s pack."""
    key = f':name "{name}"'
    for src in sources:
        at = src.text.find(key)
        if at >= 0:
            line = _line_of(src.text, at)
            lines = src.text.splitlines()
            while line > 1 and not lines[line - 1].startswith("("):
                line -= 1
            return f"{src.path}:{line}"
    return "<unknown file>"


def describe_egglog_error(err: BaseException, sources: Sequence[Source], default: str = "<egglog>") -> str:
    """Turn an egglog error into ``path:line: rule NAME: message``."""
    msg = str(err).strip()
    first = msg.split("\nthread ")[0].split("\nstack backtrace")[0].strip()
    m = _LOC.match(first)
    if m:
        line, base, rest = int(m.group(1)), m.group(4), m.group(5)
        src = next((s for s in sources if os.path.basename(s.path) == base), None)
        path = src.path if src else base
        rule = _rule_name_at(src.text, line) if src else None
        where = f"{path}:{line}"
        return f"{where}: {'rule ' + repr(rule) + ': ' if rule else ''}{rest.strip()}"
    return f"{default}: {first}"


class Session:
    """One e-graph: the language, the rule packs, one program, and its saturation.

    ``Session(sources)`` loads the sources and, with the language, the engine's own packs
    (rules/load.egg, rules/cleanup.egg) into a fresh e-graph: about 90 ms for the built-in packs (egglog compiles
    every rule). ``engine.pool.POOL.run`` reuses loaded ones instead.
    """

    def __init__(self, sources: Sequence[Source]) -> None:
        _check_not_forked()
        self.egraph = bindings.EGraph()
        self.sources = list(sources)
        self._parsed: dict[str, list] = {}
        #: ruleset -> its cross-product rules (:func:`is_cross_product`): their phases start throttled
        self.cross_products: dict[str, set[str]] = {}
        #: False once a command that could change the e-graph's schema ran (a declaration, a
        #: scheduler): such a session must not be rolled back and reused
        self.reusable = True
        for src in self.sources:
            self.load(src)
        self._tmp: str | None = None
        self._has_program = False
        #: how much the last analysis iteration grew the e-graph (``ANALYSIS_SNAPSHOT_GROWTH``)
        self._analysis_growth = 1.0
        self.rulesets = [m for src in self.sources for m in _RULESET.findall(src.text)]
        if any(_is_lang(src) for src in self.sources):  # the engine's own packs need the language
            self.load(Source(LOADER_PATH, LOADER_TEXT))
            self.load(Source(CLEANUP_PATH, CLEANUP_TEXT))

    def drop_facts(self) -> None:
        """Delete the analysis facts extraction does not read (every relation's rows, ranks,
        extents, list positions, broadcasts; shapes and dtypes stay) before serializing: a
        third of the serialized e-graph for Adam. Only for a session about to be rolled back."""
        self.run([f"(run {CLEANUP_RULESET} 1)"], "cleanup")

    def add_trace(self, trace: Any) -> Any:
        """Add a program to the e-graph: returns its Encoding (handles of its values and roots).

        Bulk path (engine/loader.py): rows written as tab-separated files, read by ``input``,
        expanded by one iteration of the ``load`` rules; command path (one egglog command
        per value, engine/terms.py) when a string cannot be written that way."""
        if self._has_program:
            raise RuntimeError("a Session holds one program: its handles (Ref k, ...) and load rows are "
                               "numbered per program; use a new session (or the pool, which rolls back)")
        self._has_program = True
        enc = tables(trace)
        if enc is None:
            enc = encode(trace)
            self.run(enc.commands, "trace")
            return enc
        if self._tmp is None:
            # a RAM-backed directory where there is one: file creation there costs ~13 µs, ~90 on disk
            shm = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
            self._tmp = tempfile.mkdtemp(prefix="satfuse-load-", dir=shm)
            weakref.finalize(self, _remove_dir, self._tmp, os.getpid())
        cmds = []
        for name, rows in enc.tables.rows.items():
            path = os.path.join(self._tmp, name + ".tsv")
            with open(path, "w") as f:
                f.write(tsv(rows))
            cmds.append(f'(input {name} "{path}")')
        self.run([*cmds, "(run load 1)"], "trace")
        return enc

    def load(self, src: Source) -> None:
        """Parse and run a source one top-level form at a time (:func:`_form_texts`), each error
        located at ``path:line``."""
        parsed: list[tuple[str, Any]] = []  # (the text it was parsed from, command)
        try:
            for text in _form_texts(src.text):
                parsed += [(text, c) for c in self.egraph.parse_program(text, filename=src.path)]
        except BaseException as e:  # noqa: BLE001 - egglog panics are BaseExceptions
            raise RuleError(describe_egglog_error(e, [src], src.path)) from None
        for form, cmd in parsed:
            if isinstance(cmd, bindings.RuleCommand) and is_cross_product(cmd.rule):
                self.cross_products.setdefault(cmd.rule.ruleset, set()).add(cmd.rule.name)
            try:
                self.egraph.run_program(cmd)
            except BaseException as e:  # noqa: BLE001
                if isinstance(e, (KeyboardInterrupt, SystemExit)):
                    raise
                loc = _span_of(cmd)
                text = describe_egglog_error(e, [src], src.path)
                if loc is not None and not text.startswith(src.path + ":"):
                    line = _line_of(form, loc)
                    rule = _rule_name_at(src.text, line)
                    text = f"{src.path}:{line}: {'rule ' + repr(rule) + ': ' if rule else ''}{text.split(': ', 1)[-1]}"
                raise RuleError(text) from None

    def _parse(self, text: str) -> list:
        cmds = self._parsed.get(text)
        if cmds is None:
            cmds = self.egraph.parse_program(text)
            if not all(_is_data_command(c, text) for c in cmds):
                self.reusable = False
            elif len(self._parsed) < 512 and text.startswith(("(run", "(print-size", "(input")):
                self._parsed[text] = cmds  # schedules repeat; the program's own commands do not
        return cmds

    def run(self, commands: Sequence[str], what: str = "<program>") -> list:
        """Run generated commands, one per parse (egglog's parse is quadratic in text size)."""
        outs: list = []
        for c in commands:
            try:
                outs.extend(self.egraph.run_program(*self._parse(c)))
            except BaseException as e:  # noqa: BLE001
                self.reusable = False
                if isinstance(e, (KeyboardInterrupt, SystemExit)):
                    raise
                raise RuleError(f"{what}: egglog rejected {c[:200]!r}: {str(e).splitlines()[0]}") from None
        return outs

    def sizes(self) -> dict[str, int]:
        return dict(self.run(["(print-size)"])[0].sizes)

    def size(self) -> int:
        return sum(self.sizes().values())

    def conflicts(self, sizes: dict[str, int] | None = None) -> dict[str, int]:
        """Rows of lang.egg's conflict relations: non-empty means some rule is unsound."""
        sizes = self.sizes() if sizes is None else sizes
        return {k: v for k, v in sizes.items() if k in CONFLICT_RELATIONS and v}

    def _analysis(self, analysis: str, budget: Budget, rep: SaturationReport, limit: int) -> bool:
        return self._analysis_steps(analysis, budget, rep, limit)[0]

    def _analysis_steps(self, analysis: str, budget: Budget, rep: SaturationReport, limit: int,
                        most: int | None = None) -> tuple[bool, bool, bool]:
        """Run the analysis rules to a fixpoint one iteration at a time, checking the e-graph
        after each; False (and a reported stop) if it passed the node budget or grew more than
        ``ANALYSIS_GROWTH`` times in one iteration (past ``ANALYSIS_GROWTH_FLOOR`` e-nodes): a
        chunk of iterations could grow past any budget before a check (shape broadcasting over
        a dynamic group_norm backward's extents: 900 -> 4,700 -> 78,000 e-nodes, then 24 GB).
        An iteration after one that grew the e-graph ``ANALYSIS_SNAPSHOT_GROWTH`` times runs from a
        snapshot and is undone if it fails the checks, kept (run again) if it passes them.
        ``most``: stop after that many iterations. Returns (within the budget, changed anything,
        reached the fixpoint or, without ``most``, the iteration budget)."""
        step = f"(run {analysis} 1)"
        size = self.size()
        changed = False
        for _ in range(max(1, budget.analysis_iterations) if most is None else most):
            snapshot = self._analysis_growth >= ANALYSIS_SNAPSHOT_GROWTH
            if snapshot:
                self.run(["(push)"], "analysis snapshot")
            out = self.run([step], "analysis")
            self._count(out, rep.analysis)
            grew = out[0].report.iterations[-1].rule_set_report.changed
            now = self.size() if grew else size
            exploded = now > limit or (now > ANALYSIS_GROWTH_FLOOR and now > ANALYSIS_GROWTH * size)
            if snapshot:
                # balanced either way: the pool's sessions keep one snapshot, their base
                self.run(["(pop)"], "analysis rollback")
                if grew and not exploded:
                    self.run([step], "analysis")  # the same iteration, kept this time
                    now = self.size()
            if not grew:
                return True, changed, True
            if exploded:
                why = limit if now > limit else f"{ANALYSIS_GROWTH}x growth in one analysis iteration"
                if snapshot:
                    why = f"{why}; that iteration undone, the e-graph extracted as it was before it ({size} e-nodes)"
                    now = size
                rep.phases.append(PhaseReport(analysis, stop=StopReason("nodes", why), nodes=now))
                return False, changed, False
            changed = True
            self._analysis_growth = now / max(size, 1)
            size = now
        return True, changed, most is None

    def saturate(self, phases: Sequence[str], budget: Budget | None = None, analysis: str = "analysis") -> SaturationReport:
        """Run each phase (a ruleset) to saturation or to the budget, analysis rules in between.

        A step runs the analysis rules toward their fixpoint (up to ``ANALYSIS_CHUNK`` iterations)
        and one iteration of the phase, then the rest of the analysis; every analysis iteration
        is its own command under the node and growth checks; a phase
        is saturated when a whole step changes nothing. Steps start as egglog's core ``run``:
        semi-naive (only new facts are searched), and no scheduler (creating egglog's back-off
        scheduler costs about 2 ms per ruleset and declares tables, so the session cannot go
        back to the pool). egglog cannot be interrupted inside a command, so the time budget
        is kept by predicting each step (:class:`_Pace`) and not starting one that would end
        past it, and by bounding what a step may add: once a rule matched, or is predicted to
        match, more than ``budget.match_limit`` times, the phase goes on in slices under the
        back-off scheduler, whose match limit N admits only the rules with at most N matches
        (the others are banned for that slice); N doubles when a slice changed nothing, as far
        as the e-nodes and seconds left can absorb what it may add. The report names the rules still
        banned when a budget stopped the phase.
        """
        budget = budget or Budget()
        rep = SaturationReport()
        t_start = time.perf_counter()
        deadline = t_start + budget.seconds
        self._analysis_growth = 1.0
        known = self.size()  # e-nodes at the last reading
        limit = rep.node_limit = budget.node_limit(known)
        todo = list(phases)
        if not self._analysis(analysis, budget, rep, limit):
            phases = []  # the analysis alone hit the node budget: extract what we have
        sizes = self.sizes()
        recent: list[list[str]] = [[], []]  # rules matched in the last two phase iterations
        for phase in phases:
            pr = PhaseReport(phase)
            t0 = time.perf_counter()
            stop = StopReason("iterations", budget.iterations)
            pace = _Pace(budget, limit, throttled=phase in self.cross_products)
            counts: dict[str, int] = {}  # the last step's matches per rule
            seen: set[str] = set()  # rules of the phase that matched in some step
            for _ in range(budget.iterations):
                n = pace.match_limit
                step = (f"(run {phase} 1)" if n is None else
                        f"(run-schedule (let-scheduler bo (back-off :match-limit {n} "
                        f":ban-length {budget.ban_length})) (run-with bo {phase}))")
                t_step = time.perf_counter()
                before_lead = dict(rep.analysis)
                ok, lead_updated, lead_done = self._analysis_steps(analysis, budget, rep, limit, ANALYSIS_CHUNK)
                if not ok:
                    stop = StopReason("nodes", limit)
                    break
                (step_out,) = self.run([step], f"phase {phase}")
                took = time.perf_counter() - t_step
                pr.iterations += 1
                pr.throttled |= n is not None
                report = step_out.report
                counts, before = dict(report.num_matches_per_rule), counts
                applied = [k for k, v in counts.items() if v]
                recent = [applied, recent[0]]
                matched = _add_matches(counts, pr.matches)
                if not report.updated and not lead_updated:
                    stop = StopReason("saturated")
                    break
                conflict = any(rep.analysis.get(r, 0) > before_lead.get(r, 0) for r in CONFLICT_RULES)
                if not conflict and not lead_done:
                    # the lead chunk did not reach the analysis fixpoint: finish it before the next step
                    before_analysis = dict(rep.analysis)
                    if not self._analysis(analysis, budget, rep, limit):
                        stop = StopReason("nodes", limit)
                        break
                    conflict = any(rep.analysis.get(r, 0) > before_analysis.get(r, 0) for r in CONFLICT_RULES)
                    took = time.perf_counter() - t_step  # the step's cost is its analysis's too (the pace predicts it)
                if conflict:
                    rep.conflicts = self.conflicts()
                    rep.suspects = list(dict.fromkeys(recent[0] + recent[1]))
                    stop = StopReason("conflict")
                    break
                sizes, before_sizes = self.sizes(), sizes
                if sum(sizes.values()) > limit:
                    stop = StopReason("nodes", limit)
                    break
                # a slice searches everything: a rule that matched before and was not applied now
                # was banned (it matched more than N); a slice that changed nothing is stuck on those
                stuck = n is not None and sizes == before_sizes
                if n is not None:  # a rule never applied is named only if the slice banned something
                    unseen = self.cross_products.get(phase, set()) if report.updated else set()
                    pr.banned = sorted((seen | unseen) - set(applied))
                seen.update(applied)
                predicted = pace.next(took, before, counts, matched, before_sizes, sizes, stuck,
                                      deadline - time.perf_counter())
                if isinstance(predicted, StopReason):
                    stop = predicted
                    break
                if time.perf_counter() + predicted > deadline:
                    stop = StopReason("time", budget.seconds)
                    break
            pr.stop = stop
            pr.seconds = time.perf_counter() - t0
            pr.nodes = self.size()
            rep.phases.append(pr)
            if stop.kind in ("nodes", "time", "conflict"):
                break
            sizes = self.sizes()
        ran = {p.phase for p in rep.phases}
        for phase in todo:  # phases a budget stop kept from running at all: reported, not silent
            if phase not in ran:
                reason = next((p.stop for p in reversed(rep.phases) if p.stop.kind != "saturated"), None)
                rep.phases.append(PhaseReport(phase, stop=StopReason("skipped", str(reason))))
        if not any(p.stop.kind == "nodes" for p in rep.phases):  # past the budget, the analysis is not run again
            self._analysis(analysis, budget, rep, limit)
        sizes = self.sizes()
        rep.conflicts = self.conflicts(sizes)
        if rep.conflicts and not rep.suspects:
            rep.suspects = list(dict.fromkeys(recent[0] + recent[1]))
        rep.seconds = time.perf_counter() - t_start
        rep.nodes = sum(sizes.values())
        return rep

    @staticmethod
    def _count(outs: list, into: dict[str, int]) -> None:
        for o in outs:
            _add_matches(getattr(getattr(o, "report", None), "num_matches_per_rule", {}), into)

    def serialize_program(self, enc: Any, values: Sequence[Any]) -> "SerializedProgram":
        """Serialize after adding a program (:meth:`add_trace`): the JSON text, unparsed (a
        pooled session is rolled back while the caller parses it), with what is needed to
        find the class of each root and of each of ``values``. Only the roots are given to
        egglog as terms to find (each costs a lookup there, ~30 µs); a value's class is read
        from its ``Ref`` node in the JSON."""
        handles = [(c, lit, (VALUE_HANDLE, k)) for c, lit, k in enc.roots]
        return SerializedProgram(self.serialize_text(handles), len(enc.roots),
                                 [(v, enc.ref_of(v)) for v in values])

    def serialize(self, handles: Sequence[tuple]) -> tuple[dict, list[str]]:
        """The whole e-graph as egraph-serialize JSON, plus the class id of each handle term
        (``("Ref", k)``, ``("Out", i, ("Ref", k))``, ...: see :func:`handle_expr`)."""
        data = json.loads(self.serialize_text(handles))
        return data, list(data["root_eclasses"])

    def serialize_text(self, handles: Sequence[tuple]) -> str:
        exprs = [handle_expr(h) for h in handles]
        try:
            return self.egraph.serialize(exprs).to_json()
        except BaseException as e:  # noqa: BLE001
            if isinstance(e, (KeyboardInterrupt, SystemExit)):
                raise
            raise RuleError(f"serialize failed: {str(e).splitlines()[0]}") from None


@dataclass
class SerializedProgram:
    text: str
    n_roots: int
    values: list[tuple[Any, int]]  # (value, k of its handle ``Ref k``)

    def parse(self) -> tuple[dict, list[str], dict[int, str]]:
        """(JSON data, class of each root, id(Var) -> class for each of ``values``)."""
        data = json.loads(self.text)
        nodes = data["nodes"]
        ref_class = {int(nodes[n["children"][0]]["op"]): n["eclass"]
                     for n in nodes.values() if n["op"] == VALUE_HANDLE}
        return data, list(data["root_eclasses"])[:self.n_roots], {id(v): ref_class[k] for v, k in self.values}


def handle_expr(term: tuple) -> Any:
    """A ground term as an egglog expression: ``(ctor, arg, ...)`` with int/str literals."""
    span = bindings.PanicSpan()
    args = [handle_expr(a) if isinstance(a, tuple)
            else bindings.Lit(span, bindings.Int(a) if isinstance(a, int) else bindings.String(a))
            for a in term[1:]]
    return bindings.Call(span, term[0], args)


def _span_of(cmd: Any) -> int | None:
    for attr in ("rewrite", "rule", "span"):
        obj = getattr(cmd, attr, None)
        if obj is None:
            continue
        sp = obj if attr == "span" else getattr(obj, "span", None)
        if sp is not None and hasattr(sp, "i"):
            return sp.i
    return None
