"""The one decorator that registers every seqlab layer for Keras serialization, and the
`Bidirectional` wrapper and `load_model` that a reused memory address cannot trip."""

import contextlib

import keras

PACKAGE = "seqlab"
# Where Keras's object-sharing scope keeps the configs it has serialized, by object id.
_CONFIG_MAP = "shared_objects/id_to_config_map"


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
    on one run in many. seqlab's own models now build their wrappers with `bidirectional`
    and load with Keras's `load_model` too; this one also covers a functional model holding
    `keras.layers.Bidirectional` (the same fault in Keras's `from_config`, for Keras's own
    LSTM as well). While the file loads, serializations record nothing
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


def bidirectional(layer, **kwargs):
    """`keras.layers.Bidirectional(layer, **kwargs)`, built with no serialization records.

    A seqlab model builds its `Bidirectional` layers in its constructor, which
    `keras.saving.load_model` runs inside its object-sharing scope; there the wrapper's copies
    of `layer` (serialized twice, forward and backward) were recorded under `id(layer)`, and a
    template freed earlier at the same address made the copy resolve to another wrapper's
    layer (a tagger loaded with `keras.saving.load_model` failed so in 3 of 360 loads in one
    process, and once in this project's test suite). Built here, the copies are recorded
    nowhere, so the model loads with Keras's own `load_model` as well (0 of 360). Only this
    thread's records stop, for the wrapper's construction (Keras keeps the scope's maps per
    thread).
    """
    from keras.src.backend.common import global_state

    saved = global_state.get_global_attribute(_CONFIG_MAP)
    global_state.set_global_attribute(_CONFIG_MAP, None)
    try:
        return keras.layers.Bidirectional(layer, **kwargs)
    finally:
        global_state.set_global_attribute(_CONFIG_MAP, saved)

