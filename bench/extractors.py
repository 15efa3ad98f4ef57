"""Extractors on real programs: greedy-DAG vs exact ILP, same e-graph, same cost model.

    python bench/extractors.py [--target nvfuser|eager] [--json OUT.jsonl] [--save-egraphs DIR]

For each small corpus-like program (bench/programs.py ``SMALL``): capture, saturate with
the built-in catalogue (whatever packs ``rules/`` holds), serialize once, then run every
extractor of ``EXTRACTORS`` marked ``bench`` on that one e-graph and print a table:

    program, e-nodes, greedy DAG cost, ILP DAG cost, ILP/greedy, greedy ms, ILP ms

Costs are the extraction cost model's bytes-equivalents (not the plan-level bytes of
bench/run.py). ``--json`` writes one record per (program, extractor) with DAG cost, tree
cost, seconds and note; ``--save-egraphs`` keeps each serialized e-graph (egraph-serialize
JSON with the root classes and per-node costs filled in) as a corpus for extractor work.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from satfuse.engine import capture  # noqa: E402
from satfuse.engine.costs import CostModel  # noqa: E402
from satfuse.engine.egraph import EGraphView  # noqa: E402
from satfuse.engine.extract import EXTRACTORS, class_infos, extract, node_costs  # noqa: E402
from satfuse.engine.session import Session  # noqa: E402
from satfuse.rewrites import load_catalogue  # noqa: E402

from bench.programs import SMALL, Program  # noqa: E402


def egraph_of(prog: Program, target: str, cat) -> tuple[dict, EGraphView, list[str], dict[str, float]]:
    """Capture, saturate and serialize one program: (json, view, root classes, node costs)."""
    cap = capture(prog.fn, *prog.inputs("meta"))
    trace, hints = cap.trace, cap.symbol_hints
    sess = Session(cat.sources)
    enc = sess.add_trace(trace)
    sess.saturate(cat.phases)
    data, roots, input_class = sess.serialize_program(enc, trace.inputs).parse()
    view = EGraphView.from_json(data)
    infos = class_infos(view, hints, set(input_class.values()))
    cost = node_costs(view, CostModel(target, hints), infos)
    return data, view, roots, cost


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--target", choices=["nvfuser", "eager"], default="nvfuser", help="cost model (default nvfuser)")
    ap.add_argument("--timeout", type=float, default=10.0, help="ILP time limit in seconds (default 10)")
    ap.add_argument("--json", metavar="PATH", help="write one JSON record per (program, extractor) to PATH")
    ap.add_argument("--save-egraphs", metavar="DIR", help="save each serialized e-graph (with costs) to DIR")
    args = ap.parse_args(argv)
    cat = load_catalogue()
    import scipy.optimize  # noqa: F401 - imported before timing, so the first ILP does not pay for it

    methods = [m for m, meta in EXTRACTORS.items() if meta.get("bench")]
    print(f"# extractors on real programs: target={args.target}, packs: "
          f"{', '.join(sorted({r.pack for r in cat.rules})) or '(none: lang.egg only)'}, phases: {cat.phases}")
    head = f"{'program':<12} {'e-nodes':>8} {'greedy cost':>14} {'ILP cost':>14} {'ratio':>7} {'greedy ms':>10} {'ILP ms':>9}  note"
    print(head)
    print("-" * len(head))
    records = []
    for prog in SMALL:
        data, view, roots, cost = egraph_of(prog, args.target, cat)
        res = {}
        for m in methods:
            t0 = time.perf_counter()
            ex = extract(view, roots, cost, method=m, timeout=args.timeout)
            res[m] = (ex, time.perf_counter() - t0)
            records.append({"program": prog.name, "size": prog.size, "target": args.target, "extractor": m,
                            "enodes": len(view.nodes), "dag_cost": ex.dag_cost, "tree_cost": ex.tree_cost,
                            "seconds": res[m][1], "note": ex.note})
        g, i = res["greedy-dag"], res["ilp"]
        ratio = i[0].dag_cost / g[0].dag_cost if g[0].dag_cost else float("nan")
        print(f"{prog.name:<12} {len(view.nodes):>8} {g[0].dag_cost:>14,.1f} {i[0].dag_cost:>14,.1f} {ratio:>7.4f} "
              f"{g[1] * 1e3:>10.2f} {i[1] * 1e3:>9.2f}  {i[0].note}")
        if args.save_egraphs:
            out = Path(args.save_egraphs)
            out.mkdir(parents=True, exist_ok=True)
            data = dict(data, root_eclasses=roots)
            for nid, c in cost.items():
                data["nodes"][nid]["cost"] = c
            (out / f"{prog.name}.{args.target}.json").write_text(json.dumps(data))
    print("\nratio = ILP cost / greedy cost (<= 1: the ILP is exact, greedy is a heuristic); "
          "ILP ms includes the greedy run it falls back to")
    if args.json:
        with open(args.json, "w") as f:
            for r in records:
                f.write(json.dumps(r) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
