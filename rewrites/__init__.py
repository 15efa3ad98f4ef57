"""satfuse.rewrites: the rule catalogue (packs in rules/*.egg and user folders), the
phase schedule, and the rule-coverage harness."""

from .packs import PHASES, Catalogue, RuleInfo, builtin_catalogue, load_catalogue

__all__ = ["PHASES", "Catalogue", "RuleInfo", "builtin_catalogue", "load_catalogue"]
