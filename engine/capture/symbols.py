"""Symbols and range guards: the ShapeEnv's symbols and guards, in the trace's own names.

Capture owns a ShapeEnv (or borrows Dynamo's); every SymInt the traced graph mentions becomes
an expression over ``s0, s1, ...`` (numbered by first appearance), and every assumption the
ShapeEnv made about a symbol becomes an explicit guard of the trace.
"""

from __future__ import annotations

import sys
from contextlib import contextmanager
from typing import Any, Iterator

import sympy
import torch
from torch.fx.experimental.symbolic_shapes import ShapeEnv

from ..ir import Trace, as_extent
from .compat import symbol_values

#: guards that only decide the strides of fake tensors: our plan never relies on strides
STRIDE_ONLY = {"check_contiguous_sizes_strides", "is_contiguous", "_compute_contiguous_strides",
               "compute_required_storage_length", "is_non_overlapping_and_dense", "_is_contiguous",
               "is_channels_last_contiguous", "compute_elementwise_output_strides",
               "_maybe_guard_rel", "is_contiguous_for_memory_format"}
#: (file suffix, function) of guards functionalization adds for its wrappers' storage sizes only
_WRAPPER_ONLY = {("functional_tensor.py", "__new__")}


def layout_only(guard: Any, shape_env: ShapeEnv | None = None) -> bool:
    """A ShapeEnv guard that only decided fake-tensor strides or wrapper storage sizes (our plans
    depend on neither). A guard is made where its expression is first evaluated; later
    evaluations (of it or its negation) are answered from it without a record of their own, so a
    guard first made for strides (the contiguity of a size-1 dim) may go on to decide a shape
    (``squeeze_()`` of that dim): with :func:`track_evaluations` on ``shape_env``, every place that
    had it answered so must be a layout one too."""
    loc = guard.sloc.framework_loc
    if loc is None or not _layout_place(str(loc.filename), getattr(loc, "name", "")):
        return False
    seen = getattr(shape_env, "_satfuse_evaluated", None)
    if seen:
        keys = _keyed(shape_env, seen)
        for e in (guard.expr, sympy.Not(guard.expr)):
            if any(where is None or not _layout_place(*where) for where in seen.get(e, ())):
                return False
        if any(where is None or not _layout_place(*where) for where in keys.get(_question(guard.expr), ())):
            return False  # the same question spelled otherwise (Eq(s2, 3) for the guard Ne(s2 - 2, 1))
    return True


def _question(e: Any) -> Any:
    """An (in)equality as the question it asks: ``lhs - rhs`` expanded, sign-normalized, and
    whether it asks "= 0" or an order (both answers of one question share the key)."""
    if not isinstance(e, sympy.core.relational.Relational):
        return e
    d = sympy.expand(e.lhs - e.rhs)
    if isinstance(e, (sympy.Eq, sympy.Ne)):
        return ("zero", -d if d.could_extract_minus_sign() else d)
    if isinstance(e, (sympy.Lt, sympy.Ge)):  # d < 0  /  d >= 0
        return ("order", d)
    return ("order", -d)  # d > 0 is -d < 0; d <= 0 is -d >= 0


def _keyed(shape_env: Any, seen: dict) -> dict:
    """``seen`` by question, kept beside it on the ShapeEnv while it does not grow."""
    cached = getattr(shape_env, "_satfuse_questions", None)
    if cached is not None and cached[0] == len(seen):
        return cached[1]
    keys: dict[Any, set] = {}
    for e, wheres in seen.items():
        keys.setdefault(_question(e), set()).update(wheres)
    shape_env._satfuse_questions = (len(seen), keys)
    return keys


def _layout_place(filename: str, name: str) -> bool:
    return name in STRIDE_ONLY or any(filename.endswith(f) and name == n for f, n in _WRAPPER_ONLY)


@contextmanager
def track_evaluations(shape_env: ShapeEnv | None) -> Iterator[None]:
    """Record, while the block runs, each expression ``shape_env`` answered from what it already
    knew (no guard made) and where it was asked from (the first frame outside torch's shape
    machinery, as a guard's own location is found): what :func:`layout_only` reads."""
    if shape_env is None or "_maybe_evaluate_static" in vars(shape_env):  # none, or an enclosing block tracks
        yield
        return
    from torch.fx.experimental.symbolic_shapes import uninteresting_files

    seen: dict[Any, set] = getattr(shape_env, "_satfuse_evaluated", None) or {}
    static = shape_env._maybe_evaluate_static
    skip = uninteresting_files()

    def maybe_evaluate_static(expr: Any, *args: Any, **kwargs: Any) -> Any:
        out = static(expr, *args, **kwargs)
        if out is not None:
            frame = sys._getframe(1)
            while frame is not None and frame.f_code.co_filename in skip:
                frame = frame.f_back
            seen.setdefault(expr, set()).add((frame.f_code.co_filename, frame.f_code.co_name) if frame else None)
            del frame
        return out

    for name in ("cache_clear", "cache_info"):  # the ShapeEnv clears its method caches as it learns
        if hasattr(static, name):
            setattr(maybe_evaluate_static, name, getattr(static, name))
    shape_env._maybe_evaluate_static = maybe_evaluate_static
    shape_env._satfuse_evaluated = seen
    try:
        yield
    finally:
        del shape_env._maybe_evaluate_static  # the class's own again; the records stay for layout_only


