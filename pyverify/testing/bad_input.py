"""The bad-input contract as a table: one test over rows ``(case, call, exception, regex)``.

A module's table of bad calls becomes its test with
``test_bad_input_raises_a_typed_one_line_error = one_line_error_test(CASES)``: each call
must raise its exception with a one-line message matching its regex.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest

__all__ = ["one_line_error_test"]


def one_line_error_test(cases: Sequence[tuple[Any, ...]]) -> Callable[..., None]:
    """The parametrised test of ``cases``, one test case a row, its id the row's name."""

    @pytest.mark.parametrize(
        ("call", "exc", "msg"), [c[1:] for c in cases], ids=[c[0] for c in cases]
    )
    def test_bad_input_raises_a_typed_one_line_error(call, exc, msg):
        with pytest.raises(exc, match=msg) as info:
            call()
        assert "\n" not in str(info.value)

    return test_bad_input_raises_a_typed_one_line_error
