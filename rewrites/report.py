"""The coverage report: per rule, fire counts and programs, soundness status with its
counterexample, guards; as a table (for people) and as JSON (for tools)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from .differential import Counterexample
from .direct import RuleCounterexample


@dataclass
class RuleCoverage:
    name: str
    pack: str
    ruleset: str
    where: str
    kind: str
    doc: str
    guards: list[str]
    fires: int = 0
    programs: dict[str, int] = field(default_factory=dict)
    status: str = "dead"  # dead | sound | unsound | not forced | facts | error
    detail: str = ""
    checked: list[str] = field(default_factory=list)
    examples: int = 0
    direct_matches: int = 0  # matches judged on their own (both sides on the same operands)
    direct_cases: int = 0  # operand sets on which both sides ran
    counterexample: Counterexample | RuleCounterexample | None = None
    why: str = ""  # for a dead rule: its nearest partial match over the corpus (rewrites/why.py)

    @property
    def dead(self) -> bool:
        return self.fires == 0


@dataclass
class CoverageReport:
    rules: list[RuleCoverage]
    programs: list[dict[str, Any]]
    errors: list[str] = field(default_factory=list)
    seconds: float = 0.0
    soundness: bool = True

    def dead(self) -> list[RuleCoverage]:
        return [r for r in self.rules if r.dead]

    def unsound(self) -> list[RuleCoverage]:
        return [r for r in self.rules if r.status in ("unsound", "error")]

    @property
    def ok(self) -> bool:
        return not (self.dead() or self.unsound() or self.errors)

    def summary(self) -> dict[str, int]:
        out: dict[str, int] = {"rules": len(self.rules), "fired": sum(not r.dead for r in self.rules),
                               "dead": len(self.dead())}
        for st_ in ("sound", "unsound", "not forced", "facts", "error"):
            out[st_] = sum(r.status == st_ for r in self.rules)
        out["programs"] = len(self.programs)
        out["program errors"] = len(self.errors)
        return out

    def table(self, width: int = 60) -> str:
        rows = [f"{'rule':<40} {'fires':>6} {'progs':>5}  {'soundness':<36} guards"]
        for r in self.rules:
            snd = r.status
            if r.status in ("sound", "unsound"):
                snd += f" ({r.direct_matches}m x {r.direct_cases}c; {len(r.checked)}p x {r.examples}ex)"
            rows.append(f"{r.name:<40} {r.fires:>6} {len(r.programs):>5}  {snd:<36} {'; '.join(r.guards) or 'none'}")
        s = self.summary()
        rows.append("")
        rows.append(f"{s['rules']} rules on {s['programs']} programs: {s['fired']} fired, {s['dead']} dead (never fired); "
                    f"{s['sound']} sound, {s['unsound']} unsound, {s['not forced']} not forced, {s['facts']} facts-only, "
                    f"{s['error']} errors; {self.seconds:.1f} s")
        for r in self.dead():
            rows.append(f"DEAD     {r.where}: {r.name} never fired on the corpus")
            if r.why:
                rows.append("    why: " + r.why.replace("\n", "\n    "))
        for r in self.unsound():
            rows.append(f"{r.status.upper():<8} {r.where}: {r.name}: {r.detail}")
            if r.counterexample is not None:
                rows.append("    counterexample: " + str(r.counterexample).replace("\n", "\n    "))
        for e in self.errors:
            rows.append(f"ERROR    {e}")
        for p in self.programs:
            if p.get("extent_conflicts"):
                rows.append(f"NOTE     program {p['name']}: saturation equated different extents "
                            f"({', '.join(sorted(set(p['extent_conflicts'])))}): a rule equates values of different shapes")
        return "\n".join(rows)

    def to_json(self) -> dict[str, Any]:
        def rule(r: RuleCoverage) -> dict[str, Any]:
            d = asdict(r)
            d["dead"] = r.dead
            return d

        return {"summary": self.summary(), "seconds": self.seconds, "rules": [rule(r) for r in self.rules],
                "programs": self.programs, "errors": self.errors}

    def dumps(self) -> str:
        return json.dumps(self.to_json(), indent=1, default=str)
