"""Extraction: tiny hand-made e-graphs, random e-graph fuzz, and the ILP fallback.

The tiny cases are serialized e-graphs in egglog's egraph-serialize JSON format
(``nodes`` with ``op``/``children`` (node ids)/``eclass``/``cost``, ``root_eclasses``,
``class_data``), read through ``EGraphView.from_json`` exactly as the engine reads
egglog's output. Each case says in its comment what it exercises. Costs come from
the ``cost`` field of each node.
"""

from __future__ import annotations

import itertools
import json
import random
import time
import tracemalloc
from pathlib import Path

import pytest
from satfuse.engine.egraph import EGraphView
from satfuse.engine.extract import (
    EPS,
    EXTRACTORS,
    ExtractionError,
    check,
    dag_cost,
    extract,
    find_cycle,
    greedy_dag,
    ilp,
    reachable,
    tree_cost,
)

pytest.importorskip("scipy")


# --------------------------------------------------------------------------- building serialized e-graphs


def serialized(classes: dict[str, list[tuple[str, list[str], float]]], roots: list[str]) -> dict:
    """egraph-serialize JSON for ``{class: [(op, [child classes], cost), ...]}``.

    Node ids are ``<class>.<k>``; a child is referred to by the first node of its class
    (egglog's serializer also names one node of the child class)."""
    nodes = {}
    for cid, ns in classes.items():
        for k, (op, kids, cost) in enumerate(ns):
            nodes[f"{cid}.{k}"] = {"op": op, "children": [f"{c}.0" for c in kids], "eclass": cid, "cost": cost,
                                   "subsumed": False}
    return {"nodes": nodes, "root_eclasses": list(roots), "class_data": {c: {"type": "T"} for c in classes}}


def load(classes: dict, roots: list[str]) -> tuple[EGraphView, list[str], dict[str, float]]:
    data = serialized(classes, roots)
    view = EGraphView.from_json(data)
    cost = {nid: float(n["cost"]) for nid, n in data["nodes"].items()}
    return view, list(data["root_eclasses"]), cost


def ops(view: EGraphView, roots: list[str], choice: dict[str, str]) -> dict[str, str]:
    """class -> chosen op, for the classes the program uses."""
    return {c: view.nodes[choice[c]].op for c in reachable(view, roots, choice)}


def both(view, roots, cost):
    """(greedy choice, ILP choice), both checked."""
    g = greedy_dag(view, roots, cost)
    check(view, roots, g)
    i, note = ilp(view, roots, cost, timeout=10)
    assert note == "optimal", note
    check(view, roots, i)
    return g, i


# --------------------------------------------------------------------------- tiny hand-made cases


def test_self_loop_is_never_chosen():
    # Exercises: a class whose cheapest node refers to its own class (A = f(A), cost 0,
    # like x = x * 1 after a rewrite); the only acyclic choice is the expensive leaf.
    view, roots, cost = load({
        "R": [("g", ["A"], 1)],
        "A": [("f", ["A"], 0), ("leaf", [], 10)],
    }, ["R"])
    for choice in both(view, roots, cost):
        assert ops(view, roots, choice) == {"R": "g", "A": "leaf"}
        assert find_cycle(view, roots, choice) is None
        assert dag_cost(view, roots, choice, cost) == 11


def test_cycle_through_another_class():
    # Exercises: a two-class cycle A -> B -> A where both cheap nodes point at each other
    # (A = f(B), B = g(A), cost 1 each); the best acyclic program breaks the cycle at the
    # cheaper leaf: A = f(B), B = bleaf (1 + 50) beats A = aleaf (100).
    view, roots, cost = load({
        "A": [("f", ["B"], 1), ("aleaf", [], 100)],
        "B": [("g", ["A"], 1), ("bleaf", [], 50)],
    }, ["A"])
    for choice in both(view, roots, cost):
        assert ops(view, roots, choice) == {"A": "f", "B": "bleaf"}
        assert dag_cost(view, roots, choice, cost) == 51


