"""The one s-expression reader for ``.egg`` text: top-level forms with their lines (rule
packs, the schema of ``lang.egg``) and single forms as nested lists (rule sides)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterator


class SexpError(ValueError):
    """Unbalanced parentheses; the message starts with ``line N:``."""


@dataclass(frozen=True)
class Str:
    """A string literal (symbols are plain ``str``)."""

    value: str


#: what the form scanner stops at: a comment, a string (to its closing quote, or the end of an
#: unclosed one) or a parenthesis; everything between is skipped at C speed
_MARK = re.compile(r';[^\n]*|"(?:[^"\\]|\\[\s\S])*(?:"|\\?\Z)|[()]')


def top_level_forms(text: str) -> Iterator[tuple[int, int, str]]:
    """(line, offset, form text) for each top-level s-expression; comments and strings respected."""
    depth, start = 0, -1
    line, counted = 1, 0  # the line of offset ``counted``
    for m in _MARK.finditer(text):
        c = m.group()
        if c == "(":
            if depth == 0:
                start = m.start()
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                line += text.count("\n", counted, start)
                counted = start
                yield line, start, text[start:m.end()]
            if depth < 0:
                raise SexpError(f"line {text.count(chr(10), 0, m.start()) + 1}: unbalanced ')'")
    if depth > 0:
        raise SexpError(f"line {text.count(chr(10), 0, start) + 1}: unclosed '(' (missing {depth} ')')")


_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[()]|[^\s()]+')
_INT = re.compile(r"-?\d+")
_FLOAT = re.compile(r"-?(\d+\.\d*|\d*\.\d+)(e-?\d+)?|-?inf|NaN")


def _atom(t: str) -> Any:
    c = t[0]
    if c == '"':
        return Str(t[1:-1].replace('\\"', '"').replace("\\\\", "\\"))
    if not (c.isdigit() or c in "-.iN"):  # a symbol (most atoms): no number pattern can match
        return t
    if _INT.fullmatch(t):
        return int(t)
    if _FLOAT.fullmatch(t):
        return float(t.replace("NaN", "nan"))
    return t


def parse_sexp(text: str) -> Any:
    """One s-expression: lists, symbols (str), ints, floats and :class:`Str` literals."""
    toks = _TOKEN.findall(re.sub(r";[^\n]*", "", text))
    pos = 0

    def rec() -> Any:
        nonlocal pos
        t = toks[pos]
        pos += 1
        if t == "(":
            out = []
            while toks[pos] != ")":
                out.append(rec())
            pos += 1
            return out
        return _atom(t)

    return rec()
