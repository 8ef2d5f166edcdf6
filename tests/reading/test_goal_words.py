"""engine/reading/words.py: a goal's content words (lower case, punctuation out, a light stem, stop
words dropped, synonyms folded onto one word) and the words two texts share; records built by hand."""

from __future__ import annotations

import pytest

from engine.kb.records import WordGroup
from engine.reading.words import Vocabulary, stem

GROUPS = (WordGroup("words:reduce", "same", ("reduce", "cut", "lower", "down")),
          WordGroup("words:cost", "same", ("cost", "money")),
          WordGroup("words:stop", "ignore", ("the", "on", "bring")))


@pytest.mark.parametrize(("word", "stemmed"), [
    ("costs", "cost"), ("cost", "cost"), ("gpus", "gpu"), ("reducing", "reduc"), ("reduce", "reduc"), ("reduced", "reduc"),
    ("reduces", "reduc"), ("cutting", "cut"), ("caches", "cach"), ("cache", "cach"), ("strategies", "strategy"),
    ("process", "process"), ("kv", "kv"), ("need", "need"),
])
def test_stem(word, stemmed):
    assert stem(word) == stemmed


def test_content_words_fold_synonyms_and_drop_stop_words():
    v = Vocabulary.of(GROUPS)
    # "Bring" is a stop word, "costs" stems to cost, "down" is in the reduce group
    assert v.content("Bring costs down") == {"cost": "costs", "reduc": "down"}
    assert v.content("Cut the money, on GPUs!") == {"reduc": "cut", "cost": "money", "gpu": "gpus"}


def test_shared_words_are_the_query_words_as_typed():
    v = Vocabulary.of(GROUPS)
    assert v.shared("Lower GPU costs", "Bring costs down") == ["lower", "costs"]
    assert v.shared("KV cache", "Bring costs down") == []


def test_an_empty_vocabulary_still_stems():
    assert Vocabulary.of(()).shared("KV caches", "KV cache and memory") == ["kv", "caches"]
