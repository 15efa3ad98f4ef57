"""The plan cache: a bounded list of (guard prologue, plan) pairs.

A call runs the first plan whose guards accept the inputs. When none does, the
caller's ``compile`` builds a plan for the new case (re-capture + optimize + lower);
when the bound is reached the cache raises :class:`CacheLimitError` or answers
"run eagerly", as configured: it never runs a plan whose guards failed.

Guard checks are the generated prologues of ``guards.py`` (plain Python, no sympy on
the hot path). The cache counts hits, misses, compiles and eager fallbacks, and times
every guard check (``guard_ns``), so ``stats()['guard_us_per_call']`` is the price a
call pays before any kernel runs.

Public API: :class:`PlanCache`, :class:`Entry`, :class:`CacheLimitError`,
:class:`RecompileError`, :class:`RunEagerly`,
:func:`fast_prologue`.
"""

from __future__ import annotations

import time
import types
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import torch

from .guards import GuardError

ON_LIMIT = ("raise", "eager")


class CacheLimitError(RuntimeError):
    """No cached plan accepts the call and the cache is full (``on_limit="raise"``)."""


class RecompileLimitWarning(UserWarning):
    """The plan cache is full and calls no plan accepts now run eagerly (warned once per cache)."""


class RunEagerly(Exception):
    """Raised by a ``compile`` callback: this call runs eagerly (counted, nothing cached)."""


class RecompileError(RuntimeError):
    """No cached plan accepts the call and building a plan for it failed.

    The message names the guard each cached plan failed and the error of the new
    capture (e.g. the torch op that rejected the inputs). No input was touched.
    """


@dataclass(eq=False)
class Entry:
    """One cached plan. ``check(inputs)`` returns the symbol env or raises GuardError;
    ``plan`` is whatever the owner runs on a hit; ``key`` must equal the lookup key
    (the call's structure: pytree spec, non-tensor constants) for ``check`` to be tried."""

    check: Callable[[Sequence[Any]], Any]
    plan: Any
    key: Any = None
    hits: int = 0
    info: dict[str, Any] = field(default_factory=dict)


class PlanCache:
    """Bounded, ordered list of plans guarded by their prologues (see module doc)."""

    def __init__(self, max_plans: int = 8, on_limit: str = "eager", name: str = "plan cache") -> None:
        if on_limit not in ON_LIMIT:
            raise ValueError(f"on_limit must be one of {ON_LIMIT}, got {on_limit!r}")
        if max_plans < 1:
            raise ValueError(f"max_plans must be >= 1, got {max_plans}")
        self.max_plans = max_plans
        self.on_limit = on_limit
        self.name = name
        self.entries: list[Entry] = []
        self.calls = 0
        self.hits = 0
        self.misses = 0
        self.compiles = 0
        self.eager_calls = 0
        self.guard_checks = 0
        self.guard_ns = 0
        self.compile_seconds = 0.0
        self.warned = False

    # ------------------------------------------------------------------ lookup
    def lookup(self, inputs: Sequence[Any], key: Any = None) -> tuple[Entry | None, Any, list[tuple[int, Exception]]]:
        """(entry, env, failures): the first entry whose key matches and whose guards pass.

        ``failures`` lists (entry index, GuardError) of the entries tried; it is only read
        when nothing matched (to explain a recompile or an error).
        """
        failures: list[tuple[int, Exception]] = []
        t0 = time.perf_counter_ns()
        n = 0
        for i, e in enumerate(self.entries):
            if e.key is not key and e.key != key:
                failures.append((i, _KeyMismatch(e.key, key)))
                continue
            n += 1
            try:
                env = e.check(inputs)
            except GuardError as err:
                failures.append((i, err))
                continue
            self.guard_ns += time.perf_counter_ns() - t0
            self.guard_checks += n
            return e, env, failures
        self.guard_ns += time.perf_counter_ns() - t0
        self.guard_checks += n
        return None, None, failures

    def get(self, inputs: Sequence[Any], compile: Callable[[], Entry], key: Any = None) -> tuple[Entry | None, Any]:
        """The entry serving ``inputs`` (compiling one on a miss), or (None, None) when the
        cache is full and ``on_limit="eager"``: the caller then runs the program eagerly."""
        self.calls += 1
        e, env, failures = self.lookup(inputs, key)
        if e is not None:
            self.hits += 1
            e.hits += 1
            return e, env
        self.misses += 1
        if len(self.entries) >= self.max_plans:
            if self.on_limit == "eager":
                self.eager_calls += 1
                if not self.warned:
                    self.warned = True
                    warnings.warn(f"{self.name}: recompile limit reached (max_plans={self.max_plans}); calls that no "
                                  f"cached plan accepts now run eagerly. The guards that failed for this call:\n"
                                  f"{self.explain(failures)}", RecompileLimitWarning, stacklevel=4)
                return None, None
            raise CacheLimitError(f"{self.name}: all {len(self.entries)} plans (max_plans={self.max_plans}) reject "
                                  f"this call and on_limit='raise':\n{self.explain(failures)}")
        t0 = time.perf_counter()
        try:
            new = compile()
        except RunEagerly:
            self.compile_seconds += time.perf_counter() - t0
            self.eager_calls += 1
            return None, None
        except Exception as err:  # noqa: BLE001 - re-raised with the guards that failed
            self.compile_seconds += time.perf_counter() - t0
            why = f"\n{self.explain(failures)}" if failures else ""
            raise RecompileError(f"{self.name}: no cached plan accepts this call{why}\n"
                                 f"and building a plan for it failed: {err}") from err
        self.compile_seconds += time.perf_counter() - t0
        try:
            env = new.check(inputs)
        except GuardError as err:
            raise RecompileError(f"{self.name}: the plan just built for this call rejects it ({err}); "
                                 "this is a capture bug") from err
        new.hits += 1
        self.entries.append(new)
        self.compiles += 1
        return new, env

    # ------------------------------------------------------------------ reporting
    def explain(self, failures: list[tuple[int, Exception]]) -> str:
        return "\n".join(f"  plan {i}: {err}" for i, err in failures)

    def stats(self) -> dict[str, Any]:
        checks = max(self.calls - self.eager_calls, 0)
        return {
            "calls": self.calls,
            "hits": self.hits,
            "misses": self.misses,
            "compiles": self.compiles,
            "plans": len(self.entries),
            "eager_calls": self.eager_calls,
            "guard_checks": self.guard_checks,
            "guard_us_total": self.guard_ns / 1e3,
            "guard_us_per_call": (self.guard_ns / 1e3 / self.calls) if self.calls else 0.0,
            "guard_us_per_check": (self.guard_ns / 1e3 / self.guard_checks) if self.guard_checks else 0.0,
            "compile_seconds": self.compile_seconds,
            "checked_calls": checks,
        }

    def __len__(self) -> int:
        return len(self.entries)

    def clear(self) -> None:
        self.entries.clear()

    def __repr__(self) -> str:
        s = self.stats()
        return (f"<{self.name}: {s['plans']}/{self.max_plans} plans, {s['hits']} hits, {s['misses']} misses, "
                f"{s['compiles']} compiles, {s['eager_calls']} eager, {s['guard_us_per_call']:.2f} us/call in guards>")


