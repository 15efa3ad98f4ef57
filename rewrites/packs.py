"""Rule packs: discovery, metadata and validation of ``.egg`` files.

A pack is one ``.egg`` file. It declares its rulesets at the top, and every rule in it
carries ``:ruleset`` and ``:name "pack/what-it-does"``. ``lang.egg`` (the term language)
is loaded first and holds no rewrite rules of its own beyond the analysis. A pack is
validated before egglog sees it (egglog panics on duplicate names and unknown
rulesets), then type-checked by loading it into a scratch e-graph; every problem is
reported as ``path:line: rule NAME: message``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Sequence

from satfuse.engine import log
from satfuse.engine.session import CLEANUP_RULESET, ENGINE_PACKS, RuleError, Session, Source
from satfuse.engine.sexp import SexpError, top_level_forms

#: the order in which phases run (a phase is a ruleset); unknown user rulesets run after these
PHASES = ["functionalize", "extents", "algebra", "gather"]
ANALYSIS = "analysis"
_RULE_FORMS = ("rewrite", "birewrite", "rule")
_RELATION = re.compile(r"\(relation\s+([^\s()]+)\s+\(([^()]*)\)")
_DELETED = re.compile(r"\(delete\s+\(([^\s()]+)")


@dataclass(frozen=True)
class RuleInfo:
    name: str
    pack: str
    ruleset: str
    path: str
    line: int
    kind: str
    text: str

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"


@dataclass
class Catalogue:
    """Everything saturation needs: sources in load order, phases, and rule metadata."""

    sources: list[Source]
    rules: list[RuleInfo] = field(default_factory=list)
    rulesets: list[str] = field(default_factory=list)

    @property
    def phases(self) -> list[str]:
        known = [p for p in PHASES if p in self.rulesets]
        return known + [r for r in self.rulesets if r not in PHASES and r not in (ANALYSIS, CLEANUP_RULESET)]

    def rule(self, name: str) -> RuleInfo | None:
        base = name[:-2] if name.endswith(("=>", "<=")) else name
        return next((r for r in self.rules if r.name == base), None)


def builtin_dir() -> Path:
    return Path(str(resources.files("satfuse.rules")))


def scan_pack(path: str, text: str, known_rulesets: set[str],
              language: bool = False) -> tuple[list[RuleInfo], list[str]]:
    """Rules and rulesets declared in a pack, validated without egglog. Its ``satfuse-cleanup``
    rules are not rewrite rules (they forget facts before extraction) and are not returned; a
    pack relation without one is an error (the language's are forgotten by rules/cleanup.egg)."""
    pack = Path(path).stem
    rules: list[RuleInfo] = []
    rulesets: list[str] = []
    relations: dict[str, tuple[int, int]] = {}  # name -> (line, arity)
    forgotten: set[str] = set()
    try:
        forms = list(top_level_forms(text))
    except SexpError as e:
        raise RuleError(f"{path}:{str(e)[5:]}") from None
    for line, _, form in forms:
        head = re.match(r"\(\s*([\w\-]+)", form)
        kind = head.group(1) if head else ""
        if kind == "ruleset":
            rs = form.split()[1].rstrip(")")
            rulesets.append(rs)
            continue
        if kind == "relation" and (m := _RELATION.match(form)):
            relations[m.group(1)] = (line, len(m.group(2).split()))
            continue
        if kind not in _RULE_FORMS:
            continue
        m_name = re.search(r':name\s+"([^"]*)"', form)
        m_rs = re.search(r":ruleset\s+([\w\-]+)", form)
        if not m_name:
            raise RuleError(f"{path}:{line}: a {kind} without :name; name it \"{pack}/what-it-does\"")
        name = m_name.group(1)
        if not m_rs:
            raise RuleError(f"{path}:{line}: rule {name!r}: no :ruleset (declare one with (ruleset NAME) and tag the rule)")
        rs = m_rs.group(1)
        if rs not in rulesets and rs not in known_rulesets:
            raise RuleError(f"{path}:{line}: rule {name!r}: unknown ruleset {rs!r}; declare (ruleset {rs}) at the top")
        if "/" not in name:
            raise RuleError(f"{path}:{line}: rule {name!r}: names are \"pack/what-it-does\"")
        if rs == CLEANUP_RULESET:
            forgotten.update(_DELETED.findall(form))
            continue
        rules.append(RuleInfo(name, pack, rs, path, line, kind, form))
    if not language:
        for name, (line, arity) in relations.items():
            if name not in forgotten:
                raise RuleError(
                    f"{path}:{line}: relation {name!r} ({arity} columns) is never forgotten: extraction does not "
                    f"read a pack's relations, so each needs a rule in ruleset {CLEANUP_RULESET} that deletes its "
                    f"rows before a session is serialized, named \"{pack}/forget-{name}\" (README, \"Helper "
                    f"relations\"; rules/gather.egg ends with one per relation it declares)")
    return rules, rulesets


def discover(dirs: Sequence[str | Path] = (), include_builtin: bool = True) -> list[Path]:
    files: list[Path] = []
    if include_builtin:
        not_packs = {"lang.egg", *(Path(e).name for e in ENGINE_PACKS)}
        files += sorted(p for p in builtin_dir().glob("*.egg") if p.name not in not_packs)
    for d in dirs:
        p = Path(d)
        if p.is_file():
            files.append(p)
        elif p.is_dir():
            files += sorted(p.glob("*.egg"))
        else:
            raise RuleError(f"{p}: no such rule file or folder")
    return files


def load_catalogue(dirs: Sequence[str | Path] = (), include_builtin: bool = True, check: bool = True) -> Catalogue:
    """Discover, validate and (with ``check``) type-check the rule packs."""
    lang_path = builtin_dir() / "lang.egg"
    lang = Source(str(lang_path), lang_path.read_text())
    _, lang_rulesets = scan_pack(lang.path, lang.text, set(), language=True)
    cat = Catalogue([lang], rulesets=list(lang_rulesets))
    seen: dict[str, RuleInfo] = {}
    for f in discover(dirs, include_builtin):
        text = f.read_text()
        rules, rulesets = scan_pack(str(f), text, set(cat.rulesets))
        for rs in rulesets:
            if rs not in cat.rulesets:
                cat.rulesets.append(rs)
        for r in rules:
            if r.name in seen:
                raise RuleError(f"{r.where}: rule {r.name!r} is already defined at {seen[r.name].where}")
            seen[r.name] = r
        cat.rules += rules
        cat.sources.append(Source(str(f), text))
    if check:
        Session(cat.sources)  # type errors, unknown constructors: RuleError with file:line
    log.rules.info("loaded %d rules from %d pack(s): %s", len(cat.rules), len(cat.sources) - 1,
                   ", ".join(s.path for s in cat.sources[1:]))
    return cat


@lru_cache(maxsize=8)
def builtin_catalogue() -> Catalogue:
    """The shipped packs, validated but not type-checked here: the first session that loads them
    does that with the same errors (``Session.load``), so a check would load them twice (~0.3 s
    of a first compile); ``tests/test_rules.py`` type-checks them."""
    return load_catalogue(check=False)