class Symbols:
    """The map from a ShapeEnv's symbols to ours, with a hint (example value) per symbol."""

    def __init__(self, shape_env: ShapeEnv) -> None:
        self.shape_env = shape_env
        self.symbols: dict[sympy.Symbol, sympy.Symbol] = {}  # theirs -> ours
        self.hints: dict[str, int] = {}
        self.canon: dict[sympy.Expr, sympy.Expr] = {}  # compound extent -> its canonical spelling
        self.canon_by_hint: dict[int, list[sympy.Expr]] = {}
        #: equalities canonical() relied on (ShapeEnv symbols): guards of the plan even where the
        #: ShapeEnv guard that proves them is a layout one (unfold's contiguity check pins s0//2 to 1)
        self.pinned: list[Any] = []
        #: facts in our symbols a conversion relied on (``aten_map``'s squeeze: a kept extent is not 1):
        #: guards of the plan whatever the ShapeEnv kept
        self.assumed: list[Any] = []
        #: each expression as first spelled: the recorder's graphs hold a SymInt per use of an
        #: extent, not one node (``as_extent`` simplifies a compound one, ~1 ms)
        self.spelled: dict[sympy.Basic, Any] = {}

    def sym(self, e: Any) -> Any:
        """A SymInt/SymBool/sympy expr in our symbol names (s0, s1, ... by first appearance)."""
        if isinstance(e, (torch.SymInt, torch.SymBool, torch.SymFloat)):
            e = e.node.expr
        if not isinstance(e, sympy.Basic):
            return e
        known = self.spelled.get(e)
        if known is not None:
            return known
        self.spelled[e] = out = self._spell(e)
        return out

    def _spell(self, e: sympy.Basic) -> Any:
        e = self.shape_env.replace(e)
        if isinstance(e, sympy.Expr) and not (e.is_Symbol or e.is_number):
            e = self.canonical(e)
        subs = {}
        for s in sorted(e.free_symbols, key=lambda s: s.name):
            if s not in self.symbols:
                new = sympy.Symbol(f"s{len(self.symbols)}", integer=True)
                self.symbols[s] = new
                hint = symbol_values(self.shape_env).get(s)
                if hint is not None:
                    self.hints[new.name] = int(hint)
            subs[s] = self.symbols[s]
        out = e.xreplace(subs)
        if isinstance(out, sympy.Expr) and not isinstance(out, sympy.logic.boolalg.Boolean):
            return as_extent(out)
        return out

    def canonical(self, e: sympy.Expr) -> sympy.Expr:
        """One spelling per extent the ShapeEnv knows to be equal: ``s3*s88`` and ``s38*s97`` (HF's
        logits ``view(-1, V)`` vs its labels ``view(-1)``) are equal by a guard, not by a
        replacement (the ShapeEnv substitutes single symbols only), and the IR compares extents
        syntactically: a backward graph's ``mul`` of the two did not broadcast. The first
        spelling seen wins; a later one that the guards prove equal (same hint) maps to it. A
        symbol the guards prove equal wins over both: Dynamo guards an ``out=`` tensor's ``s20``
        equal to ``diagonal``'s ``Min(s11, s74)`` without replacing it. A symbol itself keeps its
        name (compound extents over it would lose their binding otherwise)."""
        known = self.canon.get(e)
        if known is not None:
            return known
        self.canon[e] = e
        try:
            hint_of = getattr(self.shape_env, "guarding_hint_or_throw", None) or self.shape_env.size_hint
            hint = int(hint_of(e))
        except Exception:  # noqa: BLE001 - unbacked or not an int: keep it as it is
            return e
        try:  # a guard can pin a compound extent to a number (a slice copied into from a (s0, 2) tensor)
            if self.shape_env._maybe_evaluate_static(sympy.Eq(e, hint)) is sympy.true:
                self.canon[e] = sympy.Integer(hint)
                self.pinned.append(sympy.Eq(e, hint))
                return self.canon[e]
        except Exception:  # noqa: BLE001
            pass
        for c in [*self._symbols_with_hint(hint, e), *self.canon_by_hint.setdefault(hint, [])]:
            try:
                same = self.shape_env._maybe_evaluate_static(sympy.Eq(e, c))
            except Exception:  # noqa: BLE001
                same = None
            if same is sympy.true:
                self.canon[e] = c
                self.pinned.append(sympy.Eq(e, c))
                return c
        self.canon_by_hint[hint].append(e)
        return e

    def _symbols_with_hint(self, hint: int, e: sympy.Expr) -> list[sympy.Symbol]:
        """The ShapeEnv's backed symbols holding ``hint``, except those it replaces: candidates to
        spell ``e`` by (its own too: a guard makes ``Min(s0, s1)`` ``s1``). Only symbols the trace
        already names (its inputs are named first): a ShapeEnv shared by a forward and a backward
        graph knows the forward's input extents, which no input of the backward binds (irfft's
        backward spelled its ``s0//2 + 1`` as the forward's input length; no guard could check it)."""
        env = self.shape_env
        return [s for s, v in symbol_values(env).items()
                if s in self.symbols and s not in env.replacements and _int_or_none(v) == hint]

    def guards(self) -> list:
        """The ShapeEnv's guards in our symbols (stride-only ones dropped)."""
        out = []
        seen = set()  # two ShapeEnv guards may read the same in our symbols
        for g in self.shape_env.guards:
            if layout_only(g, self.shape_env):
                continue
            e = self.sym(g.expr)
            if isinstance(e, sympy.core.relational._Inequality) and e.lhs.is_number and not e.rhs.is_number:
                e = e.reversed  # one spelling: ``s2 > 1``, which the ShapeEnv also makes as ``1 < s2``
            if e is sympy.true or e in seen:
                continue
            seen.add(e)
            out.append(e)
        for eq in self.pinned:  # in our symbols, each side spelled as it is (no canonical() of its own)
            lhs, rhs = (self._ours(x) for x in (eq.lhs, eq.rhs))
            g = sympy.Eq(lhs, rhs)
            if g is not sympy.true and g not in seen:
                seen.add(g)
                out.append(g)
        theirs = {v: k for k, v in self.symbols.items()} if self.assumed else {}
        for g in self.assumed:  # ``s != 1`` of a symbol the ShapeEnv keeps >= 2 (a tensor dim's) says nothing
            lhs = g.lhs if isinstance(g, sympy.Ne) and g.rhs == 1 and isinstance(g.lhs, sympy.Symbol) else None
            vr = self.shape_env.var_to_range.get(theirs.get(lhs)) if lhs is not None else None
            if vr is not None and getattr(vr.lower, "is_number", False) and vr.lower >= 2:
                continue
            if g is not sympy.true and g not in seen:
                seen.add(g)
                out.append(g)
        return out

    def _ours(self, e: Any) -> Any:
        e = self.shape_env.replace(e)
        subs = {s: self.symbols[s] for s in e.free_symbols if s in self.symbols}
        return e.xreplace(subs)


