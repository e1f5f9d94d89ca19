"""seqlab's models build their training state before a user's own `fit` traces its step."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from seqlab.models._training import batch_spec
from tests.models.test_frozen_layers import tagger_batch, translator_batch
from tests.models.test_tagger import tiny_tagger
from tests.models.test_translator import tiny_translator


def tagger_data(as_dataset):
    inputs, labels = tagger_batch()
    if as_dataset:
        return tf.data.Dataset.from_tensor_slices((inputs, labels)).batch(4), None
    return inputs, labels


def translator_data(as_dataset):
    inputs, labels = translator_batch()
    if as_dataset:
        return tf.data.Dataset.from_tensor_slices((inputs, labels)).batch(4), None
    return inputs, labels


CASES = {
    "tagger": (lambda: tiny_tagger(False), tagger_data, {}),
    "translator": (lambda: tiny_translator("gru-attention"), translator_data,
                   {"loss": "sparse_categorical_crossentropy", "metrics": ["accuracy"]}),
}


def trained(case, as_dataset, fit):
    """`(variables made inside a trace, weights after fit)` of a fresh model of `case`."""
    make, data, compile_args = CASES[case]
    keras.utils.set_random_seed(5)
    model = make()
    model.compile(keras.optimizers.Adam(0.01), **compile_args)
    x, y = data(as_dataset)
    made_in_a_trace = []

    def record(next_creator, **kwargs):
        if tf.inside_function():
            made_in_a_trace.append(kwargs.get("name"))
        return next_creator(**kwargs)

    with tf.variable_creator_scope(record):
        fit(model, x, y, epochs=1, batch_size=4, verbose=0, shuffle=False)
    return made_in_a_trace, [w.numpy() for w in model.weights]


# The tagger from arrays (no compiled metrics), the translator from a dataset (with some).
@pytest.mark.parametrize("case, as_dataset", [("tagger", False), ("translator", True)])
def test_fit_makes_no_variable_inside_its_trace_and_trains_as_keras_does(case, as_dataset):
    # Keras's own fit (the mixin skipped) makes the optimizer's and the metrics' variables in
    # the first trace of the training step, which tf.function then traces again.
    made_by_keras, keras_weights = trained(case, as_dataset, keras.Model.fit)
    made, weights = trained(case, as_dataset, lambda model, *a, **k: model.fit(*a, **k))
    assert made_by_keras
    assert made == []
    # The same arithmetic in the same order (equal to the bit on the machines measured; the
    # tolerance only spares a CPU whose threads could reorder a reduction).
    for ours, theirs in zip(weights, keras_weights):
        np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-7)


def test_batch_spec_leaves_the_batch_size_unknown_and_declines_other_data():
    ids = np.zeros((8, 5), "int32")
    texts = np.array(["a b", "c"], dtype=object)
    spec = batch_spec((ids, tf.zeros((8, 5, 3))), np.zeros((8, 5)), np.ones(8))
    assert spec == (
        (tf.TensorSpec((None, 5), tf.int32), tf.TensorSpec((None, 5, 3), tf.float32)),
        tf.TensorSpec((None, 5), tf.float64), tf.TensorSpec((None,), tf.float64))
    assert batch_spec(texts) == (tf.TensorSpec((None,), tf.string),)
    assert batch_spec({"words": ids}, None) == ({"words": tf.TensorSpec((None, 5), tf.int32)},)
    assert batch_spec([[1, 2], [3, 4]], np.zeros(2)) is None  # Python lists: Keras decides
    assert batch_spec(iter([ids]), None) is None  # a generator
    assert batch_spec(np.float32(1.0), None) is None  # a scalar has no batch