def test_cycle_through_three_classes_with_root_inside():
    # Exercises: a three-class cycle R -> A -> B -> R with the root on the cycle and
    # zero-cost cycle edges (a tree-cost fixpoint would happily close the loop).
    view, roots, cost = load({
        "R": [("r", ["A"], 0), ("rleaf", [], 30)],
        "A": [("a", ["B"], 0), ("aleaf", [], 20)],
        "B": [("b", ["R"], 0), ("bleaf", [], 10)],
    }, ["R"])
    for choice in both(view, roots, cost):
        assert find_cycle(view, roots, choice) is None
        assert ops(view, roots, choice) == {"R": "r", "A": "a", "B": "bleaf"}


def test_check_rejects_a_cyclic_choice():
    # Exercises: the validator itself: a hand-written cyclic choice must be refused, as
    # must a choice that is not closed or picks a node of another class.
    view, roots, cost = load({
        "A": [("f", ["B"], 1), ("aleaf", [], 100)],
        "B": [("g", ["A"], 1), ("bleaf", [], 50)],
    }, ["A"])
    with pytest.raises(ExtractionError, match="cycle"):
        check(view, roots, {"A": "A.0", "B": "B.0"})
    with pytest.raises(ExtractionError, match="no choice"):
        check(view, roots, {"A": "A.0"})
    with pytest.raises(ExtractionError, match="belongs to"):
        check(view, roots, {"A": "B.1"})
    check(view, roots, {"A": "A.0", "B": "B.1"})


def test_no_acyclic_term_is_an_error():
    # Exercises: a root whose only node is a self-loop has no program at all: both
    # extractors must say so rather than return a cycle.
    view, roots, cost = load({"A": [("f", ["A"], 1)]}, ["A"])
    with pytest.raises(ExtractionError, match="no finite-cost acyclic term"):
        greedy_dag(view, roots, cost)
    with pytest.raises(ExtractionError):
        ilp(view, roots, cost)


def test_shared_class_is_paid_once():
    # Exercises: a shared DAG. R = f(S, T) with S = g(A), T = k(A) sharing A (cost 10),
    # versus an unshared R = h(U) with U cost 15. Tree cost: f-branch 1+11+11 = 23 > 16,
    # so a tree extractor picks h; DAG cost: 1+1+1+10 = 13 < 16, so greedy-dag (which
    # pays A once) picks f, and its tree cost (23) differs from its DAG cost (13).
    view, roots, cost = load({
        "R": [("f", ["S", "T"], 1), ("h", ["U"], 1)],
        "S": [("g", ["A"], 1)],
        "T": [("k", ["A"], 1)],
        "A": [("a", [], 10)],
        "U": [("u", [], 15)],
    }, ["R"])
    for choice in both(view, roots, cost):
        assert ops(view, roots, choice)["R"] == "f"
        assert dag_cost(view, roots, choice, cost) == 13
        assert tree_cost(view, roots, choice, cost) == 23
    unshared = {"R": "R.1", "U": "U.0"}
    assert dag_cost(view, roots, unshared, cost) == tree_cost(view, roots, unshared, cost) == 16


def test_same_child_twice_counts_once():
    # Exercises: one node using the same class twice (x * x): DAG cost counts x once,
    # tree cost twice.
    view, roots, cost = load({"R": [("mul", ["X", "X"], 1)], "X": [("x", [], 7)]}, ["R"])
    g, _ = both(view, roots, cost)
    assert dag_cost(view, roots, g, cost) == 8
    assert tree_cost(view, roots, g, cost) == 15


def test_ilp_beats_greedy_when_sharing_is_not_local():
    # Exercises: greedy's blind spot. R = f(X, Y); X and Y can each either be a leaf
    # (cost 5) or reuse a common A (cost 7) through a cost-1 node. Per class the leaf
    # looks cheaper (5 < 8), so greedy pays 1+5+5 = 11; sharing A costs 1+1+1+7 = 10.
    view, roots, cost = load({
        "R": [("f", ["X", "Y"], 1)],
        "X": [("p", ["A"], 1), ("xleaf", [], 5)],
        "Y": [("q", ["A"], 1), ("yleaf", [], 5)],
        "A": [("a", [], 7)],
    }, ["R"])
    g, i = both(view, roots, cost)
    assert dag_cost(view, roots, g, cost) == 11
    assert dag_cost(view, roots, i, cost) == 10
    assert ops(view, roots, i) == {"R": "f", "X": "p", "Y": "q", "A": "a"}
    ex = extract(view, roots, cost, method="ilp")
    assert ex.dag_cost == 10 and ex.note == "optimal"


