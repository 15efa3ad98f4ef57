"""The recorder (``engine/capture/record.py``): static programs that write only tensors alone in
their memory are traced by one dispatch mode instead of functionalization + make_fx.

It is a shortcut, so it is tested as one: for each program, the trace it records (ops, output
aliases, write-backs, guards, output structure) must be the trace the functional path gives, and
every program outside its case must fall back to that path with the same verdict. Programs come
from a hand corpus and from the fuzzer (code nobody wrote for this test); plans are checked
against eager too."""

from __future__ import annotations

import contextlib
import importlib
import sys
import warnings
from pathlib import Path

import pytest
import torch

import satfuse

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

trace_mod = importlib.import_module("satfuse.engine.capture.trace")


def _capture(fn, args, recorder: bool, monkeypatch, **options):
    with monkeypatch.context() as m:
        if not recorder:
            m.setattr(trace_mod, "recorded", lambda *a: None)
        try:
            c = trace_mod.capture(fn, *args, **options)  # on fakes: the example inputs keep their values and layouts
        except Exception as e:  # noqa: BLE001 - compared below: the same verdict either way
            return None, (type(e).__name__, str(e))
    t = c.trace
    t.provenance = ""
    return c, (str(t), repr(t.output_aliases), repr(t.writebacks), repr(t.guards), repr(t.restrides),
               repr(c.out_spec))


def _unnamed(c, parts: tuple) -> tuple:
    """``parts`` with the trace's value names as ``v0, v1, ...`` in order of definition: the
    functional path names a node after make_fx's (``mul_4``: its symbolic-int nodes took ``mul``
    to ``mul_3``), the recorder after the op (``mul0``)."""
    import re

    names = [v.name for v in c.trace.inputs] + [o.name for n in c.trace.nodes for o in n.outs]
    new = {nm: f"v{i}" for i, nm in enumerate(dict.fromkeys(names))}
    word = re.compile(r"(?<![.\w])[A-Za-z_]\w*(?![\w(.])")
    return tuple(word.sub(lambda m: new.get(m.group(0), m.group(0)), p) for p in parts)


def _check(fn, args, tracer: str, monkeypatch, **options) -> None:
    got, rec = _capture(fn, args, True, monkeypatch, **options)
    _, fun = _capture(fn, args, False, monkeypatch, **options)
    assert rec == fun, f"the recorder's trace differs from functionalization's:\n{rec[0]}\n---\n{fun[0]}"
    if got is not None:
        assert got.tracer == tracer


def _adam(ps, gs, ms, vs, step: int):
    for p, g, m, v in zip(ps, gs, ms, vs):
        g = g + 0.01 * p
        m.mul_(0.9).add_(g, alpha=0.1)
        v.mul_(0.999).addcmul_(g, g, value=0.001)
        p.sub_(1e-3 * (m / (1 - 0.9 ** step)) / ((v / (1 - 0.999 ** step)).sqrt() + 1e-8))


def _adam_foreach(ps, gs, ms, vs):
    torch._foreach_mul_(ms, 0.9)
    torch._foreach_add_(ms, gs, alpha=0.1)
    torch._foreach_mul_(vs, 0.999)
    torch._foreach_addcmul_(vs, gs, gs, value=0.001)
    d = torch._foreach_sqrt(vs)
    torch._foreach_add_(d, 1e-8)
    torch._foreach_addcdiv_(ps, ms, d, value=-1e-3)


def _block(x, w, ln):
    h = torch.nn.functional.layer_norm(x, x.shape[-1:], ln, None)
    q, k, v = (h @ w).split(x.shape[-1], -1)
    a = torch.softmax(q @ k.transpose(-1, -2) / 4.0, -1) @ v
    return x + torch.nn.functional.gelu(a)


def _r(*s, dtype=torch.float32):
    return torch.randn(*s).to(dtype)


def _ts(n):
    return [_r(3, 2) for _ in range(n)]


