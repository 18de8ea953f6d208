"""The parsers' shared test assertion (tests/test_parser_corpus.py, tests/test_number_forms.py)."""

from __future__ import annotations

from typing import Any

import numpy as np


def check_parsed(parsed: Any, expected: Any) -> None:
    """``expected``: the action (a number, or an array), or ``"!"`` + a piece of the failure's reason."""
    if isinstance(expected, str) and expected.startswith("!"):
        assert parsed.action is None, parsed
        assert expected[1:] in str(parsed.error), parsed.error
    else:
        assert parsed.error is None, parsed.error
        np.testing.assert_allclose(np.asarray(parsed.action, dtype=float), expected)