def test_several_roots_share_their_classes():
    # Exercises: two roots (an output and a write-back) using one expensive class: it
    # is paid once across roots.
    view, roots, cost = load({
        "O": [("Out", ["V"], 0)],
        "W": [("WriteBack", ["V"], 0)],
        "V": [("v", [], 9)],
    }, ["O", "W"])
    for choice in both(view, roots, cost):
        assert dag_cost(view, roots, choice, cost) == 9


def test_unknown_extractor_is_named():
    view, roots, cost = load({"A": [("a", [], 1)]}, ["A"])
    with pytest.raises(ExtractionError, match="unknown extractor 'tree'.*greedy-dag"):
        extract(view, roots, cost, method="tree")
    assert {"greedy-dag", "ilp"} <= set(EXTRACTORS)
    assert all({"optimal_for", "bench"} <= set(m) for m in EXTRACTORS.values())


def test_analysis_and_subsumed_rows_are_not_choices():
    # Exercises: the JSON side: analysis rows (shape/ext/...) and subsumed nodes must not
    # be offered to the extractor.
    data = serialized({"A": [("a", [], 1), ("b", [], 0)], "S": [("DNil", [], 1)]}, ["A"])
    data["nodes"]["A.1"]["subsumed"] = True
    data["nodes"]["S.1"] = {"op": "shape", "children": ["A.0"], "eclass": "S", "cost": 1.0, "subsumed": False}
    view = EGraphView.from_json(data)
    assert view.classes["A"] == ["A.0"] and view.classes["S"] == ["S.0"]
    assert view.shape_of == {"A": "S"}


def test_a_class_egglog_serialized_as_a_placeholder_is_never_chosen():
    # A class whose only term was a helper the cleanup deleted (a ``bcast`` that an analysis stopped
    # by its growth guard never resolved) is serialized as one "[...]" node: no term, so no node
    # using it may be chosen (one was, and decoding it raised IndexError).
    view, roots, cost = load({"A": [("Expand", ["S"], 0), ("Copy", ["B"], 5)], "B": [("b", [], 1)],
                              "S": [("[...]", [], 0)]}, ["A"])
    assert "S" not in view.classes
    for choice in both(view, roots, cost):
        assert ops(view, roots, choice) == {"A": "Copy", "B": "b"}


# --------------------------------------------------------------------------- random e-graph fuzz


def random_egraph(seed: int, n_classes: int = 8, max_nodes: int = 3, max_kids: int = 3,
                  back_edge: float = 0.35) -> tuple[EGraphView, list[str], dict[str, float]]:
    """A random e-graph that always has an acyclic program, and usually has cycles too."""
    return load(*random_classes(seed, n_classes, max_nodes, max_kids, back_edge))


def random_classes(seed: int, n_classes: int = 8, max_nodes: int = 3, max_kids: int = 3,
                   back_edge: float = 0.35) -> tuple[dict[str, list], list[str]]:
    """:func:`random_egraph`'s classes and roots.

    Class i's first node only uses classes < i (so an acyclic term exists); its other
    nodes use any class with probability ``back_edge`` of pointing at a class >= i
    (cycles, self-loops included). Costs are small integers, zeros included."""
    rng = random.Random(seed)
    classes: dict[str, list] = {}
    for i in range(n_classes):
        ns = []
        for k in range(rng.randint(1, max_nodes)):
            nk = rng.randint(0, max_kids) if i else 0
            if k == 0:
                kids = [f"c{rng.randrange(i)}" for _ in range(nk)] if i else []
            else:
                kids = [f"c{rng.randrange(i, n_classes) if rng.random() < back_edge or i == 0 else rng.randrange(i)}"
                        for _ in range(nk)]
            ns.append((f"op{k}", kids, float(rng.randint(0, 20))))
        classes[f"c{i}"] = ns
    roots = sorted({f"c{rng.randrange(n_classes // 2, n_classes)}" for _ in range(rng.randint(1, 3))})
    return classes, roots


