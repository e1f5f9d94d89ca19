"""A word's vector from its characters, for taggers (Lample et al., 2016; Ma and Hovy, 2016)."""

import keras
import tensorflow as tf
from keras import ops

from seqlab.layers._checks import check_positive_int
from seqlab.layers._frozen import KeepsFrozenLayers
from seqlab.layers.lstm import LSTM
from seqlab.layers.registry import bidirectional, serializable

CHAR_ENCODERS = ("lstm", "cnn")


@serializable
class CharacterEncoder(KeepsFrozenLayers, keras.layers.Layer):
    """One vector per word from the word's characters.

    Character ids `[batch, time, chars]` (0 = padding) are embedded, then
    - `kind="lstm"`: a bidirectional LSTM reads each word's characters; the output is its last
      forward and backward states, `2 * units` values (Lample et al., 2016);
    - `kind="cnn"`: a convolution of `units` filters over `kernel_size` characters (tanh), max
      over the word's characters, `units` values (Ma and Hovy, 2016).
    Padding characters are masked (the CNN sees zeros there and they never win the max). A word
    without characters (a padded position) is masked in the output.

    Args:
        vocabulary_size: number of character ids (padding and unknown included).
        embedding_dim: character embedding size.
        units: LSTM units per direction, or CNN filters.
        kind: "lstm" or "cnn".
        kernel_size: CNN kernel width.
        seed: seed of the initializers.

    Call arguments:
        char_ids: int `[batch, time, chars]`.

    Returns:
        float `[batch, time, output_dim]` with `output_dim` 2 * units (lstm) or units (cnn).
    """

    def __init__(self, vocabulary_size, embedding_dim=25, units=25, kind="lstm", kernel_size=3,
                 seed=None, **kwargs):
        super().__init__(**kwargs)
        if kind not in CHAR_ENCODERS:
            raise ValueError(f"kind must be one of {', '.join(CHAR_ENCODERS)}. Received: "
                             f"kind={kind!r}")
        check_positive_int("vocabulary_size", vocabulary_size)
        check_positive_int("embedding_dim", embedding_dim)
        check_positive_int("units", units)
        check_positive_int("kernel_size", kernel_size)
        self.vocabulary_size = vocabulary_size
        self.embedding_dim = embedding_dim
        self.units = units
        self.kind = kind
        self.kernel_size = kernel_size
        self.seed = seed

    @property
    def output_dim(self):
        return 2 * self.units if self.kind == "lstm" else self.units

    def build(self, input_shape):
        self.embedding = keras.layers.Embedding(
            self.vocabulary_size, self.embedding_dim, mask_zero=True, name="char_embedding",
            embeddings_initializer=keras.initializers.RandomUniform(-0.1, 0.1, seed=self.seed),
        )
        self.embedding.build((None, None))
        if self.kind == "lstm":
            self.encoder = bidirectional(
                LSTM(self.units, seed=self.seed,
                     kernel_initializer=keras.initializers.GlorotUniform(seed=self.seed)),
                name="char_bilstm",
            )
        else:
            self.encoder = keras.layers.Conv1D(
                self.units, self.kernel_size, padding="same", activation="tanh",
                kernel_initializer=keras.initializers.GlorotUniform(seed=self.seed),
                name="char_cnn",
            )
        self.encoder.build((None, None, self.embedding_dim))

    def call(self, char_ids):
        # A batch whose words are all empty has no character step: one step of padding (masked)
        # gives each word the encoding of an empty word, zeros, instead of a loop of no steps.
        if not char_ids.shape[2]:  # 0, or not known while tracing
            missing = tf.maximum(1 - tf.shape(char_ids)[2], 0)
            char_ids = tf.pad(char_ids, [[0, 0], [0, 0], [0, missing]])
        shape = ops.shape(char_ids)
        words = ops.reshape(char_ids, (-1, shape[2]))
        mask = ops.not_equal(words, 0)
        embedded = self.embedding(words)
        if self.kind == "lstm":
            encoded = self.encoder(embedded, mask=mask)
        else:
            embedded = embedded * ops.cast(mask, embedded.dtype)[..., None]
            features = self.encoder(embedded)
            lowest = ops.cast(-1e9, features.dtype)
            features = ops.max(ops.where(mask[..., None], features, lowest), axis=1)
            encoded = ops.where(ops.any(mask, axis=1)[:, None], features, 0.0)
        return ops.reshape(encoded, (shape[0], shape[1], self.output_dim))

    def compute_mask(self, char_ids, mask=None):
        return ops.any(ops.not_equal(char_ids, 0), axis=-1)

    def compute_output_shape(self, input_shape):
        return (input_shape[0], input_shape[1], self.output_dim)

    def get_config(self):
        config = super().get_config()
        config.update(
            vocabulary_size=self.vocabulary_size, embedding_dim=self.embedding_dim,
            units=self.units, kind=self.kind, kernel_size=self.kernel_size, seed=self.seed,
        )
        return config
