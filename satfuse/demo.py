"""The demo: seed 002's cross-entropy (log_softmax + gather) through satfuse."""

from __future__ import annotations

import torch

import satfuse


def cross_entropy(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """The hand-written loss of seed 002: gather(log_softmax(x, 1), 1, y[:, None])."""
    return torch.gather(torch.log_softmax(logits, 1), 1, target.unsqueeze(1)).squeeze(1).neg().mean()


def main(n: int = 512, c: int = 32768) -> int:
    torch.manual_seed(0)
    x = torch.randn(n, c)
    y = torch.randint(0, c, (n,))
    plan = satfuse.optimize(cross_entropy, x, y)
    print(plan)
    print()
    print(plan.explain())
    got, want = plan(x, y), cross_entropy(x, y)
    print(f"\nloss: satfuse {got.item():.6f}  eager {want.item():.6f}  max abs diff {abs(got - want).item():.2e}")
    return 0 if torch.allclose(got, want, rtol=1e-5, atol=1e-5) else 1


if __name__ == "__main__":
    raise SystemExit(main())
