"""One cached ``satfuse.jit`` per op fed every OpInfo sample in turn (``bench/reuse_report.py``):
a later sample of another size, rank, layout or argument is served by a cached plan whose
guards accept it, or by a new one; either way eager's answer. The quick slice runs here: the ops
the full run found wrong, and a few whose many samples share a few plans."""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("expecttest", reason="torch.testing._internal (the OpInfo database) needs expecttest")

from bench import reuse_report  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


@pytest.mark.parametrize("op_id,variant", [
    ("maximum", "noncontig"),  # a broadcast example's layout once read a later call's full tensor as one row
    ("rsqrt", "functional"),  # an opaque kernel (its result depends on the operand's layout) over every rank
    ("remainder", "inplace"),
])
def test_one_plan_cache_serves_every_sample(op_id, variant):
    r = reuse_report.run(op_id, torch.float32, variant, "jit")
    assert r["status"] == "ok", r
    assert r["calls"] > r["plans"] > 0, r  # plans were reused, and built
