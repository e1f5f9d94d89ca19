"""Loading `.keras` files with `Bidirectional` layers: `seqlab.layers.registry.load_model`."""

import keras
import numpy as np
import pytest
from keras.src.saving import serialization_lib

from seqlab.layers import LSTM
from seqlab.layers.registry import load_model, no_serialization_records


def _bidirectional_inside_a_load_scope_with_a_reused_address():
    """What a reused memory address does inside Keras's load scope, made certain: the
    forward layer's id is already in the scope's maps (as a freed object's would be) and
    stands for a backward layer loaded earlier."""
    forward = LSTM(3, return_sequences=True)
    loaded_earlier = LSTM(3, return_sequences=True, go_backwards=True)
    with serialization_lib.ObjectSharingScope():
        serialization_lib.record_object_after_serialization(forward, {"module": "m"})
        serialization_lib.record_object_after_deserialization(loaded_earlier, id(forward))
        return keras.layers.Bidirectional(
            forward, backward_layer=LSTM(3, return_sequences=True, go_backwards=True))


def test_keras_bidirectional_resolves_to_another_object_where_an_address_is_reused():
    # The failure CI met once (a BiLSTM's forward layer loaded as another's backward one).
    with pytest.raises(ValueError, match="should have different `go_backwards`"):
        _bidirectional_inside_a_load_scope_with_a_reused_address()


def test_without_serialization_records_the_forward_layer_is_its_own():
    with no_serialization_records():
        layer = _bidirectional_inside_a_load_scope_with_a_reused_address()
    assert not layer.forward_layer.go_backwards and layer.backward_layer.go_backwards
    # Outside the block, Keras's own function is back.
    assert serialization_lib.record_object_after_serialization.__name__ == (
        "record_object_after_serialization")


def test_load_model_round_trips_a_model_with_two_bilstms(tmp_path):
    inputs = keras.Input((5, 2))
    hidden = keras.layers.Bidirectional(LSTM(3, return_sequences=True))(inputs)
    outputs = keras.layers.Bidirectional(LSTM(2))(hidden)
    model = keras.Model(inputs, outputs)
    model.save(tmp_path / "m.keras")
    loaded = load_model(tmp_path / "m.keras")
    x = np.random.default_rng(0).normal(size=(4, 5, 2)).astype("float32")
    np.testing.assert_allclose(loaded.predict(x, verbose=0), model.predict(x, verbose=0),
                               atol=1e-6)  # the same weights: only float32 rounding
    assert serialization_lib.record_object_after_serialization.__name__ == (
        "record_object_after_serialization")
