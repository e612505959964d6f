"""The one skip condition of the SASL tests: kazoo's SASL support (pure-sasl) is missing.

pure-sasl is a dependency in setup.cfg, so CI always has it; the marker only keeps a bare
checkout without it from failing on an import rather than saying why.
"""

from __future__ import annotations

import importlib.util

import pytest

#: Skips a test (or module, in ``pytestmark``) when pure-sasl is not installed.
needs_pure_sasl = pytest.mark.skipif(
    importlib.util.find_spec("puresasl") is None,
    reason="pure-sasl not installed (kazoo's SASL support; setup.cfg installs it)",
)
