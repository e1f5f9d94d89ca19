"""The one decorator that registers every seqlab layer for Keras serialization."""

import keras

PACKAGE = "seqlab"


def serializable(cls):
    """Registers `cls` under the package "seqlab" (as `"seqlab>ClassName"`).

    Every layer in `layers/` is decorated with this, so that `.keras` files and
    configs written by seqlab load with `keras.saving.load_model` once `layers`
    has been imported, without `custom_objects`.
    """
    return keras.saving.register_keras_serializable(package=PACKAGE)(cls)