#: (id, program, inputs, the tracer that captures it)
CORPUS = [
    ("chain", lambda x: torch.tanh(x) * 1.01 - (torch.tanh(x) * 1.01).mean(-1, keepdim=True), (_r(4, 8),),
     "recorder"),
    ("returns-input-and-views", lambda x: (x, x.t(), x[0], x * 2), (_r(3, 4),), "recorder"),
    ("split-views", lambda x: x.split(2, 0), (_r(4, 3),), "recorder"),
    ("shared-intermediate", lambda x: ((x + 1), (x + 1).t()), (_r(3, 4),), "recorder"),
    ("views-of-one-intermediate", lambda x: (lambda t: (t, t.t(), t[1:]))(x * 3), (_r(3, 3),), "recorder"),
    ("literal", lambda x: x + torch.tensor([1.0, 2.0]), (_r(3, 2),), "recorder"),
    ("scalar-args", lambda x, k, s: (x * k + s, k), (_r(3), 3, 0.5), "recorder"),
    ("block", _block, (_r(2, 4, 8), _r(8, 24) / 4, torch.ones(8)), "recorder"),
    # a factory's binding detaches a result Python still holds: the graph must hold none (no detach node)
    ("complex", lambda x: (torch.zeros_like(x), x * 2, x.abs()), (_r(4, 2, dtype=torch.complex64),), "recorder"),
    ("factories", lambda x: (torch.ones_like(x), torch.full_like(x, 2) + x, torch.arange(3) * 2), (_r(3),),
     "recorder"),
    ("adam", _adam, (_ts(3), _ts(3), _ts(3), [t.abs() for t in _ts(3)], 3), "recorder"),
    ("adam-foreach", _adam_foreach, (_ts(3), _ts(3), _ts(3), [t.abs() for t in _ts(3)]), "recorder"),
    ("foreach-write-returns-nothing", lambda xs: (torch._foreach_mul_(xs, 2), xs[0] + 1), (_ts(2),), "recorder"),
    ("write-input-return-it", lambda x: x.add_(1), (_r(3),), "recorder"),
    ("write-then-read", lambda x, y: (x.mul_(2), x + y, y.sub_(x)), (_r(3), _r(3)), "recorder"),
    ("write-intermediate", lambda x: (lambda t: t.mul_(3).add_(x))(x * 2), (_r(3),), "recorder"),
    ("copy-into-input", lambda x, y: x.copy_(y * 2), (_r(3), _r(3)), "recorder"),
    ("fill-index-put", lambda x, i: (x.fill_(2), x.index_put_((i,), torch.ones(2))), (_r(4), torch.tensor([0, 2])),
     "recorder"),
    # a fake view of an empty tensor may get a storage of its own: aliasing is read off the view's base
    ("view-of-an-empty-input", lambda x, i: (i.reshape(-1), i.view(i.shape), x * 2), (_r(3), torch.empty(0).long()),
     "recorder"),
    # ``a.copy_(a)`` writes nothing in eager, even where ``a`` holds an element twice (fuzz 7004 #1897)
    ("copy-of-itself-beside-a-write", lambda a, b: (a.copy_(a), b.mul(2).add_(1)), (_r(2, 1).expand(2, 3), _r(3)),
     "recorder"),
    # outside the recorder's case: functionalization decides, with the same verdict
    ("write-through-view", lambda x: x[0].add_(1), (_r(3, 2),), "functionalization"),
    ("view-after-write", lambda x: x.add_(1).view(-1), (_r(3, 2),), "functionalization"),
    ("view-before-write", lambda x: (lambda v: (x.add_(1), v * 1))(x.t()), (_r(3, 2),), "functionalization"),
    ("out=", lambda a, b, c: torch.add(a, b, out=c), (_r(3), _r(3), _r(3)), "functionalization"),
    ("strided-input-written", lambda x: x.mul_(2), (_r(4, 3).t(),), "functionalization"),
    ("inplace-view-op", lambda x: x.t_() * 1, (_r(3, 2),), "functionalization"),
    ("item", lambda x: x * x.sum().item(), (_r(3),), "functionalization"),
    ("set-to-another-tensor", lambda x, y: (x.set_(y * 2), x + 1), (_r(3), _r(3)), "functionalization"),
    ("resize-of-an-intermediate", lambda x: (x * 2).resize_(6), (_r(3, 2),), "functionalization"),
    ("requires-grad", lambda x: x * 2, (_r(3).requires_grad_(),), "functionalization"),
    ("promoting-write", lambda x: x.add_(1.5), (torch.arange(3),), "functionalization"),
    ("expanded-input-written", lambda x: x.add_(1), (_r(1).expand(3),), "functionalization"),
    ("foreach-writes-one-tensor-twice", lambda x: torch._foreach_add_([x, x], 1.0), (_r(3),), "functionalization"),
    ("foreach-reads-what-it-wrote", lambda a, b: torch._foreach_add_([a, b], [b, a]), (_r(3), _r(3)),
     "functionalization"),
    ("foreach-writes-a-view", lambda x: torch._foreach_mul_([x[0], x[1]], 2.0), (_r(2, 3),), "functionalization"),
    ("write-reads-a-copy-of-itself", lambda x: x.mul_(x.flip(0)), (_r(4),), "recorder"),
]


