"""The built-in rule packs: every rule fires on the corpus, every corpus program still
equals eager after saturation and extraction, and the seed rewrites (002 CE gather,
001 split extents, 000 in-place copies) do what they are for.

One-line rule tests use ``prove(program, goal)``: the goal is an egglog ``check`` run on
the saturated e-graph of a captured program.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import pytest
import torch
import torch.utils._pytree as pytree
from satfuse.engine import capture
from satfuse.engine.interp import run_trace
from satfuse.engine.ir import Trace
from satfuse.engine.optimize import EngineResult, optimize_trace
from satfuse.engine.session import RuleError
from satfuse.rewrites import load_catalogue

from tests.corpus import BY_NAME, CASES, Case, ce_hand


@dataclass
class Run:
    case: Case
    trace: Trace
    hints: dict
    result: EngineResult
    seconds: float


@pytest.fixture(scope="module")
def cat():
    return load_catalogue()


@pytest.fixture(scope="module")
def runs(cat) -> dict[str, Run]:
    out = {}
    for case in CASES:
        cap = capture(case.fn, *case.make_inputs(), dynamic=case.dynamic)
        t0 = time.perf_counter()
        res = optimize_trace(cap.trace, cat.sources, cat.phases, target="nvfuser", hints=cap.symbol_hints)
        out[case.name] = Run(case, cap.trace, cap.symbol_hints, res, time.perf_counter() - t0)
    return out


def flat_inputs(inputs: tuple) -> list[Any]:
    leaves, _ = pytree.tree_flatten((inputs, {}))
    return [x for x in leaves if isinstance(x, (torch.Tensor, int, float, bool))]


def assert_same(a: Any, b: Any, what: str) -> None:
    if isinstance(a, torch.Tensor):
        assert isinstance(b, torch.Tensor), f"{what}: {type(b).__name__} instead of a tensor"
        assert a.shape == b.shape and a.dtype == b.dtype, f"{what}: {b.dtype}{list(b.shape)} vs {a.dtype}{list(a.shape)}"
        torch.testing.assert_close(b, a, equal_nan=True, rtol=1e-5, atol=1e-6, msg=lambda m: f"{what}: {m}")
    else:
        assert a == b, f"{what}: {b!r} vs {a!r}"


def check_against_eager(case: Case, plan: Trace) -> None:
    """Run ``plan`` through the interpreter and ``case.fn`` eagerly on the same fresh inputs."""
    ins = case.make_inputs()
    flat = flat_inputs(ins)
    outs, wbs = run_trace(plan, flat)
    eager_ins = case.make_inputs()
    ref = case.fn(*eager_ins)
    ref_flat = [r for r in pytree.tree_leaves(ref) if r is not None]
    got = [o for o in outs if o is not None]
    assert len(got) == len(ref_flat), f"{case.name}: {len(got)} outputs vs {len(ref_flat)}"
    for i, (a, b) in enumerate(zip(ref_flat, got)):
        assert_same(a, b, f"{case.name} output {i}")
    # mutated inputs: eager mutated its own copies; the plan returns write-backs
    for v, before, after in zip(plan.inputs, flat, flat_inputs(eager_ins)):
        if isinstance(after, torch.Tensor):
            assert_same(after, wbs.get(v.name, before), f"{case.name} buffer {v.name}")


def fired(res: EngineResult) -> dict[str, int]:
    out: dict[str, int] = {}
    for k, v in res.saturation.matches.items():
        if v:
            base = k[:-2] if k.endswith(("=>", "<=")) else k
            out[base] = out.get(base, 0) + v
    return out


# ------------------------------------------------------------------ packs


def test_packs_declare_rulesets_and_name_every_rule(cat):
    packs = {r.pack for r in cat.rules}
    assert {"functionalize", "extents", "algebra", "gather"} <= packs
    assert cat.phases == ["functionalize", "extents", "algebra", "gather"]
    for r in cat.rules:
        assert r.name.startswith(r.pack + "/"), r.where
        assert r.ruleset in (r.pack, "analysis"), f"{r.where}: {r.name} runs in {r.ruleset}"


def test_every_rule_has_a_comment(cat):
    """A one-line comment (math or what the helper derives) above each rule or its group."""
    texts = {s.path: s.text.splitlines() for s in cat.sources}
    for r in cat.rules:
        lines = texts[r.path]
        above = [ln.strip() for ln in lines[max(0, r.line - 12):r.line - 1]]
        assert any(ln.startswith(";") for ln in above), f"{r.where}: {r.name} has no comment above it"


# ------------------------------------------------------------------ coverage over the corpus


def test_every_builtin_rule_fires_on_the_corpus(cat, runs):
    """Every built-in rule matches some corpus program; the fire-count table is in the failure message
    only (nothing is printed into ``pytest -q``; ``python -m satfuse rules check`` prints it)."""
    per_rule: dict[str, dict[str, int]] = {r.name: {} for r in cat.rules}
    for name, run in runs.items():
        for rule, n in fired(run.result).items():
            if rule in per_rule:
                per_rule[rule][name] = n
    dead = [r.name for r in cat.rules if not per_rule[r.name]]
    table = "\n".join(f"  {r.name:<42} {sum(per_rule[r.name].values()):>5}  {len(per_rule[r.name]):>2}" for r in cat.rules)
    assert not dead, f"rules that never fired on the corpus: {dead}\nfire counts (matches, programs):\n{table}"


@pytest.mark.parametrize("name", [c.name for c in CASES])
def test_corpus_program_equals_eager_after_saturation(runs, name):
    run = runs[name]
    run.result.trace.lint()
    check_against_eager(run.case, run.result.trace)
    assert run.result.saturation.hit_limit == [] or "take_chain" in name, run.result.saturation.table()


@pytest.mark.parametrize("name", ["ce_torch", "ce_fwd_bwd", "adam_hand", "kv_cache", "split3_cat"])
def test_corpus_program_equals_eager_with_the_eager_cost_model(cat, name):
    case = BY_NAME[name]
    cap = capture(case.fn, *case.make_inputs(), dynamic=case.dynamic)
    res = optimize_trace(cap.trace, cat.sources, cat.phases, target="eager", hints=cap.symbol_hints)
    check_against_eager(case, res.trace)


# ------------------------------------------------------------------ seed 002: cross-entropy


def node_of(trace: Trace, op: str):
    return next(n for n in trace.nodes if n.op == op)


def test_ce_forward_gather_and_onehot_max_share_an_eclass(cat):
    """The saturated e-graph holds gather(log_softmax), take_along_axis on x and the one-hot
    masked max as one value (egglog `check`)."""
    cap = capture(ce_hand, *BY_NAME["ce_hand"].make_inputs())
    res = optimize_trace(cap.trace, cat.sources, cat.phases, keep_session=True, hints=cap.symbol_hints)
    tr = cap.trace
    g = node_of(tr, "gather")
    logp, idx = g.args[0].name, g.args[2].name
    sq = node_of(tr, "squeeze").out.name
    amax, log = node_of(tr, "amax").out.name, node_of(tr, "log").out.name
    n, c = tr.inputs[0].type.shape
    onehot = f'(Where (Eq (Iota (Num {c}) "i64" 1 2) ${idx}) ${logp} (CFloat -inf))'
    res.run([
        f"(check (= ${g.out.name} (Amax {onehot} (ICons 1 (INil)) 1)))",
        f"(check (= ${sq} (Amax {onehot} (ICons 1 (INil)) 0)))",
        f"(check (= ${g.out.name} (TakeAlongAxis ${logp} ${idx} 1)))",
        f"(check (= ${g.out.name} (Sub (Sub (TakeAlongAxis $x ${idx} 1) ${amax}) ${log})))",
    ], "ce")
    with pytest.raises(RuleError):  # the [N, C] log-probabilities are not the lookup
        res.run([f"(check (= ${g.out.name} ${logp}))"], "ce")


@pytest.mark.parametrize("name", ["ce_hand", "ce_torch", "ce_ignore", "ce_3d", "ce_3d_gather", "ce_dyn", "take_chain"])
def test_ce_forward_nvfuser_plan_has_no_gather_and_looks_up_an_input(runs, name):
    """nvFuser target: no gather (it never fuses); the lookup is take_along_axis on the
    program input, or the fused one-hot masked max."""
    plan = runs[name].result.trace
    ops = [n.op for n in plan.nodes]
    assert "gather" not in ops, plan
    takes = [n for n in plan.nodes if n.op == "take_along_axis"]
    inputs = {id(v) for v in plan.inputs}
    assert all(id(t.args[0]) in inputs for t in takes), plan
    if not takes:
        assert "iota" in ops and "where" in ops, plan


def test_ce_forward_nvfuser_no_full_size_intermediate_at_512x32768(cat):
    from satfuse.engine.costs import minimum_traffic, plan_traffic
    from satfuse.lowering import lower

    n, c = 512, 32768
    cap = capture(ce_hand, torch.empty(n, c, device="meta"), torch.empty(n, dtype=torch.long, device="meta"))
    res = optimize_trace(cap.trace, cat.sources, cat.phases, target="nvfuser", hints=cap.symbol_hints)
    plan = lower(res.trace, hints=cap.symbol_hints, executor="reference")
    tr = plan_traffic(plan.steps, res.trace, cap.symbol_hints)
    assert not [m for m in tr.intermediates() if m.bytes >= n * c], tr.table()
    assert tr.total <= 1.05 * minimum_traffic(res.trace, cap.symbol_hints).total
    assert any(t.op == "take_along_axis" and t.args[0] is res.trace.inputs[0] for t in res.trace.nodes), res.trace


def test_ce_eager_target_keeps_one_lookup_and_no_onehot(cat):
    """Eager cost model: gather and take_along_axis cost the same (one kernel each), and the
    one-hot form costs three [N, C] kernels, so the plan keeps a single lookup op."""
    cap = capture(ce_hand, *BY_NAME["ce_hand"].make_inputs())
    res = optimize_trace(cap.trace, cat.sources, cat.phases, target="eager", hints=cap.symbol_hints)
    ops = [n.op for n in res.trace.nodes]
    assert ops.count("gather") + ops.count("take_along_axis") == 1, res.trace
    assert "iota" not in ops, res.trace


def test_ce_backward_scatter_becomes_onehot_where(runs):
    plan = runs["ce_fwd_bwd"].result.trace
    ops = [n.op for n in plan.nodes]
    assert "scatter" not in ops and "gather" not in ops, plan
    assert ops.count("iota") == 1, plan  # shared by the forward lookup and the backward one-hot


def test_ce_ignore_index_rows_stay_masked(runs):
    """Targets -100 are clamped to 0 before the lookup and masked after: the plan keeps both."""
    plan = runs["ce_ignore"].result.trace
    ne = [n for n in plan.nodes if n.op == "ne"]
    assert ne and all(n.args[1] == -100 for n in ne), plan
    x, y = BY_NAME["ce_ignore"].make_inputs()
    assert (y == -100).any()
    outs, _ = run_trace(plan, [x, y])
    torch.testing.assert_close(outs[0], torch.nn.functional.cross_entropy(x, y))


# ------------------------------------------------------------------ one-line rule tests


def prove(cat, fn, inputs: tuple, goals: list[str], *, dynamic: bool = False, fail: list[str] = ()) -> EngineResult:
    cap = capture(fn, *inputs, dynamic=dynamic)
    res = optimize_trace(cap.trace, cat.sources, cat.phases, keep_session=True, hints=cap.symbol_hints)
    res.run([f"(check {g})" for g in goals], "goal")
    for g in fail:
        with pytest.raises(RuleError):
            res.run([f"(check {g})"], "negative goal")
    return res


def test_gather_with_a_wide_index_is_take_but_not_a_onehot_sum(cat):
    def f(x, i):
        return torch.gather(x, 1, i)

    x, i = torch.randn(4, 6), torch.randint(0, 6, (4, 2))
    res = prove(cat, f, (x, i), ["(= $gather0 (TakeAlongAxis $x $i 1))"],
                fail=['(= $gather0 (Sum (Where (Eq (Iota (Num 6) "i64" 1 2) $i) $x (CFloat 0.0)) (ICons 1 (INil)) 1))'])
    check_against_eager(Case("wide", f, lambda: (x, i)), res.trace)


def test_gather_with_a_smaller_index_is_not_take(cat):
    """torch.gather allows index.size(k) < x.size(k) off dim; take_along_axis would broadcast."""
    def f(x, i):
        return torch.gather(x, 1, i)

    prove(cat, f, (torch.randn(4, 6), torch.randint(0, 6, (3, 1))), [], fail=["(= $gather0 (TakeAlongAxis $x $i 1))"])


def test_take_does_not_push_through_an_operand_that_varies_along_dim(cat):
    def f(x, m, y):
        return torch.gather(x - m, 1, y.unsqueeze(1))

    x, m, y = torch.randn(4, 6), torch.randn(4, 6), torch.randint(0, 6, (4,))
    prove(cat, f, (x, m, y), ["(= $gather1 (TakeAlongAxis $sub0 $unsqueeze 1))"],
          fail=["(= $gather1 (Sub (TakeAlongAxis $x $unsqueeze 1) $m))"])


def test_integer_take_is_not_a_onehot_sum(cat):
    """where(mask, int, 0.0) would promote to float: the one-hot rule is for floats only."""
    def f(x, y):
        return torch.gather(x, 1, y.unsqueeze(1))

    x, y = torch.randint(0, 9, (4, 6)), torch.randint(0, 6, (4,))
    prove(cat, f, (x, y), [], fail=['(= $gather0 (Sum (Where (Eq (Iota (Num 6) "i64" 1 2) $unsqueeze) $x (CFloat 0.0)) (ICons 1 (INil)) 1))'])


def test_algebra_keeps_dtype_promotions(cat):
    def f(b, x):
        return b * 1, x * 1.0 + 0, (x - x) * 0

    # x * 1.0 is x; x * 1.0 + 0 is not (a float's -0.0 + 0 is +0.0)
    prove(cat, f, (torch.rand(3) > 0.5, torch.randn(3)), ["(= $mul1 $x)"],
          fail=["(= $mul0 $b)", "(= $add2 $x)", "(= $sub3 (CFloat 0.0))", "(= $mul4 (CFloat 0.0))",
                "(= $mul4 (CInt 0))"])


def test_sum_over_an_empty_dim_list_is_not_removed(cat):
    from satfuse.engine import parse_trace

    t = parse_trace('def computation(x: "f32[1, 1]"):\n  s = sum(x, dims=(), keepdim=1)  # f32[1, 1]\n  return (s,)\n')
    res = optimize_trace(t, cat.sources, cat.phases, keep_session=True)
    with pytest.raises(RuleError):
        res.run(["(check (= $s $x))"], "goal")


def test_where_with_a_0d_condition_has_the_other_branch_shape(cat):
    """where(c[], 10.0[], x[5, 5]) is [5, 5] (the condition's shape alone would say [])."""
    def f(x, m):
        return x.masked_fill(m, 10.0)

    prove(cat, f, (torch.randn(5, 5), torch.tensor(True)), ["(= (shape $where0) (shape $x))"])


def test_cast_through_a_narrower_type_is_kept(cat):
    def f(x):
        return x.half().float(), x.double().float()

    prove(cat, f, (torch.randn(3),), ["(= $_to_copy2 $x)"], fail=["(= $_to_copy0 $x)"])


# ------------------------------------------------------------------ seed 000: in-place updates


def test_add_inplace_then_use_is_one_value_and_one_writeback(runs):
    plan = runs["add_mul"].result.trace
    assert [n.op for n in plan.nodes] == ["add", "mul"], plan
    assert [(b.name, v.name) for b, v in plan.writebacks] == [("x", plan.nodes[0].out.name)]


def test_chained_inplace_updates_collapse(runs):
    plan = runs["add_mul_add"].result.trace
    assert "copy_" not in [n.op for n in plan.nodes], plan
    assert len(plan.writebacks) == 1


def test_self_copy_writes_nothing(runs):
    plan = runs["self_copy"].result.trace
    assert plan.writebacks == [] and [n.op for n in plan.nodes] == ["add"], plan


def test_kv_cache_writebacks_are_the_index_copies(runs):
    """Extraction prefers the in-place form (only the copied rows move); the lowering writes in
    place where the plan allows it (see test_lowering's KV-cache tests)."""
    plan = runs["kv_cache"].result.trace
    ops = [n.op for n in plan.nodes]
    assert "copy_" not in ops and ops.count("index_copy_") == 2, plan
    assert {b.name for b, _ in plan.writebacks} == {"q", "k"}


def test_adam_has_no_copies_left(runs):
    plan = runs["adam_hand"].result.trace
    assert "copy_" not in [n.op for n in plan.nodes], plan
    assert len(plan.writebacks) == 9


# ------------------------------------------------------------------ seed 001: split extents


def test_split_third_extent_is_in_input_symbols(cat):
    """split(a, (d0, d1, a.size(2) - d0 - d1)): the third extent is s2 - (s3 + s4), the three
    extents sum to a.size(2), and the plan introduces no symbol the inputs do not bind."""
    case = BY_NAME["split3"]
    cap = capture(case.fn, *case.make_inputs(), dynamic=True)
    res = optimize_trace(cap.trace, cat.sources, cat.phases, keep_session=True, hints=cap.symbol_hints)
    third = cap.trace.nodes[2].out.name
    res.run([f'(check (= (ext ${third} 2) (DSub (Sym "s2") (DAdd (Sym "s3") (Sym "s4")))))'], "goal")
    res.run([f'(let $total (DAdd (DAdd (Sym "s3") (Sym "s4")) (ext ${third} 2)))',
              "(run-schedule (repeat 4 (seq (saturate (run analysis)) (run extents))))",
              '(check (= $total (Sym "s2")))'], "sum")
    syms = cap.trace.symbols()
    for n in res.trace.nodes:
        assert n.out.type.symbols() <= syms, n.out.type
    for v in res.trace.outputs:
        assert v.type.symbols() <= syms


def test_split_then_cat_is_the_input(runs):
    plan = runs["split3_cat"].result.trace
    assert [n.op for n in plan.nodes] == ["mul"] and plan.nodes[0].args[0] is plan.inputs[0], plan


def test_tail_slice_start_drops_the_max(runs):
    plan = runs["tail_slice"].result.trace
    (sl,) = [n for n in plan.nodes if n.op == "slice"]
    assert "Max" not in str(sl.args[1]), plan


def test_full_slice_and_reshape_roundtrip_disappear(runs):
    assert [n.op for n in runs["split_whole"].result.trace.nodes] == ["mul"]
    assert [n.op for n in runs["reshape_roundtrip"].result.trace.nodes] == ["add"]


def test_kv_slice_write_becomes_an_in_place_slice_write(runs):
    plan = runs["kv_slice_write"].result.trace
    ops = [n.op for n in plan.nodes]
    assert "slice_scatter_" in ops and "slice_scatter" not in ops, plan
    assert [b.name for b, _ in plan.writebacks] == ["cache"]
