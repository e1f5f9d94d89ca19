"""The char-RNN unigram baseline against a hand count (issue 19: an index one character off
must fail). Every character has its own frequency, so any shift changes the figure."""

import math

import pytest

from seqlab.data.text import CharVocabulary
from seqlab.pipelines.metrics import char_counts, char_loss_figures, unigram_nats


def test_unigram_baseline_against_a_hand_count():
    vocabulary = CharVocabulary.from_text("abc")  # ids: 0 padding, 1 [UNK], a 2, b 3, c 4
    train_ids, _ = vocabulary.encode("aaabbc")
    counts = char_counts(train_ids, vocabulary)
    assert counts == {"a": 3, "b": 2, "c": 1}
    # Add-one smoothed over [UNK], a, b, c: (0 + 1, 3 + 1, 2 + 1, 1 + 1) / 10.
    probability = {"?": 1 / 10, "a": 4 / 10, "b": 3 / 10, "c": 2 / 10}
    text = "cab?c"
    ids, _ = vocabulary.encode(text)
    assert ids.tolist() == [4, 2, 3, 1, 4]
    hand = -sum(math.log(probability[char]) for char in text) / len(text)
    assert unigram_nats(counts, ids) == pytest.approx(hand, rel=1e-12)
    figures = char_loss_figures(unigram_nats(counts, ids))
    assert figures["bits_per_char"] == pytest.approx(hand / math.log(2), rel=1e-12)
    assert figures["perplexity"] == pytest.approx(math.exp(hand), rel=1e-12)