@pytest.mark.parametrize(("name", "fn", "args", "tracer"), CORPUS, ids=[c[0] for c in CORPUS])
def test_recorder_trace_is_functionalizations(name, fn, args, tracer, monkeypatch) -> None:
    _check(fn, args, tracer, monkeypatch)


#: corpus programs that reach ``_tensorify`` with symbolic floats (``capture(symbolic_floats=True)``,
#: satfuse.jit's): float math in the graph, which the recorder does not build
_FLOAT_MATH = {"scalar-args", "adam"}


@pytest.mark.parametrize("symbolic_floats", [False, True], ids=["ints", "floats"])
@pytest.mark.parametrize(("name", "fn", "args", "tracer"), CORPUS, ids=[c[0] for c in CORPUS])
def test_symbolic_recorder_trace_is_functionalizations(name, fn, args, tracer, symbolic_floats, monkeypatch) -> None:
    """Every extent and int scalar symbolic (``dynamic=True``): the recorder's trace is the one
    functionalization gives, up to value names (ops, symbolic extents, output aliases, write-backs,
    guards), and a program it stops at is traced again on a fresh ShapeEnv with the functional
    path's verdict and guards (none of the stopped run's)."""
    options = dict(dynamic=True, symbolic_floats=symbolic_floats)
    got, rec = _capture(fn, args, True, monkeypatch, **options)
    ref, fun = _capture(fn, args, False, monkeypatch, **options)
    if got is None or ref is None:
        assert rec == fun
        return
    assert _unnamed(got, rec) == _unnamed(ref, fun), f"{rec[0]}\n---\n{fun[0]}"
    assert "s0" in rec[0]
    want = "functionalization" if symbolic_floats and name in _FLOAT_MATH else tracer
    assert got.tracer == want


def test_aliased_inputs_are_functionalizations(monkeypatch) -> None:
    """One tensor at two positions (or two views of one buffer): the functional path gives each
    position its own wrapper, so the recorder leaves the program to it."""
    x = _r(4)
    _check(lambda a, b: a.add_(b), (x, x), "functionalization", monkeypatch)
    buf = _r(8)
    got, _ = _capture(lambda a, b: a * b, (buf[:4], buf[4:]), True, monkeypatch)
    assert got is not None


@pytest.mark.parametrize(("name", "fn", "args", "tracer"), [c for c in CORPUS if c[0] not in (
    "item", "promoting-write", "expanded-input-written", "resize-of-an-intermediate",
    "set-to-another-tensor", "foreach-writes-one-tensor-twice", "foreach-reads-what-it-wrote")],
    ids=[c[0] for c in CORPUS if c[0] not in (
        "item", "promoting-write", "expanded-input-written", "resize-of-an-intermediate",
        "set-to-another-tensor", "foreach-writes-one-tensor-twice", "foreach-reads-what-it-wrote")])
