"""bench/'s one progress line: drawn in place on a terminal, nothing anywhere else (issue 20)."""

from __future__ import annotations

import io

from bench.progress import Progress, progress


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_is_silent_off_a_terminal(capsys):
    assert list(progress(["a", "b"], "label")) == ["a", "b"]
    out = capsys.readouterr()
    assert out.out == "" and out.err == ""


def test_progress_redraws_one_line_and_clears_it_on_a_terminal():
    tty = _Tty()
    with Progress("bench/x.py", 2, stream=tty) as bar:
        bar.step("first")
        bar.step("second")
    text = tty.getvalue()
    assert "\n" not in text  # one line, redrawn with \r
    assert "bench/x.py [1/2] first" in text and "bench/x.py [2/2] second" in text
    assert text.endswith("\r") and bar.shown == 0  # cleared at the end
