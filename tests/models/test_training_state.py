"""seqlab's models build their training state before a user's `fit` or `evaluate` traces."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from seqlab.layers import GRU
from seqlab.models._training import batch_spec, build_training_state
from seqlab.models import TextClassifier
from tests.models.test_frozen_layers import (
    CLASSIFIER,
    classifier_batch,
    tagger_batch,
    translator_batch,
)
from tests.models.test_tagger import tiny_tagger
from tests.models.test_translator import tiny_translator


def data_of(batch):
    """`as_dataset -> (x, y)`: `batch()`'s arrays, or a dataset of them (and None)."""
    def data(as_dataset):
        inputs, labels = batch()
        if as_dataset:
            return tf.data.Dataset.from_tensor_slices((inputs, labels)).batch(4), None
        return inputs, labels

    return data


CASES = {
    "classifier": (lambda: TextClassifier(num_classes=2, **CLASSIFIER), data_of(classifier_batch),
                   {"loss": "sparse_categorical_crossentropy"}),
    "tagger": (lambda: tiny_tagger(False), data_of(tagger_batch), {}),
    "translator": (lambda: tiny_translator("gru-attention"), data_of(translator_batch),
                   {"loss": "sparse_categorical_crossentropy", "metrics": ["accuracy"]}),
}


def made_in_a_trace(fit):
    """`(names of the variables made inside a trace while `fit()` ran, its result)`."""
    made = []

    def record(next_creator, **kwargs):
        if tf.inside_function():
            made.append(kwargs.get("name"))
        return next_creator(**kwargs)

    with tf.variable_creator_scope(record):
        return made, fit()


def assert_same_weights(ours, keras_weights):
    # The same arithmetic in the same order (equal to the bit on the machines measured; the
    # tolerance only spares a CPU whose threads could reorder a reduction).
    for mine, theirs in zip(ours, keras_weights):
        np.testing.assert_allclose(mine, theirs, rtol=1e-6, atol=1e-7)


def trained(case, as_dataset, fit):
    """`(variables made inside a trace, weights after fit)` of a fresh model of `case`."""
    make, data, compile_args = CASES[case]
    keras.utils.set_random_seed(5)
    model = make()
    model.compile(keras.optimizers.Adam(0.01), **compile_args)
    x, y = data(as_dataset)
    made, _ = made_in_a_trace(
        lambda: fit(model, x, y, epochs=1, batch_size=4, verbose=0, shuffle=False))
    return made, [w.numpy() for w in model.weights]


# The tagger from arrays (no compiled metrics), the translator from a dataset (with some),
# the classifier (not built by its constructor) from an array of raw strings.
@pytest.mark.parametrize("case, as_dataset",
                         [("tagger", False), ("translator", True), ("classifier", False)])
def test_fit_makes_no_variable_inside_its_trace_and_trains_as_keras_does(case, as_dataset):
    # Keras's own fit (the mixin skipped) makes the optimizer's and the metrics' variables in
    # the first trace of the training step, which tf.function then traces again.
    made_by_keras, keras_weights = trained(case, as_dataset, keras.Model.fit)
    made, weights = trained(case, as_dataset, lambda model, *a, **k: model.fit(*a, **k))
    assert made_by_keras
    assert made == []
    assert_same_weights(weights, keras_weights)


def test_the_pipelines_build_the_training_state_of_any_model_before_fit():
    """`build_training_state`, which the run pipelines call before `fit`, on a user's
    Sequential model of a seqlab layer (a dataset, compiled metrics)."""
    x = np.random.default_rng(0).normal(size=(40, 6, 2)).astype("float32")
    y = np.random.default_rng(1).normal(size=(40, 1)).astype("float32")
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(16)

    def trained(prebuild):
        keras.utils.set_random_seed(3)
        model = keras.Sequential([keras.Input((6, 2)), GRU(4), keras.layers.Dense(1)])
        model.compile(optimizer="adam", loss="mse", metrics=["mae"])
        if prebuild:
            build_training_state(model, dataset)
            assert model.optimizer.built
        made, _ = made_in_a_trace(
            lambda: model.fit(dataset, epochs=2, verbose=0, shuffle=False))
        return made, [w.numpy() for w in model.weights]

    made_by_keras, keras_weights = trained(prebuild=False)
    made, weights = trained(prebuild=True)
    assert made_by_keras  # what the build is for: Keras makes them in the trace otherwise
    assert made == []
    assert_same_weights(weights, keras_weights)


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


def test_evaluate_of_a_loaded_model_makes_no_variable_inside_its_trace(tmp_path):
    # A model loaded from a .keras file has its optimizer state but not its compiled
    # metrics' variables: Keras made them in the first trace of the evaluation step.
    make, data, compile_args = CASES["translator"]
    model = make()
    model.compile(keras.optimizers.Adam(0.01), **compile_args)
    x, y = data(False)
    model.optimizer.build(model.trainable_variables)  # as after training: its state is saved
    model.save(tmp_path / "model.keras")
    figures = {}
    for name, evaluate in [("keras", keras.Model.evaluate), ("ours", type(model).evaluate)]:
        loaded = keras.saving.load_model(tmp_path / "model.keras")
        made, figures[name] = made_in_a_trace(
            lambda: evaluate(loaded, x, y, verbose=0, return_dict=True))
        assert bool(made) == (name == "keras")
    assert figures["ours"].keys() == figures["keras"].keys() == {"loss", "accuracy"}
    for key, value in figures["ours"].items():
        np.testing.assert_allclose(value, figures["keras"][key], rtol=1e-6)


@pytest.mark.parametrize("method", ["fit", "evaluate"])
def test_an_uncompiled_model_gets_keras_own_error(method):
    # The mixin asks nothing of a model that has no optimizer yet: Keras says what is wrong.
    (x, y), model = CASES["tagger"][1](False), tiny_tagger(False)
    with pytest.raises(ValueError, match=r"You must call `compile\(\)` before using the model"):
        getattr(model, method)(x, y, verbose=0)