def test_recorded_plans_equal_eager(name, fn, args, tracer) -> None:
    """The plans built from recorded traces: values, dtypes, every input's final value."""
    def clone(xs):
        return [[t.clone() for t in a] if isinstance(a, list) else a.clone() if isinstance(a, torch.Tensor) else a
                for a in xs]

    want_in = clone(args)
    want = fn(*want_in)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plan = satfuse.optimize(fn, *clone(args))
    got_in = clone(args)
    got = plan(*got_in)
    for g, w in zip(torch.utils._pytree.tree_leaves(got), torch.utils._pytree.tree_leaves(want)):
        if isinstance(w, torch.Tensor):
            assert g.dtype == w.dtype and g.shape == w.shape
            torch.testing.assert_close(g, w, equal_nan=True)
        else:
            assert g == w
    for g, w in zip(torch.utils._pytree.tree_leaves(got_in), torch.utils._pytree.tree_leaves(want_in)):
        if isinstance(w, torch.Tensor):
            torch.testing.assert_close(g, w, equal_nan=True)


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "symbolic"])
def test_fuzz_programs_record_as_functionalization(dynamic, monkeypatch) -> None:
    """The fuzzer's programs (writes, views, every dtype and layout), static and with every extent
    symbolic (as satfuse.jit captures them): each one the recorder takes has functionalization's
    trace (symbolic: up to value names), and a good share of them is taken."""
    from bench import fuzz

    fuzz.quiet()
    vocab = fuzz.vocab_table()
    taken = 0
    options = dict(dynamic=True, symbolic_floats=True) if dynamic else {}
    for i in range(60):
        ns = fuzz._load(fuzz.generate(11, i, vocab).module_source())
        args = ns["inputs"](**ns["SIZES_A"])
        got, rec = _capture(ns["f"], args, True, monkeypatch, **options)
        if got is None or got.tracer != "recorder":
            continue
        taken += 1
        ref, fun = _capture(ns["f"], ns["inputs"](**ns["SIZES_A"]), False, monkeypatch, **options)
        if dynamic:
            rec, fun = _unnamed(got, rec), _unnamed(ref, fun)
        assert rec == fun, f"seed 11 program {i}:\n{rec[0]}\n---\n{fun[0]}"
    assert taken >= 10


graph_mod = importlib.import_module("satfuse.engine.capture.graph")


def _sgd_step(ps, gs, bufs):
    for p, g, b in zip(ps, gs, bufs):
        b.mul_(0.9).add_(g)
        p.sub_(0.1 * b)


def _graph_capture(run, monkeypatch, recorder: bool):
    """``run(compile)`` with the backend's re-trace of writing graphs by the recorder or not: the
    captured graphs (the trace printed without provenance, its aliases and write-backs) and what
    the run returned."""
    from satfuse.pipeline import default_engine

    torch._dynamo.reset()
    graphs: list = []
    with monkeypatch.context() as m:
        if not recorder:
            m.setattr(graph_mod, "recorded", lambda *a: None)
        m.setattr(default_engine(), "on_graph", [graphs.append])
        out = run(lambda f: torch.compile(f, backend="satfuse"))
    texts = []
    for g in graphs:
        t = g.trace
        tracer = t.provenance.rsplit(", ", 1)[-1].rstrip(")") if t.provenance else ""
        t.provenance = ""
        texts.append((tracer, str(t), repr(t.output_aliases), repr(t.writebacks), repr(t.guards)))
    return texts, out


def _params(n, requires_grad=True):
    return [torch.nn.Parameter(_r(4, 3), requires_grad=requires_grad) for _ in range(n)]


def _optimizer_run(kind):
    def run(compile_):
        torch.manual_seed(0)
        ps = _params(3)
        for p in ps:
            p.grad = _r(4, 3)
        opt = {"adam": lambda: torch.optim.Adam(ps, lr=1e-2, foreach=False),
               "adam-foreach": lambda: torch.optim.Adam(ps, lr=1e-2, foreach=True),
               "adamw": lambda: torch.optim.AdamW(ps, lr=1e-2, foreach=False, amsgrad=True),
               "sgd": lambda: torch.optim.SGD(ps, lr=1e-2, momentum=0.9, foreach=False)}[kind]()
        step = compile_(opt.step)
        step()
        step()
        return [p.detach().clone() for p in ps] + [v.clone() for s in opt.state.values() for v in s.values()
                                                    if isinstance(v, torch.Tensor)]
    return run


