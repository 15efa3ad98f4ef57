"""The bench scripts' one progress line: on a terminal, stderr shows what runs now, how many of
how many, and the seconds so far, redrawn in place; anywhere else (a pipe, a log file, pytest)
it writes nothing, so a script's output stays its report. While the line is shown, whatever the
script prints to the same terminal first clears it (the line is drawn again on the next step)."""

from __future__ import annotations

import sys
import time
from typing import Any, Callable, Iterable, Iterator, TextIO, TypeVar

T = TypeVar("T")


class Progress:
    """``with Progress("label", total) as p: ... p.step("what runs now") ...``"""

    def __init__(self, label: str, total: int | None = None, stream: TextIO | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.on = bool(getattr(self.stream, "isatty", lambda: False)())
        self.label, self.total, self.n = label, total, 0
        self.t0 = time.perf_counter()
        self.shown = 0  # width of the line on screen (0: none)
        self._stdout: Any = None

    def step(self, what: str = "") -> None:
        """Item ``n + 1`` starts: ``label [n+1/total] what (elapsed)``."""
        self.n += 1
        self.show(what)

    def show(self, what: str = "") -> None:
        if not self.on:
            return
        count = f"{self.n}/{self.total}" if self.total else str(self.n)
        line = f"{self.label} [{count}] {what} ({time.perf_counter() - self.t0:.0f}s)"
        self.stream.write("\r" + line.ljust(self.shown))
        self.stream.flush()
        self.shown = len(line)

    def clear(self) -> None:
        if self.on and self.shown:
            self.stream.write("\r" + " " * self.shown + "\r")
            self.stream.flush()
            self.shown = 0

    def __enter__(self) -> "Progress":
        if self.on and sys.stdout.isatty():  # the script's prints share the terminal: clear first
            self._stdout = sys.stdout
            sys.stdout = _Clearing(sys.stdout, self.clear)
        return self

    def __exit__(self, *exc: Any) -> None:
        self.clear()
        if self._stdout is not None:
            sys.stdout = self._stdout


class _Clearing:
    """stdout that clears the progress line before it writes."""

    def __init__(self, out: TextIO, clear: Callable[[], None]) -> None:
        self._out, self._clear = out, clear

    def write(self, s: str) -> int:
        self._clear()
        return self._out.write(s)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._out, name)


def progress(items: Iterable[T], label: str, name: Callable[[T], str] = str) -> Iterator[T]:
    """``items`` one by one, the line naming each (``name(item)``) while it runs."""
    items = list(items)
    with Progress(label, len(items)) as p:
        for it in items:
            p.step(name(it))
            yield it