def _int_or_none(v: Any) -> int | None:
    try:
        return int(v)
    except (TypeError, ValueError):
        return None


def range_guards(shape_env: ShapeEnv, symbols: dict[sympy.Symbol, sympy.Symbol], trace: Trace) -> list[Any]:
    """The ShapeEnv's value ranges of the input symbols, as guards in our symbols.

    Only bounds that no guard already states are added; ``[-oo, oo]`` adds nothing.
    """
    have = set(trace.guards)
    bound = trace.symbols()
    out: list[Any] = []
    for theirs, ours in symbols.items():
        if ours not in bound:
            continue
        vr = shape_env.var_to_range.get(theirs)
        if vr is None:
            continue
        for bound_val, rel in ((vr.lower, sympy.Ge), (vr.upper, sympy.Le)):
            if not getattr(bound_val, "is_Integer", False) and not isinstance(bound_val, int):
                continue  # infinite
            g = rel(ours, int(bound_val))
            if g is sympy.true or g in have or _implied(g, have):
                continue
            out.append(g)
            have.add(g)
    return out


def _implied(g: Any, have: set) -> bool:
    """Cheap syntactic test: ``s >= b`` is implied by ``s > b2`` or ``s >= b2`` with b2 >= b-1 etc.
    (``Symbols.guards`` spells every inequality with its number on the right)."""
    s, b = g.lhs, int(g.rhs)
    for h in have:
        if not isinstance(h, sympy.core.relational.Relational) or h.lhs != s or not h.rhs.is_Integer:
            continue
        c = int(h.rhs)
        if isinstance(g, sympy.GreaterThan):
            if (isinstance(h, sympy.GreaterThan) and c >= b) or (isinstance(h, sympy.StrictGreaterThan) and c >= b - 1):
                return True
        elif (isinstance(h, sympy.LessThan) and c <= b) or (isinstance(h, sympy.StrictLessThan) and c <= b + 1):
            return True
    return False
