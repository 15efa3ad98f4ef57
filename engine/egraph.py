"""A read-only view of egglog's serialized e-graph for extraction and decoding.

Analysis rows (shape, ext, dtype, ...) are split off: they are facts about classes,
not choices. What remains are the nodes an extractor may pick.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import sympy
from torch.utils._sympy.functions import FloorDiv, Max, Min, PythonMod

from .loader import HANDLES as HANDLE_OPS  # lang.egg's ``Ref`` and the loader's: names for classes, not terms
from .schema import ANALYSES, LIST_NIL, PRIMITIVE_SORTS, RELATIONS

ANALYSIS_OPS = ANALYSES | RELATIONS
#: the analyses extraction reads (a class's shape and dtype); the session may delete the others' rows
READ_BY_EXTRACTION = frozenset({"shape", "dtype"})
#: what egglog serializes for a class none of whose nodes it serialized (its only term was a helper
#: the cleanup deleted, such as a ``bcast`` a stopped analysis never resolved): no choice, no class
PLACEHOLDER = "[...]"
#: lang.egg's obligation relations: their rows are read (facts about classes the plan relies on)
OBLIGATION_OPS = frozenset({"obligation", "dim-obligation"})


@dataclass(slots=True)
class ENode:
    id: str
    op: str
    children: tuple[str, ...]  # child class ids
    eclass: str


@dataclass
class EGraphView:
    nodes: dict[str, ENode]
    classes: dict[str, list[str]]
    class_type: dict[str, str]
    shape_of: dict[str, str] = field(default_factory=dict)  # T class -> DL class
    dtype_of: dict[str, str] = field(default_factory=dict)  # T class -> dtype name
    #: rows of the obligation relations: (relation, argument classes)
    obligations: list[tuple[str, tuple[str, ...]]] = field(default_factory=list)
    _parents: dict[str, list[str]] | None = field(default=None, repr=False)

    @property
    def parents(self) -> dict[str, list[str]]:
        """class -> the nodes using it. Built on first use: only the harness's tools read it."""
        if self._parents is None:
            self._parents = self.parents_of(self.nodes)
        return self._parents

    def parents_of(self, nids: Any) -> dict[str, list[str]]:
        """class -> the nodes among ``nids`` that use it."""
        parents: dict[str, list[str]] = {}
        for nid in nids:
            for c in set(self.nodes[nid].children):
                parents.setdefault(c, []).append(nid)
        return parents

    @classmethod
    def from_json(cls, data: dict) -> "EGraphView":
        raw = data["nodes"]
        node_class = {nid: n["eclass"] for nid, n in raw.items()}
        class_type = {k: v.get("type", "") for k, v in data.get("class_data", {}).items()}
        facts = {c for c, t in class_type.items() if t.startswith("@")}  # each relation has its own @...Sort
        skip = ANALYSIS_OPS | HANDLE_OPS
        view = cls({}, {}, class_type)
        nodes = view.nodes
        classes = view.classes
        shape_of = view.shape_of
        dtype_class: dict[str, str] = {}
        for nid, n in raw.items():
            op = n["op"]
            ec = n["eclass"]
            if ec in facts:
                if op in OBLIGATION_OPS:
                    view.obligations.append((op, tuple(node_class[c] for c in n["children"])))
                continue  # a relation's row: a fact, not a term
            if op in skip:
                if op == "shape":
                    shape_of[node_class[n["children"][0]]] = ec
                elif op == "dtype":
                    dtype_class[node_class[n["children"][0]]] = ec
                continue
            if n.get("subsumed") or op.startswith("load-") or op == PLACEHOLDER:
                continue
            nodes[nid] = ENode(nid, op, tuple([node_class[c] for c in n["children"]]), ec)
            if ec in classes:
                classes[ec].append(nid)
            else:
                classes[ec] = [nid]
        view.dtype_of = {t: view.literal(c) for t, c in dtype_class.items() if c in classes}
        return view

    def literal(self, cid: str) -> Any:
        """Value of a primitive class (i64, f64, String, bool)."""
        (nid,) = self.classes[cid][:1]
        op = self.nodes[nid].op
        t = self.class_type.get(cid, "")
        if t == "i64":
            return int(op)
        if t == "f64":
            return float(op)
        if t == "bool":
            return op == "true"
        if t == "String":
            return _unquote(op)
        raise KeyError(f"class {cid} ({t}) is not a primitive")

    def is_primitive(self, cid: str) -> bool:
        return self.class_type.get(cid, "") in PRIMITIVE_SORTS


def _unquote(s: str) -> str:
    if len(s) >= 2 and s[0] == s[-1] == '"':
        return s[1:-1].replace('\\"', '"').replace("\\\\", "\\")
    return s


def dim_value(view: EGraphView, choice: dict[str, str], cid: str) -> Any:
    """Decode a Dim class (using the extractor's choice) into an int or sympy expr."""
    n = view.nodes[choice[cid]]
    if n.op == "Num":
        return view.literal(n.children[0])
    if n.op == "Sym":
        return sympy.Symbol(view.literal(n.children[0]), integer=True)
    a, b = (dim_value(view, choice, c) for c in n.children)
    sa, sb = sympy.sympify(a), sympy.sympify(b)
    out = {  # spelled as capture spells them (ir.torch_spelling): the IR compares extents by structure
        "DAdd": lambda: sa + sb,
        "DSub": lambda: sa - sb,
        "DMul": lambda: sa * sb,
        "DDiv": lambda: FloorDiv(sa, sb),
        "DMod": lambda: PythonMod(sa, sb),
        "DMin": lambda: Min(sa, sb),
        "DMax": lambda: Max(sa, sb),
    }[n.op]()
    return int(out) if out.is_Integer else out


def list_value(view: EGraphView, choice: dict[str, str], cid: str, item) -> tuple:
    out = []
    while True:
        n = view.nodes[choice[cid]]
        if n.op in LIST_NIL:
            return tuple(out)
        out.append(item(n.children[0]))
        cid = n.children[1]