def brute_force(view: EGraphView, roots: list[str], cost: dict[str, float]) -> float:
    """The exact minimum DAG cost over all acyclic choices (tiny graphs only)."""
    cls = sorted(view.classes)
    best = float("inf")
    for combo in itertools.product(*(view.classes[c] for c in cls)):
        choice = dict(zip(cls, combo))
        if find_cycle(view, roots, choice) is None:
            best = min(best, dag_cost(view, roots, choice, cost))
    return best


@pytest.mark.parametrize("seed", range(60))
def test_fuzz_ilp_is_exact_and_never_beaten(seed):
    view, roots, cost = random_egraph(seed, n_classes=6)
    g, i = both(view, roots, cost)
    gc, ic = dag_cost(view, roots, g, cost), dag_cost(view, roots, i, cost)
    assert ic <= gc + EPS, f"greedy ({gc}) beat ILP ({ic})"
    assert ic == pytest.approx(brute_force(view, roots, cost))
    assert dag_cost(view, roots, g, cost) <= tree_cost(view, roots, g, cost) + EPS


@pytest.mark.parametrize("seed", range(30))
def test_fuzz_larger_graphs(seed):
    view, roots, cost = random_egraph(1000 + seed, n_classes=60, max_nodes=4, back_edge=0.5)
    g, i = both(view, roots, cost)
    assert dag_cost(view, roots, i, cost) <= dag_cost(view, roots, g, cost) + EPS
    for method in EXTRACTORS:
        ex = extract(view, roots, cost, method=method)
        check(view, roots, ex.choice)
        assert ex.dag_cost <= tree_cost(view, roots, ex.choice, cost) + EPS


def test_ilp_timeout_falls_back_to_greedy_with_a_note():
    # Exercises: the time limit. A graph big enough that HiGHS cannot even finish its
    # presolve in a millisecond: the greedy answer comes back, and the note says why.
    view, roots, cost = random_egraph(7, n_classes=3000, max_nodes=4, max_kids=3, back_edge=0.5)
    greedy = greedy_dag(view, roots, cost)
    choice, note = ilp(view, roots, cost, timeout=1e-3, warm=greedy)
    assert "time" in note, note
    check(view, roots, choice)
    ex = extract(view, roots, cost, method="ilp", timeout=1e-3)
    check(view, roots, ex.choice)
    assert ex.note and ex.note != "optimal"
    assert ex.dag_cost <= dag_cost(view, roots, greedy, cost) + EPS


@pytest.mark.parametrize("method", ["ilp", "hybrid"])
def test_the_time_limit_bounds_the_whole_extraction(method):
    """``timeout`` is hard for the whole call: greedy, pruning and building the model come off
    the ILP's share, and HiGHS is abandoned at the deadline (scipy's one-time import, if this
    call paid it, is reported apart and is not part of the limit)."""
    view, roots, cost = random_egraph(7, n_classes=3000, max_nodes=4, max_kids=3, back_edge=0.5)
    walls = []
    for _ in range(3):  # the best of three: a 2-core machine's other work once made a 0.08 s call take 0.84 s
        t0 = time.perf_counter()
        ex = extract(view, roots, cost, method=method, timeout=0.2)
        wall = time.perf_counter() - t0 - ex.import_seconds
        assert ex.seconds <= wall + 1e-6
        check(view, roots, ex.choice)
        walls.append(wall)
        if wall < 0.2 * 1.1 + 0.6:  # slack for a loaded 2-core machine
            break
    assert min(walls) < 0.2 * 1.1 + 0.6, (walls, ex.note)


_FIRST_EXTRACTION = """
import json, sys
from bench.extraction import load
from satfuse.engine.extract import extract
assert "scipy" not in sys.modules
view, roots, cost = load(sys.argv[1])
first, again = (extract(view, roots, cost, method="hybrid", timeout=0.05) for _ in range(2))
print(json.dumps([[ex.choice, ex.note, ex.dag_cost, ex.import_seconds] for ex in (first, again)]))
"""


