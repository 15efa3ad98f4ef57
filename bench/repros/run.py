"""Run one reduced repro: ``python bench/repros/run.py NAME.py``.

A repro file holds only the program the fuzzer reduced (``f``, ``inputs``, the sizes) under a header
saying what differed; this runner puts it between the fuzzer's own helpers (``mk``, ``ix``) and the
runner of the repro's mode, exactly as ``bench/fuzz.py`` writes a standalone repro, and runs it:
eager and satfuse side by side for each call. ``SATFUSE_FUZZ_DEVICE=cuda`` makes the inputs on a
GPU, as ``bench/fuzz.py --device cuda`` does.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import fuzz  # noqa: E402


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    path = Path(argv[0])
    if not path.exists():
        path = Path(__file__).parent / argv[0]
    body = path.read_text()
    m = re.match(r"# fuzz repro \((\w+)\)", body)
    if m is None:
        print(f"error: {path}: not a fuzz repro (no '# fuzz repro (MODE)' header)", file=sys.stderr)
        return 2
    source = fuzz.header() + fuzz.HELPERS + "\n\n" + body + fuzz.MAIN.replace("{runner}", fuzz.RUNNERS[m.group(1)])
    exec(compile(source, str(path), "exec"), {"__name__": "__main__"})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
