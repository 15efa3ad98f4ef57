"""The random-program fuzzer's quick slice (``bench/fuzz.py`` runs it at scale).

Programs 0.. of one seed, in each mode, each compared with eager (values, dtype, shape,
every input's final value, output aliasing, eager's exception with inputs untouched; see
the fuzzer's docstring). A program may be refused with a clear satfuse error (or, under
``torch.compile``, differ exactly as Dynamo with ``backend="eager"`` does); it may not
differ from eager, crash or hang. Known failures name the finding that tracks each and are
strict: one that starts passing fails the test, so the list shrinks as fixes land.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import fuzz  # noqa: E402

SEED = 1
COUNTS = {"optimize": 30, "jit": 8, "compile": 3}

#: (mode, program index) -> the finding (in /work/findings) that tracks its failure
KNOWN: dict[tuple[str, int], str] = {}


def _params() -> list:
    out = []
    for mode, n in COUNTS.items():
        for i in range(n):
            marks = ()
            if (mode, i) in KNOWN:
                marks = pytest.mark.xfail(reason=f"tracked by {KNOWN[(mode, i)]}", strict=True)
            out.append(pytest.param(mode, i, id=f"{mode}-{i}", marks=marks))
    return out


@pytest.fixture(scope="module")
def vocab() -> dict:
    fuzz.quiet()
    return fuzz.vocab_table()


@pytest.mark.parametrize(("mode", "index"), _params())
def test_fuzz_program(mode: str, index: int, vocab: dict) -> None:
    p = fuzz.generate(SEED, index, vocab)
    res = fuzz.evaluate(p.module_source(), mode)
    assert res["status"] in ("equal", "refused", "dynamo"), (
        f"{res['status']} [{res['sig']}]: {res['detail']}\n"
        f"(python bench/fuzz.py --mode {mode} --seed {SEED} --start {index} --count 1 reduces it)\n{p.source()}")


def test_generation_is_deterministic(vocab: dict) -> None:
    assert fuzz.generate(SEED, 3, vocab).source() == fuzz.generate(SEED, 3, vocab).source()


def test_reducer_keeps_the_failure() -> None:
    """A planted failure (the 'plan' adds one to an output) reduces to the statement that
    makes it, and the reduced program still shows it."""

    class Planted:
        def run(self, src: str, mode: str) -> dict:
            ns = fuzz._load(src)
            f, inputs, a = ns["f"], ns["inputs"], ns["SIZES_A"]
            out = f(*inputs(**a))
            bad = any("exp" in ln for ln in src.splitlines() if ln.startswith("    t"))
            return {"status": "wrong" if bad else "equal", "sig": "values" if bad else "", "detail": str(len(out))}

    p = fuzz.Program([fuzz.Input("a", ["a = mk((D0, 2), torch.float32, 1 + v)"])],
                     [fuzz.Stmt("t0 = a + 1", ("t0",)), fuzz.Stmt("t1 = torch.exp(a)", ("t1",)),
                      fuzz.Stmt("t2 = t0 * t1", ("t2",)), fuzz.Stmt("t3 = t0.sum()", ("t3",))],
                     ["t2", "t3"], {"D0": 3}, {"D0": 4})
    red, res = fuzz.Reducer(Planted(), "optimize", 50).reduce(p, {"status": "wrong", "sig": "values"})
    assert res["status"] == "wrong"
    assert [s.src for s in red.stmts] == ["t1 = torch.exp(a)"]
    assert red.sizes_a == {"D0": 0}  # sizes shrink too
    assert "def f(a):" in fuzz.repro_source(red, res, "optimize", "test")


def test_float64_criterion_accepts_only_values_as_accurate_as_eager() -> None:
    """eager's CPU kernel rounds bf16 rsqrt twice (sqrt to bf16, then the reciprocal): a plan that
    rounds once is closer to the float64 run and counts as equal; a plan farther away does not,
    nor one that is nan where eager is finite, nor any integer or bool difference."""
    import torch

    x = torch.tensor([0.2754], dtype=torch.bfloat16)
    eager = x.rsqrt()
    once = x.float().rsqrt().bfloat16()
    ref = x.double().rsqrt()
    assert not torch.equal(eager, once)  # the kernel difference this is about
    assert fuzz._as_accurate(once, eager, ref)
    assert not fuzz._as_accurate(once + 0.125, eager, ref)
    assert not fuzz._as_accurate(torch.full_like(eager, float("nan")), eager, ref)
    # eager nan (an overflowed intermediate) where the float64 run is finite: a finite plan is closer
    assert fuzz._as_accurate(torch.tensor([0.5]), torch.tensor([float("nan")]), torch.tensor([0.75], dtype=torch.float64))
    assert not fuzz._as_accurate(torch.tensor([1]), torch.tensor([2]), torch.tensor([1]))


def test_eagers_answer_on_contiguous_inputs_is_an_answer_for_kernel_path_differences() -> None:
    """Eager's CPU gelu of +inf is inf on its scalar (strided) path and nan on its vector path:
    a plan computing a written transposed input's gelu on a contiguous value (what a segment made:
    masked_fill_ is a ``where``) answers as eager does for the same values laid out contiguously,
    which the fuzzer accepts and counts apart. (An opaque in-place op, ``index_add_``, now writes
    its value in the target's layout, and the plan is eager's exactly.)
    Inputs that share memory are never relaid out (that would change the program), so a plan
    that ignored the sharing still differs."""
    import math

    import torch
    import torch.nn.functional as F

    prog = fuzz.Program(
        [fuzz.Input("c", ["c = torch.full((3, 3), math.inf).t()"]), fuzz.Input("i", ["i = torch.tensor([0, 2])"])],
        [fuzz.Stmt("c.masked_fill_(c > 0, math.inf)"), fuzz.Stmt("t1 = F.gelu(c)", ("t1",))],
        ["t1"], {}, {})
    res = fuzz.evaluate(prog.module_source(), "optimize")
    c = torch.full((3, 3), math.inf).t()
    # the two kernel paths differ on CPUs whose vector gelu overflows to nan (AVX-512 builds); on
    # others (AVX2) eager agrees with itself, and the plan is then plainly equal
    paths_differ = not torch.equal(F.gelu(c), F.gelu(c.contiguous()))
    assert res["status"] == "equal" and res["sig"] == (fuzz.PLAIN_LAYOUT if paths_differ else ""), res

    base = torch.arange(6.0)
    plain = fuzz._plain_layout([base.t(), torch.ones(2, 3).t(), 3])
    assert plain[0].is_contiguous() and plain[1].is_contiguous() and torch.equal(plain[1], torch.ones(3, 2))
    assert fuzz._plain_layout([base[:4], base[2:]]) is None  # sharing memory
    assert fuzz._plain_layout([torch.ones(1).expand(3)]) is None  # overlapping itself

    def f(a, b):  # a "plan" that ignores that a and b share memory
        a.add_(1)
        return (b * 1,)

    def wrong(a, b):
        return (f(a.clone(), b.clone())[0] + 0,)

    def make():
        base = torch.zeros(4)
        return [base[:3], base[1:]]

    with pytest.raises(fuzz.Differs):
        fuzz.check_call("call", f, make, wrong)


def test_float64_reference_keeps_the_inputs_memory_sharing() -> None:
    import torch

    base = torch.arange(6.0)
    a, b = base[:4], base[2:]
    wa, wb, n = fuzz._widened([a, b, 3])
    assert wa.dtype == torch.float64 and n == 3
    wa.add_(1)
    assert wb.tolist() == [3.0, 4.0, 4.0, 5.0]  # overlapping views stay overlapping
    assert fuzz._widened([base, base.view(torch.int32)]) is None  # one storage, two dtypes
    assert fuzz._widened([base.view(torch.int32), base]) is None


def test_float64_criterion_in_rms_for_ill_conditioned_values() -> None:
    """Where eager is itself far from the float64 run (``fmod`` by a gelu of -2e-05), which of two
    noisy values is closer varies per element: the tensor counts as equal when its root-mean-square
    error is at most twice eager's (PyTorch's accuracy checker), never when it is worse than that
    or non-finite where eager is finite."""
    import torch

    ref = torch.tensor([0.0, 0.0, 0.0, 0.0], dtype=torch.float64)
    eager = torch.tensor([1e-3, 1e-3, 0.0, 0.0])
    plan = torch.tensor([0.0, 1.5e-3, 1e-3, 0.0])  # worse on two elements, 1.29x in rms
    assert fuzz._as_accurate(plan, eager, ref)
    assert not fuzz._as_accurate(plan * 2, eager, ref)  # 2.6x
    assert not fuzz._as_accurate(torch.tensor([0.0, 0.0, 0.0, float("inf")]), eager, ref)
    # float16 gets PyTorch's multiplier of 3
    assert fuzz._as_accurate((plan * 2).half(), eager.half(), ref)


def test_same_exception_from_dynamos_graph_and_the_backends_eager_run_is_one_divergence() -> None:
    """backend="eager" raises from Dynamo's graph code (signature ``dynamo-own``), the satfuse
    backend's eager run of the same graph from its own frame: one divergence, Dynamo's (it dropped
    the dead ``a[i]`` whose IndexError eager raises first; compile fuzz 9987 #906)."""
    msg = ("call 1: plan raises RuntimeError: unsupported operation: some elements ... operation. {}; eager "
           "IndexError: index 1 is out of bounds for dimension 0 with size 1")
    ours = "exception-type: " + msg.format("[eager.py:46]")
    theirs = "dynamo-own: " + msg.format("[<eval_with_key>.1:7]")
    assert fuzz._divergence(ours) == fuzz._divergence(theirs)
    assert fuzz._divergence(ours) != fuzz._divergence(theirs.replace("IndexError", "ValueError"))


def test_a_graph_satfuse_failed_to_plan_is_a_crash(monkeypatch) -> None:
    """The backend runs a graph it fails to plan eagerly (right values, a warning naming a satfuse
    bug): the fuzzer counts that program as a crash, not as equal."""
    from satfuse.pipeline import Engine

    def boom(self, *a, **k):
        raise RuntimeError("engine failure")

    monkeypatch.setattr(Engine, "compile", boom)
    prog = fuzz.Program([fuzz.Input("a", ["a = mk((D0,), torch.float32, 1 + v)"])],
                        [fuzz.Stmt("t0 = a.sin() + 1", ("t0",))], ["t0"], {"D0": 2}, {"D0": 3})
    res = fuzz.evaluate(prog.module_source(), "compile")
    assert (res["status"], res["sig"]) == ("crash", "planning"), res


def test_a_program_runs_on_the_device_it_is_fuzzed_on(vocab: dict, monkeypatch) -> None:
    """``--device``: every input (and a creation op's result) is made on that device, and the
    program is a module Dynamo can import (torch 2.11's Dynamo imports ``f.__module__``)."""
    monkeypatch.setenv(fuzz.DEVICE_ENV, "meta")
    src = next(p.module_source() for i in range(40) if "torch.arange(" in (p := fuzz.generate(SEED, i, vocab)).source())
    ns = fuzz._load(src)
    tensors = [x for x in ns["inputs"](**ns["SIZES_A"]) if isinstance(x, fuzz.torch.Tensor)]
    assert tensors and all(x.device.type == "meta" for x in tensors)
    assert "device=" in src.split("def f(", 1)[1].split("def inputs(", 1)[0]
    assert sys.modules[ns["f"].__module__].__dict__ is ns
