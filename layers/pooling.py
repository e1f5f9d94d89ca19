"""Pooling over time that respects the padding mask."""

import keras
from keras import ops

from seqlab.layers.registry import serializable


class _MaskedPooling(keras.layers.Layer):
    """`[B, T, D] -> [B, D]` over the steps the mask keeps; consumes the mask."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True

    def compute_mask(self, inputs, mask=None):
        return None

    def compute_output_shape(self, input_shape):
        return (input_shape[0], input_shape[2])


@serializable
class MaskedMeanPooling(_MaskedPooling):
    """Mean over the time steps the mask keeps: `[B, T, D] -> [B, D]`.

        outputs[b] = sum_t mask[b, t] * inputs[b, t] / max(1, sum_t mask[b, t])

    Padded steps add exactly zero, so padding a sequence does not change its mean; a fully
    masked row (an empty text) gives zeros, never NaN. (Keras's `GlobalAveragePooling1D` divides
    by the mask's sum and gives NaN for such a row.) Without a mask, the plain mean.

    Call arguments:
        inputs: `[B, T, D]`.
        mask: optional boolean `[B, T]`, True for real tokens; filled by Keras from the inputs'
            mask.

    Example:

    >>> x = keras.ops.ones((1, 3, 2))
    >>> MaskedMeanPooling()(x, mask=keras.ops.array([[True, False, False]])).shape
    TensorShape([1, 2])
    """

    def call(self, inputs, mask=None):
        if mask is None:
            return ops.mean(inputs, axis=1)
        keep = ops.expand_dims(mask, -1)
        total = ops.sum(ops.where(keep, inputs, ops.zeros_like(inputs)), axis=1)
        count = ops.sum(ops.cast(keep, inputs.dtype), axis=1)
        return total / ops.maximum(count, ops.ones_like(count))


@serializable
class MaskedMaxPooling(_MaskedPooling):
    """Maximum over the time steps the mask keeps, per feature: `[B, T, D] -> [B, D]`.

    Padded steps are left out, so padding a sequence does not change its maximum; a fully
    masked row (an empty text) gives zeros. Without a mask, the plain maximum.

    Call arguments:
        inputs: `[B, T, D]`.
        mask: optional boolean `[B, T]`, True for real tokens.
    """

    def call(self, inputs, mask=None):
        if mask is None:
            return ops.max(inputs, axis=1)
        keep = ops.expand_dims(mask, -1)
        lowest = ops.full_like(inputs, float("-inf"))
        maximum = ops.max(ops.where(keep, inputs, lowest), axis=1)
        return ops.where(ops.any(keep, axis=1), maximum, ops.zeros_like(maximum))
