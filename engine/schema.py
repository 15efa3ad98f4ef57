"""The term language's names, read once from ``rules/lang.egg``.

Every module that needs to know which heads are tensor constructors, analyses, relations,
program roots or extent arithmetic imports them from here instead of keeping its own list,
so adding a constructor or an analysis to ``lang.egg`` reaches the encoder, the e-graph
view, the cost model and the rule harness at once. Naming convention of ``lang.egg``:
term constructors are CamelCase; analyses (functions and analysis constructors) and
relations are lower-case.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from .sexp import Str, parse_sexp, top_level_forms

#: egglog's primitive sorts
PRIMITIVE_SORTS = frozenset({"i64", "f64", "String", "bool"})


@dataclass(frozen=True)
class Decl:
    """One declared name: its kind (constructor | function | relation), argument sorts and result sort."""

    name: str
    kind: str
    args: tuple[str, ...]
    sort: str  # result sort; "" for a relation
    unextractable: bool = False


def rules_path(name: str) -> str:
    """Path of a shipped ``.egg`` file of ``satfuse/rules`` (the language, the engine's own packs)."""
    return str(resources.files("satfuse.rules").joinpath(name))


def lang_text() -> str:
    return Path(rules_path("lang.egg")).read_text()


def read_schema(text: str) -> dict[str, Decl]:
    """Declarations of ``text`` (datatype variants count as constructors of the datatype's sort)."""
    out: dict[str, Decl] = {}
    for _, _, form in top_level_forms(text):
        s = parse_sexp(form)
        head = s[0] if s else ""
        if head == "datatype":
            for v in s[2:]:
                out[v[0]] = Decl(v[0], "constructor", tuple(v[1:]), s[1])
        elif head in ("constructor", "function"):
            out[s[1]] = Decl(s[1], head, tuple(s[2]), s[3], ":unextractable" in s[4:])
        elif head == "relation":
            out[s[1]] = Decl(s[1], "relation", tuple(s[2]), "")
        elif head == "sort":
            out[s[1]] = Decl(s[1], "sort", (), s[1])
    return {k: v for k, v in out.items() if not isinstance(k, Str)}


DECLS: dict[str, Decl] = read_schema(lang_text())


def is_term(d: Decl) -> bool:
    """A program term constructor (CamelCase), not an analysis."""
    return d.kind == "constructor" and d.name[:1].isupper()


def variants(sort: str) -> tuple[str, ...]:
    """The term constructors whose result is ``sort``, in declaration order."""
    return tuple(d.name for d in DECLS.values() if is_term(d) and d.sort == sort)


#: analyses: lower-case functions and constructors (shape, ext, rank, dtype, ...): facts, never program terms
ANALYSES = frozenset(d.name for d in DECLS.values() if d.kind in ("function", "constructor") and not is_term(d))
#: relations declared by lang.egg (is-float, the conflict relations, list helpers)
RELATIONS = frozenset(d.name for d in DECLS.values() if d.kind == "relation")
#: handles: unextractable term constructors that name a class (``Ref``), never matched or extracted
HANDLES = frozenset(d.name for d in DECLS.values() if is_term(d) and d.unextractable)
#: the handle that names a program value's class (``Ref k``): the one over an i64 whose sort is T
VALUE_HANDLE = next(d.name for d in DECLS.values() if is_term(d) and d.unextractable and d.sort == "T"
                    and d.args == ("i64",))
#: program roots (Out, WriteBack, NoWrite)
ROOTS = variants("Root")
#: Python scalar operands of a program (CInt, CFloat, CBool, CDim): one argument, a number or an extent
SCALARS = frozenset(d.name for d in DECLS.values() if is_term(d) and d.sort == "T" and not d.unextractable
                    and len(d.args) == 1 and d.args[0] in ("i64", "f64", "bool", "Dim"))


def _value_sorts() -> frozenset[str]:
    sorts = {"T"}
    while True:
        more = {d.sort for d in DECLS.values() if is_term(d) and sorts & set(d.args)} - sorts
        if not more:
            return frozenset(sorts)
        sorts |= more


#: the sorts of program values and what holds them (T, TL, Root): every other sort is structure
#: (extents, shapes, int lists), whose terms never read a value
VALUE_SORTS = _value_sorts()

#: extent arithmetic (DAdd, DSub, ...): Dim constructors over two Dims
DIM_BINARY = frozenset(d for d in variants("Dim") if DECLS[d].args == ("Dim", "Dim"))
#: list constructors: empty and cons of each list sort
LIST_NIL = frozenset(d for d in DECLS if is_term(DECLS[d]) and DECLS[d].args == () and DECLS[d].sort in ("DL", "IL", "TL"))
