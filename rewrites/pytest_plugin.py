"""pytest entry for rule packs.

Use it from a project's tests, either as a plugin (``pytest_plugins = ["satfuse.rewrites.pytest_plugin"]``
in a conftest, or ``pytest -p satfuse.rewrites.pytest_plugin``) with the fixture::

    def test_my_rules(satfuse_rules_check):
        satfuse_rules_check(["rules/mine"], corpus=["tests/my_corpus.py"], only_paths=True)

or directly with :func:`assert_rules_ok`. Either runs ``check_rules`` (coverage, soundness,
guards) and fails the test on dead or unsound rules, program errors,
or rule files that do not load (the failure message carries the problems; nothing is printed).
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import pytest
from satfuse.engine.session import RuleError

from .coverage import check_rules
from .report import CoverageReport


def assert_rules_ok(paths: Sequence[str] = (), **kw: Any) -> CoverageReport:
    try:
        report = check_rules(paths, **kw)
    except RuleError as e:
        pytest.fail(f"rule packs do not load: {e}", pytrace=False)
    if not report.ok:
        problems = report.table().split("\n\n", 1)[-1]
        pytest.fail(f"rule check failed:\n{problems}", pytrace=False)
    return report


@pytest.fixture
def satfuse_rules_check() -> Callable[..., CoverageReport]:
    return assert_rules_ok
