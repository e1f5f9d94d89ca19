"""seqlab's models with `Bidirectional` layers load with Keras's own `load_model`, whatever
object ids Keras's object-sharing scope holds while they are rebuilt."""

import keras
import numpy as np
import pytest
from keras.src.saving import serialization_lib

from seqlab.layers import LSTM
from seqlab.layers.registry import bidirectional
from seqlab.models import TextClassifier
from seqlab.models.text_classifier import adapt_vocabulary
from tests.models.test_frozen_layers import CASES as FROZEN_CASES
from tests.models.test_frozen_layers import TEXTS, classifier_batch

# (make the model, a batch); each has at least one `Bidirectional` layer: the tagger two (the
# word BiLSTM and the character encoder's), the translator its encoder.
CASES = {
    "tagger": FROZEN_CASES["tagger"][::2],
    "translator": FROZEN_CASES["translator"][::2],
    "classifier": (
        lambda: TextClassifier(num_classes=2, vocabulary=adapt_vocabulary(TEXTS, "bilstm"),
                               kind="bilstm", embedding_dim=4, units=4, sequence_length=8,
                               seed=3),
        classifier_batch),
}


def every_id_looks_reused(monkeypatch):
    """What a reused memory address does inside Keras's load scope, made certain: every
    object id the scope looks up resolves to a layer of another wrapper (a forward LSTM).
    Returns that layer."""
    elsewhere = LSTM(2, name="another_wrappers_forward_layer")
    monkeypatch.setattr(serialization_lib, "get_shared_object", lambda obj_id: elsewhere)
    return elsewhere


def test_keras_bidirectional_built_inside_the_load_scope_takes_the_reused_layer(monkeypatch):
    # The failure itself (seen once in this project's test suite, on a tagger loaded with
    # `keras.saving.load_model`): Keras's wrapper serializes its layer twice inside the
    # scope, and the second copy is looked up by the first's id.
    every_id_looks_reused(monkeypatch)
    with serialization_lib.ObjectSharingScope():
        with pytest.raises(ValueError, match="should have different `go_backwards`"):
            keras.layers.Bidirectional(LSTM(3))


def test_seqlabs_bidirectional_inside_the_load_scope_copies_its_own_layer(monkeypatch):
    elsewhere = every_id_looks_reused(monkeypatch)
    with serialization_lib.ObjectSharingScope():
        wrapper = bidirectional(LSTM(3, return_sequences=True), name="bilstm")
        # The scope's maps are the scope's again after the wrapper is built.
        serialization_lib.record_object_after_serialization(elsewhere, {"module": "m"})
        assert serialization_lib.get_shared_object(id(elsewhere)) is elsewhere
    assert wrapper.name == "bilstm" and wrapper.forward_layer.return_sequences
    assert not wrapper.forward_layer.go_backwards and wrapper.backward_layer.go_backwards
    assert elsewhere not in (wrapper.forward_layer, wrapper.backward_layer)


@pytest.mark.parametrize("case", sorted(CASES))
def test_keras_load_model_rebuilds_each_bidirectional_layer_from_its_own(case, tmp_path,
                                                                         monkeypatch):
    make, batch = CASES[case]
    model = make()
    inputs, _ = batch()
    expected = keras.ops.convert_to_numpy(model(inputs))
    model.save(tmp_path / "model.keras")
    elsewhere = every_id_looks_reused(monkeypatch)
    loaded = keras.saving.load_model(tmp_path / "model.keras")
    wrappers = [layer for layer in loaded._flatten_layers()
                if isinstance(layer, keras.layers.Bidirectional)]
    assert wrappers
    for wrapper in wrappers:
        assert not wrapper.forward_layer.go_backwards and wrapper.backward_layer.go_backwards
        assert elsewhere not in (wrapper.forward_layer, wrapper.backward_layer)
    # The same weights: only float32 rounding between two calls.
    np.testing.assert_allclose(keras.ops.convert_to_numpy(loaded(inputs)), expected, atol=1e-6)
