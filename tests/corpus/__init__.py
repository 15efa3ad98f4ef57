"""The built-in corpus ships with the package (``satfuse.rewrites.programs``, so the rule
harness works from a plain install); tests import it under this short name."""

from satfuse.rewrites.programs import *  # noqa: F401,F403
from satfuse.rewrites.programs import BY_NAME, CASES, Case  # noqa: F401
