"""Which rules can change what a program computes, read from their text.

A rule that only derives facts (shapes, dtypes, extents, relations) leaves every value class of
the e-graph holding the program's own term and nothing else: extracting then gives back the
captured program. So when saturation matched no other rule, and the program has no two equal
terms (which the e-graph would share), ``optimize_trace`` skips serializing, extracting and
decoding: the captured program is the plan (half of an optimizer step's own time at 10k ops).

A rule is *quiet* when each of its actions is one of: a relation's row (not an obligation: a plan
built on the rule's fact must check it, and the full path attaches it); ``set`` of an analysis;
``union`` of two terms of a sort that holds no program value (an extent, a shape; their sort
read from the schema or from the rule's query); a new term of such a sort. Every rewrite of a
term constructor is loud (extent rewrites too: they simplify the extents a plan spells, except in
a program whose extents are all numbers), and so is anything this reading does not recognise:
misreading a rule can only cost an optimization, never an answer, since the captured program is
always a correct plan.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Sequence

from .egraph import OBLIGATION_OPS
from .schema import DECLS, VALUE_SORTS, Decl, is_term, read_schema
from .sexp import Str, parse_sexp, top_level_forms

#: lang.egg's obligation on extents (the other is on values: an index's range)
EXTENT_OBLIGATION = next(r for r in sorted(OBLIGATION_OPS) if DECLS[r].args[3:] == ("Dim", "Dim"))


def quiet_rules(sources: Sequence[Any], static: bool = False) -> frozenset[str]:
    """Names of the rules in ``sources`` (each with ``.text``) that cannot change a program value.
    ``static``: for a program whose every extent is a number, where a rewrite of extents, or an
    extent obligation, can only restate numbers the plan already has."""
    return _quiet(tuple(s.text for s in sources), static)


@lru_cache(maxsize=16)
def _quiet(texts: tuple[str, ...], static: bool) -> frozenset[str]:
    decls = dict(DECLS)
    for text in texts:
        decls.update(read_schema(text))
    out: set[str] = set()
    for text in texts:
        for _, _, form in top_level_forms(text):
            s = parse_sexp(form)
            if not s or s[0] not in ("rule", "rewrite", "birewrite"):
                continue
            name = _keyword(s, ":name")
            if isinstance(name, Str) and _is_quiet(s, decls, static):
                # egglog names a birewrite's two directions name=> and name<=
                out.update((name.value, f"{name.value}=>", f"{name.value}<=") if s[0] == "birewrite" else (name.value,))
    return frozenset(out)


def _keyword(form: list, key: str) -> Any:
    for i, x in enumerate(form[:-1]):
        if x == key:
            return form[i + 1]
    return None


def _is_quiet(form: list, decls: dict[str, Decl], static: bool) -> bool:
    if form[0] != "rule":  # a rewrite of an analysis (bcast, bdim) merges facts; of a term, values or extents
        lhs = form[1]
        d = decls.get(lhs[0]) if isinstance(lhs, list) and lhs and isinstance(lhs[0], str) else None
        if d is None or d.sort in VALUE_SORTS or not _makes_no_value(form[2], decls):
            return False
        return (not is_term(d) and form[0] == "rewrite") or (is_term(d) and static)
    query, actions = form[1], form[2]
    if not (isinstance(query, list) and isinstance(actions, list)):
        return False
    sorts: dict[str, str] = {}
    for atom in query:
        _bind(atom, decls, sorts)
    return all(_quiet_action(a, decls, sorts, static) for a in actions)


def _bind(s: Any, decls: dict[str, Decl], sorts: dict[str, str]) -> None:
    """Record the sort of each query variable from the positions it takes."""
    if not isinstance(s, list) or not s or not isinstance(s[0], str):
        return
    if s[0] == "=" and len(s) == 3:
        for a, b in ((s[1], s[2]), (s[2], s[1])):
            if isinstance(a, str) and isinstance(b, list) and b and b[0] in decls:
                sorts.setdefault(a, decls[b[0]].sort)
    d = decls.get(s[0])
    for i, a in enumerate(s[1:]):
        if isinstance(a, str) and d is not None and i < len(d.args):
            sorts.setdefault(a, d.args[i])
        _bind(a, decls, sorts)


def _sort_of(s: Any, decls: dict[str, Decl], sorts: dict[str, str]) -> str | None:
    if isinstance(s, str):
        return sorts.get(s)
    if isinstance(s, list) and s and s[0] in decls:
        return decls[s[0]].sort
    return None


def _makes_no_value(s: Any, decls: dict[str, Decl]) -> bool:
    """No term constructor of a value sort anywhere inside ``s`` (it would be created)."""
    if not isinstance(s, list) or not s:
        return True
    d = decls.get(s[0]) if isinstance(s[0], str) else None
    if d is not None and is_term(d) and d.sort in VALUE_SORTS:
        return False
    return all(_makes_no_value(a, decls) for a in s[1:])


def _quiet_action(a: Any, decls: dict[str, Decl], sorts: dict[str, str], static: bool) -> bool:
    if not isinstance(a, list) or not a or not isinstance(a[0], str) or not _makes_no_value(a, decls):
        return False
    head = a[0]
    if head == "union" and len(a) == 3:
        sort = _sort_of(a[1], decls, sorts) or _sort_of(a[2], decls, sorts)
        return sort is not None and sort not in VALUE_SORTS
    if head == "set" and len(a) == 3:
        d = decls.get(a[1][0]) if isinstance(a[1], list) and a[1] and isinstance(a[1][0], str) else None
        return d is not None and not is_term(d)
    d = decls.get(head)
    if head in OBLIGATION_OPS and not (static and head == EXTENT_OBLIGATION):
        return False
    return d is not None and (d.kind == "relation" or (is_term(d) and d.sort not in VALUE_SORTS))