def test_a_process_first_extraction_gets_the_plan_a_later_one_does(tmp_path):
    """An extraction's answer does not depend on the process's history: scipy's import (0.3-0.7 s)
    is a one-time cost outside the time limit, so a fresh process's first extraction that needs
    the ILP, under a 50 ms limit, finds the ILP's answer as a later one does (counted against the
    limit, the import left it the greedy answer), and says what it waited for the import. Nor on
    its string hashes: under these two ``PYTHONHASHSEED`` values the greedy step numbered this
    e-graph's classes differently (a set's order) and pruned it to different remainders."""
    import os
    import subprocess
    import sys

    classes, roots = random_classes(49, n_classes=100, max_nodes=4, max_kids=3, back_edge=0.2)
    path = tmp_path / "egraph.json"
    path.write_text(json.dumps(serialized(classes, roots)))
    view, roots, cost = load(classes, roots)
    greedy = dag_cost(view, roots, greedy_dag(view, roots, cost), cost)
    runs = []
    for hash_seed in ("10", "18"):
        out = subprocess.run([sys.executable, "-c", _FIRST_EXTRACTION, str(path)], capture_output=True, text=True,
                             cwd=Path(__file__).parent.parent, timeout=120,
                             env={**os.environ, "PYTHONHASHSEED": hash_seed})
        assert out.returncode == 0, out.stderr
        (choice1, note1, cost1, waited1), (choice2, note2, cost2, waited2) = json.loads(out.stdout)
        assert (choice1, note1, cost1) == (choice2, note2, cost2)
        assert note1 == "optimal" and cost1 < greedy - EPS  # the ILP's answer, better than greedy's
        assert waited1 > 0 and waited2 == 0
        runs.append(choice1)
    assert runs[0] == runs[1]


# --------------------------------------------------------------------------- real programs


@pytest.mark.parametrize("name", ["ce_fwd_bwd", "adam_hand", "layer_norm"])
def test_ilp_on_captured_programs(name):
    """Saturated e-graphs of corpus programs with the built-in packs: both extractors give
    checked, acyclic programs, and the ILP is never worse than greedy."""
    from satfuse.engine import capture
    from satfuse.engine.optimize import optimize_trace
    from satfuse.rewrites import load_catalogue

    from tests.corpus import BY_NAME

    case = BY_NAME[name]
    cap = capture(case.fn, *case.make_inputs(), dynamic=case.dynamic)
    cat = load_catalogue()
    res = {ex: optimize_trace(cap.trace, cat.sources, cat.phases, hints=cap.symbol_hints, extractor=ex,
                              skip_unchanged=False) for ex in EXTRACTORS}
    for r in res.values():
        r.trace.lint()
    assert res["ilp"].extraction.dag_cost <= res["greedy-dag"].extraction.dag_cost + EPS
    assert res["ilp"].extraction.note == "optimal"


# --------------------------------------------------------------------------- extraction-gym and scale

GYM = Path(__file__).parent / "data" / "extraction_gym"


def test_default_extractor_is_within_one_percent_on_extraction_gym():
    """Small extraction-gym e-graphs (MIT, see the folder's README) against their proven
    optima: the default extractor's answers are checked and within 1 % (geomean)."""
    from bench.extraction import geomean, load

    optima = json.loads((GYM / "optima.json").read_text())
    ratios = []
    for name, ref in optima.items():
        view, roots, cost = load(GYM / name)
        ex = extract(view, roots, cost)
        check(view, roots, ex.choice)
        assert ex.dag_cost >= ref["cost"] - 1e-6, name  # nothing beats a proven optimum
        ratios.append(ex.dag_cost / ref["cost"])
    assert len(ratios) >= 5
    assert geomean(ratios) <= 1.01, ratios


@pytest.mark.parametrize("seed", range(20))
def test_fuzz_hybrid_is_valid_and_never_worse_than_greedy(seed):
    view, roots, cost = random_egraph(2000 + seed, n_classes=40, max_nodes=4, back_edge=0.5)
    g = extract(view, roots, cost, method="greedy-dag")
    h = extract(view, roots, cost, method="hybrid")
    check(view, roots, h.choice)
    assert h.dag_cost <= g.dag_cost + EPS