def _function_run(fn, make_args, no_grad=False):
    def run(compile_):
        torch.manual_seed(0)
        args = make_args()
        with torch.no_grad() if no_grad else contextlib.nullcontext():
            out = compile_(fn)(*args)
        return [*torch.utils._pytree.tree_leaves(out), *torch.utils._pytree.tree_leaves(args)]
    return run


BACKEND_CORPUS = [
    ("adam", _optimizer_run("adam"), "recorder"),
    ("adam-foreach", _optimizer_run("adam-foreach"), "recorder"),
    ("adamw-amsgrad", _optimizer_run("adamw"), "recorder"),
    ("sgd-momentum", _optimizer_run("sgd"), "recorder"),
    ("params-written-under-no-grad", _function_run(_sgd_step, lambda: (_params(2), [_r(4, 3)] * 2,
                                                                       [_r(4, 3), _r(4, 3)]), no_grad=True),
     "recorder"),
    ("write-input-return-view", _function_run(lambda x: x.add_(1).t(), lambda: (_r(3, 2),)), "functionalization"),
    ("write-through-view", _function_run(lambda x: x[0].mul_(2), lambda: (_r(3, 2),)), "functionalization"),
    ("out=", _function_run(lambda a, b, c: torch.add(a, b, out=c), lambda: (_r(3), _r(3), _r(3))),
     "functionalization"),
]


@pytest.mark.parametrize(("name", "run", "tracer"), BACKEND_CORPUS, ids=[c[0] for c in BACKEND_CORPUS])
def test_backend_retrace_is_functionalizations(name, run, tracer, monkeypatch) -> None:
    """The ``torch.compile`` backend re-traces Dynamo's writing graphs on Dynamo's fakes (a ShapeEnv,
    extents kept static; parameters that require grad, written under ``no_grad``): where the
    recorder takes a graph, its trace is functionalization's, and both plans equal eager."""
    want = run(lambda f: f)
    rec, got = _graph_capture(run, monkeypatch, True)
    fun, got_fun = _graph_capture(run, monkeypatch, False)
    assert rec and {r[0] for r in rec} == {tracer}
    assert [r[1:] for r in rec] == [f[1:] for f in fun]
    for g, gf, w in zip(got, got_fun, want):
        torch.testing.assert_close(g, w)
        torch.testing.assert_close(gf, w)


def test_a_freed_tensor_leaves_no_count_at_its_address() -> None:
    """The recorder counts the tensors made per storage, keyed by address; a freed storage's address
    is reused, and a write to the fresh tensor there read as one to a shared storage (a needless
    fallback to the functional path). The counted storages stay alive while it records."""
    from satfuse.engine.capture.functional import _storage_id
    from satfuse.engine.capture.record import _Recorder

    graph = torch.fx.Graph()
    rec = _Recorder(graph, torch.nn.Module(), {})
    t = torch.zeros(16)
    rec.track(t, graph.placeholder("t"))
    del t
    fresh = [torch.zeros(16) for _ in range(50)]
    assert not [x for x in fresh if _storage_id(x) in rec.sharing]


record_mod = importlib.import_module("satfuse.engine.capture.record")
memo_mod = importlib.import_module("satfuse.engine.capture.fake_memo")

#: programs that repeat (op, geometry) pairs: the memo answers most of their ops
REPEATS = [
    ("repeated-blocks", lambda x, w, ln: _block(_block(_block(x, w, ln), w, ln), w, ln),
     (_r(2, 4, 8), _r(8, 24) / 4, torch.ones(8))),
    ("repeated-adam", _adam, (_ts(4), _ts(4), _ts(4), [t.abs() for t in _ts(4)], 3)),
    ("repeated-views", lambda x: [x.view(6, 2).t() * 2 for _ in range(3)] + [x.expand(4, 3).reshape(2, 6)], (_r(4, 3),)),
]