class GuardMiss(GuardError):
    """A failed check of a :func:`fast_prologue`: cheap to raise; the readable message (the
    prologue's own, naming the guard and the values) is built only when shown."""

    def __init__(self, k: int, ctx: Any, explain: Callable[[int, Any], None]) -> None:
        super().__init__()
        self.k, self.ctx, self.explain = k, ctx, explain

    def __str__(self) -> str:
        try:
            self.explain(self.k, self.ctx)  # the prologue's own cold path: raises the readable GuardError
        except GuardError as e:
            return str(e)
        except Exception as e:  # noqa: BLE001 - a message must not fail
            return f"guard {self.k} failed ({type(e).__name__} while explaining it)"
        return f"guard {self.k} failed"


def fast_prologue(prologue: Any) -> Callable[[Sequence[Any]], Any]:
    """The same generated checks as ``prologue`` (a ``guards.Prologue``), compiled again with a
    ``fail`` that raises a bare :class:`GuardMiss`: a plan tried before the one that serves
    a call costs its checks, not a formatted error message."""
    src = getattr(prologue, "source", None)
    fn = getattr(prologue, "fn", None)
    if not src or fn is None:
        return prologue
    glob = dict(fn.__globals__)
    explain = glob.get("fail")
    if not callable(explain):
        return prologue

    def fail(k: int, ctx: Any) -> None:
        raise GuardMiss(k, ctx, explain)

    glob["fail"] = fail
    # the prologue's own code with these globals: the same checks, without compiling its text again
    # (an optimizer step's prologue is ~0.5 MB of source)
    return types.FunctionType(fn.__code__, glob, fn.__name__, fn.__defaults__, fn.__closure__)


def floats_as_tensors(inputs: Sequence[Any], positions: Sequence[int], names: Sequence[str]) -> list[Any]:
    """The plan's inputs for a call: at each position where capture made a Python float argument a
    0-d float64 tensor input (``Captured.float_inputs``), the call's float as one. Anything but a
    float there fails the guard (an int or a tensor is another program: it gets its own plan)."""
    out = list(inputs)
    for i in positions:
        x = out[i]
        if type(x) is not float:
            raise GuardError(f"guard failed: {names[i]} is a Python float (got {type(x).__name__})")
        out[i] = torch.tensor(x, dtype=torch.float64)
    return out


class _KeyMismatch(GuardError):
    """Built on every structural miss: the message is made only when shown."""

    def __init__(self, want: Any, got: Any) -> None:
        super().__init__()
        self.want, self.got = want, got

    def __str__(self) -> str:
        return f"call structure differs from the plan's: plan was built for {_short(self.want)}, got {_short(self.got)}"


def _short(k: Any) -> str:
    s = repr(k)
    return s if len(s) < 200 else s[:200] + "..."
