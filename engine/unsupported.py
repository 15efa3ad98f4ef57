"""The one table of program forms satfuse refuses on purpose.

A refused form must fail at ``optimize`` time (capture or lowering) with a satfuse error
whose message matches the row's ``pattern``, and never give a wrong result. The
differential harnesses (``tests/test_opinfo.py``, ``bench/fuzz.py``) count a sample as
"refused as listed" only when its build-time error matches a row here; any other
exception is a failure. A form leaves this table when satfuse learns it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Unsupported:
    form: str  # what program form
    pattern: str  # regex on the error message satfuse raises for it
    why: str  # why it is refused rather than supported


UNSUPPORTED: tuple[Unsupported, ...] = (
    Unsupported(
        "a torch call whose traced form loses what eager does: an out= tensor torch's kernel does not write when "
        "traced (torch.linalg.matrix_rank(x, out=o) in torch 2.13), a check on tensor data the kernel makes on "
        "real tensors only (torch.quantile with a tensor q)",
        r"does not write the out= tensor|checks on real tensors only",
        "the composite kernel takes another path for traced tensors (a Python key): it leaves out= as it was, or "
        "skips the check, where eager writes or raises: no trace holds eager's effect",
    ),
    Unsupported(
        "an op with ordered side effects in satfuse.optimize or satfuse.jit (torch.linalg.inv's error check, "
        "an effectful custom op): torch.compile(backend=\"satfuse\") takes it",
        r"an effect token",
        "functionalization orders such ops by tokens that AOTAutograd's runtime threads through the graph; "
        "satfuse's own capture has no runtime to thread them",
    ),
    Unsupported(
        "a value that depends on tensor data used as a Python number (narrow with a 0-d tensor start, .item())",
        r"\.item\(\)|which no input binds|data-dependent",
        "the IR binds every extent from input shapes and scalar arguments; a tensor's value is not known "
        "when the plan is built",
    ),
    Unsupported(
        "an op whose result's shape depends on tensor data (nonzero-like ops, linalg.lstsq, ctc_loss)",
        r"an output shape depends on tensor data",
        "every extent of a plan is bound from input shapes and scalar arguments before it runs",
    ),
    Unsupported(
        "a write into an input that shares memory with another input (one tensor passed twice, overlapping "
        "views of one buffer) or with itself (an expanded tensor)",
        r"the example inputs cannot have a plan",
        "eager writes such memory element by element, so one element's final value is whichever write its loop "
        "order makes last; a plan computes whole values and writes each input once (satfuse.jit runs such calls "
        "eagerly)",
    ),
    Unsupported(
        "an in-place op that reads memory it writes in another order (b.mul_(b.unbind(-2)[0]), "
        "t.masked_scatter_(m, t)), or writes a view that holds an element twice (t.expand(3, 3).fill_(1), "
        "overlapping unfold windows) or an unfold whose last step runs past the end or whose extents are symbolic "
        "(and any view of those windows)",
        r"loop order",
        "eager accepts it and its values depend on the order its loop visits the shared elements; a functional "
        "plan computes every operand before it writes",
    ),
    Unsupported(
        "a foreach write (torch._foreach_add_, an optimizer's foreach step) whose written list shares memory with "
        "a tensor at a later list position or with one every position reads ([x, x]; [a, b] += [b, a])",
        r"writes tensor \d+ of its list, which shares memory",
        "eager applies a foreach op tensor by tensor on the CPU (a later position reads what an earlier one wrote) "
        "and all at once on CUDA; a functional plan computes every value from the old ones",
    ),
    Unsupported(
        "an in-place metadata change of an input other than t_, transpose_, swapdims_, squeeze_ and unsqueeze_ "
        "(resize_, as_strided_, set_, an out= that resizes it); one of those on an input the program also writes "
        "or passes at several positions",
        r"has its metadata changed in place",
        "a plan computes values, writes them into the caller's buffers and replays the in-place view ops above on "
        "the caller's tensor at the end; memory changes and writes at a geometry the caller's tensor only takes "
        "later it cannot reproduce (capture refuses them: engine/capture)",
    ),
    Unsupported(
        "as_strided of a computed tensor, of an input written earlier in the program, or reaching storage "
        "elements outside the tensor it views; an as_strided view of an input read after a write to that input",
        r"as_strided (of a computed tensor|of an input written earlier|reaches memory outside|view read after a write)",
        "as_strided's meaning is the memory layout eager gave its operand; values, not layouts, flow through a "
        "plan (a written input's new value is held in a layout of the plan's own)",
    ),
    Unsupported(
        "a write through a view of an as_strided view (x.as_strided(...)[0].add_(1))",
        r"mutation on a view chain of length \d+, where view \d+ was an as_strided\(\) call",
        "PyTorch's functionalization (the machinery capture runs on, as AOTAutograd does) cannot replay such a "
        "view chain onto the written base",
    ),
    Unsupported(
        "a write into a tensor whose elements overlap (a reshape of overlapping unfold windows written in place)",
        r"functionalization encountered a tensor being mutated that has internal overlap",
        "PyTorch's functionalization refuses it (torch.compile does too): the written value's meaning depends on "
        "the order eager visits the shared elements",
    ),
    Unsupported(
        "a view (view, flatten, reshape) of a tensor written through another view, whose written value torch's "
        "functionalization holds in another layout (t.transpose(0, 1).masked_fill_(m, v); t.flatten())",
        r"a view of a tensor written through another view",
        "functionalization regenerates the written tensor from the view's inverse with that view's strides while "
        "the tensor keeps eager's; a view then needs strides the value does not have (a PyTorch limitation)",
    ),
    Unsupported(
        "stride() or is_contiguous() of a view of a tensor the program wrote, where torch's functionalization "
        "gives the view another memory layout than eager's and the answer differs (or a copy-or-view decision "
        "that views in eager and would copy here)",
        r"of a view of a tensor the program wrote: torch's functionalization gives the view another memory layout",
        "functionalization views the written value, held in a layout of its own, while eager's tensor keeps its "
        "strides (a PyTorch limitation); where eager copies (contiguous(), reshape) the program copies too "
        "(engine/capture/layouts.py), but an answer about the layout itself cannot be eager's",
    ),
    Unsupported(
        "a dtype the IR has no place for (complex32, the float8 and quantized dtypes, uint16/32/64)",
        r"dtype torch\.\w+ is not supported by satfuse",
        "the vocabulary, the cost model and nvFuser's DataType cover the dtypes of engine/ir.py DTYPE_NAMES; "
        "torch itself supports few ops on the others",
    ),
    Unsupported(
        "a sparse (COO, CSR, CSC, BSR, BSC), mkldnn or nested tensor argument (satfuse.jit runs such calls "
        "eagerly)",
        r"plans take strided \(dense\) tensors only",
        "the IR's tensors are strided, as nvFuser's are; torch's sparse kernels are their own",
    ),
    Unsupported(
        "a program that sets the random number generators' state itself (torch.manual_seed(42) inside the "
        "function) in satfuse.optimize or satfuse.jit (jit runs it eagerly): torch.compile(backend=\"satfuse\") "
        "takes it",
        r"random number generator state",
        "a plan replays the program's tensor ops; the seeding is Python code the trace does not hold, so the plan's "
        "random ops would draw from the caller's generator where eager draws from the seed (Dynamo runs such code "
        "itself)",
    ),
)


def listed(message: str) -> Unsupported | None:
    """The row whose pattern matches an error message, if any."""
    for row in UNSUPPORTED:
        if re.search(row.pattern, message):
            return row
    return None


def refused_as_listed(exc: BaseException) -> Unsupported | None:
    """The row a satfuse error raised while building a plan stands for (its message or the
    message of an error it wraps), or None: not a listed refusal."""
    if not type(exc).__module__.startswith("satfuse"):
        return None
    e: BaseException | None = exc
    while e is not None:
        row = listed(str(e))
        if row is not None:
            return row
        e = e.__cause__
    return None
