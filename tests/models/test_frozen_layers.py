"""A layer frozen inside a seqlab model or composite layer is still frozen when a `.keras`
file holding it is loaded."""

import json
import warnings
import zipfile

import keras
import numpy as np
import pytest

import tensorflow as tf

from seqlab.layers import CharacterEncoder, TokenAndPositionEmbedding, TransformerEncoderLayer
from seqlab.models import SequenceTagger, TextClassifier, TextClassifierEnsemble, Translator
from seqlab.layers._frozen import CONFIG_KEY, named_layers
from seqlab.models.text_classifier import adapt_vocabulary
from tests.models.test_tagger import tiny_batch, tiny_tagger

TEXTS = ["a good film", "a bad film", "so good", "so bad", "good and fine", "bad and dull"]
CLASSIFIER = dict(vocabulary=adapt_vocabulary(TEXTS, "gru"), kind="gru", embedding_dim=4,
                  units=4, sequence_length=8, seed=3)


def tagger():
    return tiny_tagger(False)


def tagger_batch():
    token_ids, char_ids, tag_ids = tiny_batch()
    return (token_ids, char_ids), tag_ids


def classifier_batch():
    return tf.constant(TEXTS), np.array([1, 0, 1, 0, 1, 0])


def translator_batch():
    rng = np.random.default_rng(0)
    source = rng.integers(4, 12, size=(8, 4)).astype("int32")
    target = rng.integers(4, 14, size=(8, 5)).astype("int32")
    return (source, target[:, :-1]), target[:, 1:]


# (make the model, its embedding's path, a batch, compile arguments)
CASES = {
    "tagger": (tagger, "word_embedding", tagger_batch, {}),
    "classifier": (
        lambda: TextClassifier(num_classes=2, **CLASSIFIER),
        "embedding", classifier_batch, {"loss": "sparse_categorical_crossentropy"}),
    "ensemble": (
        lambda: TextClassifierEnsemble(num_members=2, num_classes=2, **CLASSIFIER),
        "members.1.embedding", classifier_batch, {}),
    "translator": (
        lambda: Translator(12, 14, kind="gru-attention", embedding_dim=8, units=8, layers=1,
                           dropout=0.0, max_length=12),
        "source_embedding", translator_batch, {"loss": "sparse_categorical_crossentropy"}),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_frozen_embedding_stays_frozen_through_the_keras_file(case, tmp_path):
    make, path, batch, compile_args = CASES[case]
    model = make()
    inputs, labels = batch()
    model(inputs)
    layers = dict(named_layers(model))
    layers[path].trainable = False
    # Eagerly: what is tested is the file, and tracing the tagger's training step twice took
    # most of this test's time.
    model.compile(keras.optimizers.Adam(0.01), run_eagerly=True, **compile_args)
    model.fit(inputs, labels, epochs=1, verbose=0)  # the optimizer holds state
    frozen = layers[path].get_weights()
    model.save(tmp_path / "model.keras")

    with warnings.catch_warnings():
        # Before: "Skipping variable loading for optimizer ... because it has N variables
        # whereas the saved optimizer has M variables" (the embedding trainable again).
        warnings.simplefilter("error")
        loaded = keras.saving.load_model(tmp_path / "model.keras")
    loaded_layers = dict(named_layers(loaded))
    assert loaded_layers[path].trainable is False
    # The same trainable weights (Keras's names carry per-process counters: shapes here).
    assert [v.shape for v in loaded.trainable_variables] == [
        v.shape for v in model.trainable_variables]
    assert len(loaded.optimizer.variables) == len(model.optimizer.variables)
    # Training the loaded model leaves the frozen weights as they were, bit for bit.
    loaded.run_eagerly = True
    loaded.fit(inputs, labels, epochs=1, verbose=0)
    for before, after in zip(frozen, loaded_layers[path].get_weights()):
        np.testing.assert_array_equal(before, after)
    assert any(layer.trainable for name, layer in loaded_layers.items() if name != path)


def test_a_model_without_frozen_layers_keeps_its_config_as_before():
    model = tagger()
    assert CONFIG_KEY not in model.get_config()
    model.word_embedding.trainable = False
    assert model.get_config()[CONFIG_KEY] == ["word_embedding"]
    rebuilt = SequenceTagger.from_config(model.get_config())
    assert rebuilt.word_embedding.trainable is False and rebuilt.char_encoder.trainable is True


def edit_config(path, change):
    """Rewrites the model config inside a `.keras` file."""
    with zipfile.ZipFile(path) as archive:
        files = {name: archive.read(name) for name in archive.namelist()}
    config = json.loads(files["config.json"])
    change(config["config"])
    files["config.json"] = json.dumps(config).encode()
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)


@pytest.mark.parametrize("value, message", [
    (["word_embedding", "no_such_layer"], "does not have: no_such_layer"),
    ("word_embedding", "must be a list of layer paths"),
])
def test_a_saved_config_naming_layers_the_model_lacks_is_refused(tmp_path, value, message):
    model = tagger()
    inputs, _ = tagger_batch()
    model(inputs)
    model.word_embedding.trainable = False
    model.save(tmp_path / "model.keras")
    edit_config(tmp_path / "model.keras", lambda config: config.update({CONFIG_KEY: value}))
    with pytest.raises(ValueError, match=message):
        keras.saving.load_model(tmp_path / "model.keras")


def test_a_layer_frozen_inside_a_seqlab_layer_of_a_functional_model_stays_frozen(tmp_path):
    # Keras's functional config keeps each of its layers' trainable flag, not that of the
    # layers a seqlab layer builds inside itself: a user's frozen token embedding, say.
    words, chars = keras.Input((None,), dtype="int32"), keras.Input((None, 6), dtype="int32")
    embedding = TokenAndPositionEmbedding(20, 8, 8, mask_zero=True)
    characters = CharacterEncoder(10, embedding_dim=3, units=2)
    encoder = TransformerEncoderLayer(num_heads=2, ff_dim=8)
    hidden = encoder(keras.layers.Concatenate()([embedding(words), characters(chars)])[..., :8])
    model = keras.Model([words, chars], keras.layers.Dense(2)(hidden))
    embedding.token_embedding.trainable = False
    characters.embedding.trainable = False
    encoder.feedforward_output.trainable = False
    model.compile("adam", "mse", run_eagerly=True)
    rng = np.random.default_rng(0)
    inputs = [rng.integers(1, 20, (4, 8)), rng.integers(1, 10, (4, 8, 6))]
    model.fit(inputs, rng.normal(size=(4, 8, 2)), verbose=0)
    model.save(tmp_path / "model.keras")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loaded = keras.saving.load_model(tmp_path / "model.keras")
    frozen = {layer.name: [path for path, inner in named_layers(layer) if not inner.trainable]
              for layer in loaded.layers}
    assert frozen[embedding.name] == ["token_embedding"]
    assert frozen[characters.name] == ["embedding"]
    assert frozen[encoder.name] == ["feedforward_output"]
    assert len(loaded.trainable_variables) == len(model.trainable_variables)
