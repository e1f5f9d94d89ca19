"""Tests of the charrnn section of pipelines/metrics.py: loss in nats and bits per character,
perplexity, the unigram baseline and their terminal table."""

import math

import keras
import numpy as np
import pytest

from seqlab.data.text import CharVocabulary
from seqlab.models import CharLanguageModel
from seqlab.pipelines.common import finite_or_none
from seqlab.pipelines.metrics import (
    char_counts,
    char_loss_figures,
    char_loss_table,
    score_char_model,
    unigram_nats,
)


def test_loss_figures_are_one_loss_in_three_units():
    figures = char_loss_figures(math.log(2) * 3)
    assert figures["nats_per_char"] == pytest.approx(2.0794, abs=1e-4)
    assert figures["bits_per_char"] == pytest.approx(3.0)
    assert figures["perplexity"] == pytest.approx(8.0)
    assert all(type(value) is float for value in figures.values())
    # A loss past float64's exponent (a run trained at a huge learning rate: 1,088 nats a
    # character) raised OverflowError after the last epoch, at every rerun of the run.
    assert char_loss_figures(1088.0)["perplexity"] == math.inf
    assert finite_or_none(char_loss_figures(1088.0))["perplexity"] is None
    table = char_loss_table({"model": char_loss_figures(1088.0),
                             "unigram_baseline": char_loss_figures(2.0)})
    assert table.splitlines()[2].split()[-1] == "inf"


def test_unigram_baseline_is_the_add_one_smoothed_character_frequencies():
    vocabulary = CharVocabulary.from_text("ab")
    train_ids, _ = vocabulary.encode("aaab")
    counts = char_counts(train_ids, vocabulary)
    assert counts == {"a": 3, "b": 1}
    # Smoothed over [UNK], a and b: (0 + 1, 3 + 1, 1 + 1) / 7.
    ids, _ = vocabulary.encode("ab?")
    expected = -(math.log(4 / 7) + math.log(2 / 7) + math.log(1 / 7)) / 3
    assert unigram_nats(counts, ids) == pytest.approx(expected)


def tiny_model(**kwargs):
    model = CharLanguageModel(7, units=6, embedding_dim=4, seed=3, **kwargs)
    model.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.build()
    return model


def test_model_figures_are_the_mean_cross_entropy_beside_the_baseline():
    ids = np.random.default_rng(0).integers(2, 7, size=43).astype("int32")
    counts = {c: 0 for c in "abcde"}
    model = tiny_model()
    figures = score_char_model(model, ids, counts, window=8, batch_size=2)
    # 5 windows of 8 and their targets; the last 2 ids are too few for another window.
    x, y = ids[:40].reshape(5, 8), ids[1:41].reshape(5, 8)
    log_probabilities = keras.ops.log_softmax(model(x), axis=-1).numpy()
    nats = -np.take_along_axis(log_probabilities, y[..., None], axis=-1).mean()
    assert figures["model"]["nats_per_char"] == pytest.approx(float(nats), rel=1e-5)
    # Uniform over [UNK] and the 5 characters.
    assert figures["unigram_baseline"] == pytest.approx(char_loss_figures(math.log(6)))
    assert figures["chars_scored"] == 40
    assert figures["reading"] == "windows of 8 characters, each from a zero state"

    # A stateful model reads from zero states and leaves them at zero: the same figure again.
    stateful = tiny_model(stateful=True, batch_size=2)
    first = score_char_model(stateful, ids, counts, window=4, batch_size=2, stateful=True)
    assert first["chars_scored"] == 40  # 2 streams of 5 windows of 4
    assert first["reading"] == "2 contiguous streams, state carried across windows of 4"
    assert score_char_model(stateful, ids, counts, 4, 2, stateful=True) == first


def test_the_table_has_the_model_and_the_baseline_in_three_units():
    metrics = {"model": char_loss_figures(1.0), "unigram_baseline": char_loss_figures(2.0)}
    lines = char_loss_table(metrics).splitlines()
    assert lines[0].split() == ["validation", "nats/char", "bits/char", "perplexity"]
    assert lines[2].split() == ["model", "1.0000", "1.4427", "2.7183"]
    assert lines[3].split() == ["unigram", "baseline", "2.0000", "2.8854", "7.3891"]
