"""Every shipped JSON schema is a valid Draft 2020-12 schema (checked here once, not on every run)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

SCHEMAS = sorted((Path(__file__).resolve().parents[2] / "engine" / "kb" / "schemas").glob("*.json"))


def test_there_are_schemas():
    assert len(SCHEMAS) >= 10


@pytest.mark.parametrize("path", SCHEMAS, ids=lambda p: p.name)
def test_schema_is_valid_against_the_metaschema(path):
    Draft202012Validator.check_schema(json.loads(path.read_text(encoding="utf-8")))
