"""The one decorator that registers every seqlab layer for Keras serialization, and a
`load_model` that Keras's `Bidirectional` cannot trip."""

import contextlib

import keras

PACKAGE = "seqlab"


def serializable(cls):
    """Registers `cls` under the package "seqlab" (as `"seqlab>ClassName"`).

    Every layer in `layers/` is decorated with this, so that `.keras` files and
    configs written by seqlab load with `keras.saving.load_model` once `layers`
    has been imported, without `custom_objects`.
    """
    return keras.saving.register_keras_serializable(package=PACKAGE)(cls)


def load_model(path, **kwargs):
    """`keras.saving.load_model(path, **kwargs)`, safe for `Bidirectional` layers.

    Keras loads a `.keras` file inside a scope that shares objects by the ids the FILE
    recorded. `keras.layers.Bidirectional` re-serializes its layer in `__init__` to recreate
    it, and inside that scope the serialization records THIS process's object ids in the same
    maps: when a freed object's address is reused by another (which depends on the memory
    layout), the recreated layer can resolve to an unrelated object already loaded. Seen in
    this project's CI: a tagger's forward LSTM loaded as the backward LSTM of the other
    BiLSTM ("Forward layer and backward layer should have different `go_backwards` value"),
    on one run in many. While the file loads, serializations record nothing
    (`no_serialization_records`): the file's own shared objects still resolve.
    """
    with no_serialization_records():
        return keras.saving.load_model(path, **kwargs)


@contextlib.contextmanager
def no_serialization_records():
    """Keras's serializations record no object ids inside this block (`load_model`). Not
    thread-safe: it swaps a function of Keras's serialization module for the block."""
    from keras.src.saving import serialization_lib

    record = serialization_lib.record_object_after_serialization
    serialization_lib.record_object_after_serialization = lambda obj, config: None
    try:
        yield
    finally:
        serialization_lib.record_object_after_serialization = record