def test_greedy_memory_is_linear_on_a_long_chain():
    # Exercises: a 5,000-class dependency chain with a choice in every class. A dependency
    # set per class would hold 1.25 x 10^7 entries (about 1 GiB of dicts); the bit sets,
    # freed once their last user is done, keep the peak to a few MiB.
    n = 5_000
    classes = {"c0": [("leaf", [], 1.0)]}
    for i in range(1, n):
        classes[f"c{i}"] = [("f", [f"c{i - 1}"], 1.0), ("g", [f"c{i - 1}", "c0"], 2.0)]
    view, roots, cost = load(classes, [f"c{n - 1}"])
    tracemalloc.start()
    choice = greedy_dag(view, roots, cost)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    check(view, roots, choice)
    assert dag_cost(view, roots, choice, cost) == n
    assert peak < 16 * 2**20, f"{peak / 2**20:.0f} MiB"


def test_members_of_a_bitset_far_above_bit_zero():
    """``_members`` lists set bits highest first, the same from the trimmed span as from the whole
    int (extraction sums class costs in that order, so the order is part of the result)."""
    from satfuse.engine.extract import _members

    for bits in (1, 0b1011, 1 << 70_000 | 1 << 69_990, (1 << 5_000) | 0b110, (1 << 64) - 1):
        s = bin(bits)[2:]
        want = [len(s) - 1 - i for i, ch in enumerate(s) if ch == "1"]
        assert _members(bits) == want


def _chain_over_gadgets(n_chain: int, n_gadgets: int) -> dict:
    """A long chain of classes with one node each over ``n_gadgets`` copies of a choice greedy
    gets wrong: ``a`` has a cheap leaf (5) and a node (1) using ``x`` (5), which ``b`` uses anyway,
    so the DAG optimum takes the second (each gadget 7 instead of 11)."""
    classes: dict = {}
    tops = []
    for i in range(n_gadgets):
        classes[f"x{i}"] = [("x", [], 5.0)]
        classes[f"a{i}"] = [("leaf", [], 5.0), ("use", [f"x{i}"], 1.0)]
        classes[f"b{i}"] = [("b", [f"x{i}"], 1.0)]
        classes[f"f{i}"] = [("f", [f"a{i}", f"b{i}"], 0.0)]
        tops.append(f"f{i}")
    classes["c0"] = [("join", tops, 0.0)]
    for i in range(1, n_chain):
        classes[f"c{i}"] = [("step", [f"c{i - 1}"], 1.0)]
    return classes


def test_hybrid_enumerates_a_choice_under_a_large_fixed_part():
    """A 30,000-class program pruned around its greedy answer leaves one choice: the classes every
    answer reaches alike are left out of the exact step, which enumerates the choice (it was an ILP
    over every class, which ran out of its time limit with no answer on 10k-op GPT blocks)."""
    view, roots, cost = load(_chain_over_gadgets(30_000, 1), ["c29999"])
    g = extract(view, roots, cost, method="greedy-dag")
    h = extract(view, roots, cost, method="hybrid")
    check(view, roots, h.choice)
    assert g.dag_cost == 29_999 + 11
    assert h.dag_cost == 29_999 + 7, h.note
    assert "enumerated" in h.note


def test_hybrid_ilp_leaves_the_fixed_part_out():
    """Twenty independent choices (2**20 combinations) under a 5,000-class chain: the ILP gets a
    variable for the choices and what only they reach, and finds every gadget's optimum."""
    view, roots, cost = load(_chain_over_gadgets(5_000, 20), ["c4999"])
    h = extract(view, roots, cost, method="hybrid", timeout=20.0)
    check(view, roots, h.choice)
    assert h.dag_cost == 4_999 + 20 * 7, h.note
    assert h.note == "optimal"


@pytest.mark.parametrize("seed", range(8))
def test_fuzz_hybrid_with_a_fixed_part_is_valid_and_never_worse_than_greedy(seed):
    """Random e-graphs (back edges included) under a chain of one-node classes: what the fixed
    part leaves out of the exact step never makes its answer invalid or worse than greedy's."""
    classes, roots = random_classes(3000 + seed, n_classes=60, max_nodes=3, back_edge=0.4)
    classes["chain0"] = [("join", roots, 1.0)]
    for i in range(1, 300):
        classes[f"chain{i}"] = [("step", [f"chain{i - 1}"], 1.0)]
    view, top, cost = load(classes, ["chain299"])
    g = extract(view, top, cost, method="greedy-dag")
    h = extract(view, top, cost, method="hybrid")
    check(view, top, h.choice)
    assert h.dag_cost <= g.dag_cost + EPS
