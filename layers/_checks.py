"""Constructor-argument checks shared by seqlab's layers."""

import keras


def check_positive_int(name, value, allow_none=False):
    """Raises `ValueError` unless `value` is a positive int (or None if allowed)."""
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        expected = "a positive integer or None" if allow_none else "a positive integer"
        raise ValueError(
            f"Received an invalid value for argument `{name}`, expected {expected}. "
            f"Received: {name}={value!r}"
        )


def check_rate(name, value):
    """Raises `ValueError` unless `value` is a rate in [0, 1)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 1:
        raise ValueError(
            f"Received an invalid value for argument `{name}`, expected a float in "
            f"[0, 1). Received: {name}={value!r}"
        )


def fresh_initializer(initializer):
    """A new instance of `initializer` with the same config.

    Keras 3 initializers without a seed draw a default seed once, at construction,
    so one instance reused for two weights of the same shape gives them equal
    values; every weight and sublayer therefore gets its own instance.
    """
    initializer = keras.initializers.get(initializer)
    return initializer.__class__.from_config(initializer.get_config())
