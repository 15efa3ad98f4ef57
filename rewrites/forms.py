"""A rule's parts as data: its sides per direction (as s-expressions and as e-matching
patterns), its conditions, its guard comments and its doc line."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from satfuse.engine.schema import ANALYSES, RELATIONS
from satfuse.engine.sexp import Str, parse_sexp

from .packs import RuleInfo

#: egglog primitives: inside a pattern they match anything
PRIMS = frozenset({"+", "-", "*", "/", "%", "min", "max", "<", ">", "<=", ">=", "!=", "=", "and", "or", "not", "xor",
                   "<<", ">>", "&", "|", "^", "abs", "neg", "log2", "to-f64", "to-i64", "vec-of", "set-of"})


def to_pattern(s: Any) -> tuple:
    """An egglog term as a pattern: ('var', n) | ('lit', v) | ('any',) | ('app', op, args)."""
    if isinstance(s, list):
        if not s:
            return ("any",)
        head = s[0]
        if not isinstance(head, str) or head in PRIMS or head in ANALYSES or head in RELATIONS:
            return ("any",)
        return ("app", head, tuple(to_pattern(a) for a in s[1:]))
    if isinstance(s, Str):
        return ("lit", s.value)
    if isinstance(s, (int, float)):
        return ("lit", s)
    if s in ("true", "false"):
        return ("lit", s == "true")
    return ("var", s)


@dataclass
class RuleForm:
    """A rule's left and right sides (per direction), its guards and its comment."""

    info: RuleInfo
    directions: list[tuple[str, tuple, tuple]]  # (report-key suffix, lhs, rhs)
    guards: list[str]
    doc: str
    note: str = ""  # why a rule has no direction to force
    sides: list[tuple[str, Any, Any]] = field(default_factory=list)  # (suffix, lhs, rhs) as s-expressions
    conditions: list[Any] = field(default_factory=list)  # :when atoms, or a rule's query atoms, as s-expressions

    @property
    def name(self) -> str:
        return self.info.name


def _keywords(form: list) -> dict[str, Any]:
    out: dict[str, Any] = {}
    i = 0
    while i < len(form):
        if isinstance(form[i], str) and form[i].startswith(":") and i + 1 < len(form):
            out[form[i]] = form[i + 1]
            i += 2
        else:
            i += 1
    return out


def rule_form(info: RuleInfo, source_lines: Sequence[str]) -> RuleForm:
    guards, doc = [], ""
    k = info.line - 2
    while k >= 0 and source_lines[k].lstrip().startswith(";"):
        text = source_lines[k].strip().lstrip(";").strip()
        if text.startswith("guard:"):
            guards.insert(0, text[len("guard:"):].strip())
        elif not doc and not text.startswith("="):
            doc = text
        k -= 1
    form = parse_sexp(info.text)
    dirs: list[tuple[str, tuple, tuple]] = []
    note = ""
    sides: list[tuple[str, Any, Any]] = []
    conditions: list[Any] = []
    if info.kind == "rewrite":
        sides = [("", form[1], form[2])]
    elif info.kind == "birewrite":
        sides = [("=>", form[1], form[2]), ("<=", form[2], form[1])]
    if info.kind in ("rewrite", "birewrite"):
        conditions = list(_keywords(form).get(":when", []))
        dirs = [(k, to_pattern(a), to_pattern(b)) for k, a, b in sides]
    else:
        query, actions = form[1], form[2]
        binds = {}
        for atom in query:
            if isinstance(atom, list) and len(atom) == 3 and atom[0] == "=":
                a, b = atom[1], atom[2]
                if isinstance(a, str) and isinstance(b, list):
                    binds[a] = b
                elif isinstance(b, str) and isinstance(a, list):
                    binds[b] = a
        for act in actions if isinstance(actions, list) else []:
            if isinstance(act, list) and act and act[0] == "union":
                a, b = act[1], act[2]
                lhs = binds.get(a, a) if isinstance(a, str) else a
                rhs = binds.get(b, b) if isinstance(b, str) else b
                lp = to_pattern(lhs)
                if lp[0] == "app":
                    dirs.append(("", lp, to_pattern(rhs)))
                    sides.append(("", lhs, rhs))
                    conditions = [q for q in query if not (isinstance(q, list) and len(q) == 3 and q[0] == "="
                                                           and lhs in (q[1], q[2]) and a in (q[1], q[2]))]
                else:
                    note = "equates analysis facts (extents of a value); checked through the plans that read them"
        if not dirs and not note:
            note = "derives facts only (no union); checked through the rewrites that read them"
    return RuleForm(info, dirs, guards, doc, note, sides, conditions)
