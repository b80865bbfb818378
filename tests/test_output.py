"""The one JSON writer: strict JSON (no NaN/Infinity tokens), deterministic text."""

from __future__ import annotations

import json

import numpy as np

from pyverify.output import json_array, json_text
from pyverify.report.serialize import dumps, round_floats


def test_json_text_writes_non_finite_numbers_as_markers():
    data = {"b": [float("nan"), 1.5], "a": {"x": float("inf"), "y": -float("inf")}, "c": (2, "s")}
    text = json_text(data)
    assert "NaN" not in text and "Infinity" not in text
    assert json.loads(text) == {"a": {"x": "inf", "y": "-inf"}, "b": [None, 1.5], "c": [2, "s"]}
    assert text == json_text(json.loads(text))  # markers survive a round trip unchanged


def test_arrays_and_rounded_reports_use_the_same_markers():
    assert json_array(np.array([[np.nan, np.inf], [-np.inf, 0.25]])) == [
        [None, "inf"],
        ["-inf", 0.25],
    ]
    assert json.loads(dumps(round_floats({"v": [np.nan, np.inf, 1.0]}))) == {
        "v": [None, "inf", 1.0]
    }
