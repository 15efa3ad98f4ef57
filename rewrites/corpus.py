"""The programs the harness runs rules on: the built-in corpus and user corpus files."""

from __future__ import annotations

import importlib.util
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import torch
import torch.utils._pytree as pytree
from satfuse.engine.session import RuleError


@dataclass
class Program:
    """A named program: a function, a factory of example inputs, and whether extents are symbolic."""

    name: str
    fn: Callable[..., Any]
    make_inputs: Callable[[], tuple]
    dynamic: bool | Sequence[int] = False





def _import_file(path: Path, modname: str) -> Any:
    spec = importlib.util.spec_from_file_location(modname, path)
    if spec is None or spec.loader is None:
        raise RuleError(f"{path}: cannot import")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[modname] = mod
    try:
        spec.loader.exec_module(mod)
    except Exception as e:  # a user's corpus file: say which one failed
        raise RuleError(f"{path}: importing the corpus failed: {type(e).__name__}: {e}") from e
    return mod


def _programs_of(mod: Any, path: Path) -> list[Program]:
    out: list[Program] = []
    if hasattr(mod, "CASES"):
        for c in mod.CASES:
            if isinstance(c, (tuple, list)):
                out.append(Program(c[0], c[1], c[2], c[3] if len(c) > 3 else False))
            else:
                out.append(Program(c.name, c.fn, c.make_inputs, getattr(c, "dynamic", False)))
    elif hasattr(mod, "program") and hasattr(mod, "example_inputs"):
        out.append(Program(path.stem, mod.program, lambda: tuple(mod.example_inputs()), getattr(mod, "dynamic", False)))
    else:
        raise RuleError(f"{path}: a corpus file defines CASES (a list of Case or (name, fn, make_inputs[, dynamic])) "
                        "or `program` and `example_inputs()`")
    return out


def load_corpus(paths: Iterable[str | Path] = (), builtin: bool = True) -> list[Program]:
    """The built-in corpus (``satfuse.rewrites.programs``, shipped with the package) plus user
    corpus files or folders of them."""
    files: list[Path] = []
    out: list[Program] = []
    seen: set[str] = set()
    if builtin:
        from . import programs

        out = _programs_of(programs, Path(programs.__file__))
        seen = {p.name for p in out}
    for q in paths:
        q = Path(q)
        if q.is_dir():
            files += sorted(f for f in q.glob("*.py") if not f.name.startswith("_"))
        elif q.exists():
            files.append(q)
        else:
            raise RuleError(f"{q}: no such corpus file or folder")
    for i, f in enumerate(files):
        mod = _import_file(f, f"_satfuse_corpus_{i}_{re.sub(r'[^A-Za-z0-9_]', '_', f.stem)}")
        for prog in _programs_of(mod, f):
            name = prog.name if prog.name not in seen else f"{f.stem}.{prog.name}"
            seen.add(name)
            prog.name = name
            out.append(prog)
    return out


def flat_inputs(inputs: tuple) -> list[Any]:
    leaves, _ = pytree.tree_flatten((inputs, {}))
    return [x for x in leaves if isinstance(x, (torch.Tensor, int, float, bool))]
