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


def top_level_forms(text: str) -> Iterator[tuple[int, int, str]]:
    """(line, offset, form text) for each top-level s-expression; comments and strings respected."""
    depth, start, i, n = 0, -1, 0, len(text)
    while i < n:
        c = text[i]
        if c == ";":
            while i < n and text[i] != "\n":
                i += 1
            continue
        if c == '"':
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
        elif c == "(":
            if depth == 0:
                start = i
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                yield text.count("\n", 0, start) + 1, start, text[start:i + 1]
            if depth < 0:
                raise SexpError(f"line {text.count(chr(10), 0, i) + 1}: unbalanced ')'")
        i += 1
    if depth > 0:
        raise SexpError(f"line {text.count(chr(10), 0, start) + 1}: unclosed '(' (missing {depth} ')')")


_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[()]|[^\s()]+')


def _atom(t: str) -> Any:
    if t.startswith('"'):
        return Str(t[1:-1].replace('\\"', '"').replace("\\\\", "\\"))
    if re.fullmatch(r"-?\d+", t):
        return int(t)
    if re.fullmatch(r"-?(\d+\.\d*|\d*\.\d+)(e-?\d+)?|-?inf|NaN", t):
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