@pytest.mark.parametrize(("name", "fn", "args"), REPEATS + [c[:3] for c in CORPUS if c[3] == "recorder"],
                         ids=[c[0] for c in REPEATS] + [c[0] for c in CORPUS if c[3] == "recorder"])
def test_fake_memo_changes_no_trace(name, fn, args, monkeypatch) -> None:
    """The recorder's memo of fake results (``fake_memo.py``) is a shortcut of FakeTensorMode's
    cache: each program's trace with it is the trace with every op run on the fake mode, and on
    programs that repeat their ops it answers most of them."""
    made = []
    real_made = memo_mod.FakeMemo._made
    with monkeypatch.context() as m:
        m.setattr(memo_mod.FakeMemo, "_made", lambda self, *a: made.append(1) or real_made(self, *a))
        got, with_memo = _capture(fn, args, True, monkeypatch)
    with monkeypatch.context() as m:
        m.setattr(record_mod, "_memo", lambda fakes: record_mod._call)
        _, without = _capture(fn, args, True, monkeypatch)
    assert with_memo == without, f"{with_memo[0]}\n---\n{without[0]}"
    assert got is not None and got.tracer == "recorder"
    if name in {r[0] for r in REPEATS}:
        assert len(made) >= len(got.trace.nodes) // 3, (len(made), len(got.trace.nodes))


def _fake_props(f: torch.Tensor) -> tuple:
    return (type(f), f.shape, f.stride(), f.storage_offset(), f.dtype, f.device, f.requires_grad, f.is_leaf,
            str(torch._C._dispatch_keys(f)), f.untyped_storage().nbytes(), f.is_conj(), f.is_neg(), f.is_inference())


def test_static_input_fakes_are_from_tensors() -> None:
    """Capture makes a plain input's static fake directly (``fake_inputs.py``): every kind of input
    gets the fake ``from_tensor`` makes (the plain ones directly, the others from ``from_tensor``
    itself), a later ``from_tensor`` of the tensor finds that fake, a view of its storage shares
    its storage, and inputs that share memory go to ``from_tensor`` together."""
    from satfuse.engine.capture.fake_inputs import _plain, static_fakes
    from torch._subclasses.fake_tensor import FakeTensorMode

    with torch.inference_mode():
        inference = torch.randn(2)
    plain = {"dense": torch.randn(3, 4), "strided": torch.empty_strided((3, 4), (1, 3)), "empty": torch.empty(0, 3),
             "0-d": torch.tensor(2.0), "int": torch.arange(6), "bool": torch.ones(2, dtype=torch.bool),
             "complex": torch.randn(2, dtype=torch.cfloat), "half": torch.randn(3, dtype=torch.half)}
    other = {"view": torch.randn(4)[1:], "grad": torch.randn(2, requires_grad=True), "expanded": torch.randn(1).expand(3),
             "conj": torch.randn(2, dtype=torch.cfloat).conj(), "parameter": torch.nn.Parameter(torch.randn(2)),
             "larger storage": torch.randn(10).resize_(2), "inference": inference}
    for name, t in {**plain, **other}.items():
        assert _plain(t) == (name in plain), name
        mode = FakeTensorMode()
        (fake,) = static_fakes(mode, [t])
        assert _fake_props(fake) == _fake_props(FakeTensorMode().from_tensor(t)), name
        assert mode.from_tensor(t) is fake, name
    mode, base = FakeTensorMode(), torch.randn(5)
    (fake,) = static_fakes(mode, [base])
    assert mode.from_tensor(base[2:]).untyped_storage()._cdata == fake.untyped_storage()._cdata
    a, b, c = static_fakes(FakeTensorMode(), [base, base, base[1:]])
    assert a is b and a.untyped_storage()._cdata == c.untyped_storage()._cdata
