"""Sinusoidal positional encoding and the token-plus-position embedding."""

import math

import keras
from keras import ops

from seqlab.layers._checks import check_positive_int
from seqlab.layers._checks import fresh_initializer
from seqlab.layers._frozen import KeepsFrozenLayers
from seqlab.layers.registry import serializable


def sinusoidal_encoding(length, depth, start_index=0, max_wavelength=10000, dtype="float32"):
    """The `[length, depth]` table PE(pos, 2i) = sin(pos / w^(2i/depth)), PE(pos, 2i+1) = cos(...).

    Rows are the positions `start_index, ..., start_index + length - 1`; `w` is
    `max_wavelength`. `length` and `start_index` may be tensors.
    """
    positions = ops.cast(ops.arange(length) + start_index, "float32")
    index = ops.arange(depth)
    even_index = ops.cast(index - index % 2, "float32")  # 2i for both 2i and 2i+1
    inverse_wavelengths = ops.power(float(max_wavelength), -even_index / depth)
    angles = ops.expand_dims(positions, 1) * ops.expand_dims(inverse_wavelengths, 0)
    table = ops.where(index % 2 == 0, ops.sin(angles), ops.cos(angles))
    return ops.cast(table, dtype)


def _check_max_wavelength(value):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 1:
        raise ValueError(
            "Received an invalid value for argument `max_wavelength`, expected a "
            f"number greater than 1. Received: max_wavelength={value!r}"
        )


@serializable
class PositionalEncoding(keras.layers.Layer):
    """Adds the sinusoidal positional encoding of Vaswani et al. (2017).

    PE(pos, 2i)   = sin(pos / max_wavelength^(2i / d_model))
    PE(pos, 2i+1) = cos(pos / max_wavelength^(2i / d_model))
    outputs[b, t] = inputs[b, t] + PE(start_index + t)

    Sine and cosine are interleaved (even feature index sine, odd cosine).
    The table is computed from the input's length, so any length works; the
    Keras mask of the inputs is passed on.

    Args:
        max_wavelength: the base of the wavelengths (10000 in the paper).
        **kwargs: base layer arguments (`name`, `dtype`, ...).

    Call arguments:
        inputs: `[B, T, d_model]`.
        start_index: position of `inputs[:, 0]` (an int or scalar tensor);
            non-zero when decoding one step at a time.

    Returns:
        `[B, T, d_model]`, the inputs plus the encoding.

    Example:

    >>> PositionalEncoding()(keras.ops.zeros((1, 4, 6))).shape
    TensorShape([1, 4, 6])
    """

    def __init__(self, max_wavelength=10000, **kwargs):
        _check_max_wavelength(max_wavelength)
        super().__init__(**kwargs)
        self.supports_masking = True
        self.max_wavelength = max_wavelength

    def call(self, inputs, start_index=0):
        shape = ops.shape(inputs)
        encoding = sinusoidal_encoding(
            shape[1], inputs.shape[-1], start_index, self.max_wavelength, inputs.dtype
        )
        return inputs + encoding

    def get_config(self):
        config = super().get_config()
        config["max_wavelength"] = self.max_wavelength
        return config


@serializable
class TokenAndPositionEmbedding(KeepsFrozenLayers, keras.layers.Layer):
    """Token embedding scaled by sqrt(d_model) plus the sinusoidal positional encoding.

    outputs[b, t] = sqrt(d_model) * E[inputs[b, t]] + PE(start_index + t)

    with PE as in `PositionalEncoding`. With `mask_zero=True`, id 0 is padding
    and the layer passes the mask `inputs != 0` on to the next layers.

    Args:
        vocabulary_size: number of token ids (ids are in `[0, vocabulary_size)`).
        sequence_length: the longest sequence the layer is built for: building it
            for a longer input of known length raises `ValueError`. Once built, the layer
            computes any length (the sinusoid is defined at every position), so a caller
            that must bound its inputs checks them itself.
        embedding_dim: d_model, the size of each embedding vector.
        mask_zero: whether id 0 is padding to be masked.
        max_wavelength: the base of the positional wavelengths.
        embeddings_initializer: initializer of the embedding matrix.
        **kwargs: base layer arguments (`name`, `dtype`, ...).

    Call arguments:
        inputs: integer ids `[B, T]`.
        start_index: position of `inputs[:, 0]` (for step-by-step decoding).

    Returns:
        `[B, T, embedding_dim]`.

    Example:

    >>> embed = TokenAndPositionEmbedding(100, 16, 8, mask_zero=True)
    >>> embed(keras.ops.array([[5, 7, 0]])).shape
    TensorShape([1, 3, 8])
    """

    def __init__(
        self,
        vocabulary_size,
        sequence_length,
        embedding_dim,
        mask_zero=False,
        max_wavelength=10000,
        embeddings_initializer="uniform",
        **kwargs,
    ):
        check_positive_int("vocabulary_size", vocabulary_size)
        check_positive_int("sequence_length", sequence_length)
        check_positive_int("embedding_dim", embedding_dim)
        _check_max_wavelength(max_wavelength)
        super().__init__(**kwargs)
        self.vocabulary_size = vocabulary_size
        self.sequence_length = sequence_length
        self.embedding_dim = embedding_dim
        self.mask_zero = mask_zero
        self.max_wavelength = max_wavelength
        self.embeddings_initializer = keras.initializers.get(embeddings_initializer)

    def build(self, inputs_shape):
        if len(inputs_shape) > 1 and inputs_shape[1] is not None:
            if inputs_shape[1] > self.sequence_length:
                raise ValueError(
                    f"The inputs are longer than `sequence_length`. Received: "
                    f"inputs_shape={tuple(inputs_shape)}, "
                    f"sequence_length={self.sequence_length}"
                )
        self.token_embedding = keras.layers.Embedding(
            self.vocabulary_size,
            self.embedding_dim,
            embeddings_initializer=fresh_initializer(self.embeddings_initializer),
            dtype=self.dtype_policy,
            name="token_embedding",
        )
        self.token_embedding.build(inputs_shape)
        self.position_encoding = PositionalEncoding(
            self.max_wavelength, dtype=self.dtype_policy, name="position_encoding"
        )

    def call(self, inputs, start_index=0):
        embedded = self.token_embedding(inputs)
        embedded = embedded * ops.cast(math.sqrt(self.embedding_dim), embedded.dtype)
        return self.position_encoding(embedded, start_index=start_index)

    def compute_mask(self, inputs, mask=None):
        if not self.mask_zero:
            return None
        return ops.not_equal(inputs, 0)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "vocabulary_size": self.vocabulary_size,
                "sequence_length": self.sequence_length,
                "embedding_dim": self.embedding_dim,
                "mask_zero": self.mask_zero,
                "max_wavelength": self.max_wavelength,
                "embeddings_initializer": keras.initializers.serialize(
                    self.embeddings_initializer
                ),
            }
        )
        return config
