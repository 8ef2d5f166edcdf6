"""``api.lab``: a lab's record and its computed expectation, as ``aiinfra lab show`` prints them."""

from __future__ import annotations

import pytest

from engine import api
from engine.core.errors import InputError


def test_lab_4_by_number_and_id():
    record, result = api.lab(4)
    assert record["title_zh"] == "Kueue 与 Gang 语义演示"
    assert result.check.verdict == "admitted: train-a; waiting whole: train-b"
    # section 9.4.1's idle GPU-hours: 512 cards × 24 h = 12,288
    assert [(o.formula, o.value) for o in result.outputs] == [("FX1101", pytest.approx(12288))]
    assert api.lab("lab:4")[0] is not None


def test_unknown_lab_names_the_field():
    with pytest.raises(InputError) as e:
        api.lab(0)
    assert e.value.field == "N"
