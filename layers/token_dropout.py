"""Word dropout on token ids."""

import keras
from keras import ops

from seqlab.layers._checks import check_rate
from seqlab.layers.registry import serializable


@serializable
class TokenDropout(keras.layers.Layer):
    """Word dropout: while training, replaces each real token id by `unknown_id` with
    probability `rate`; padding (id 0) and inference are untouched.

    The model then cannot lean on a few rare words of the training set, and learns what an
    unknown word means from frequent ones.

    Args:
        rate: the share of tokens replaced, in [0, 1).
        unknown_id: the id of the unknown-word token (`[UNK]`, 1 for `TextVectorization`).
        seed: the seed of the random replacements.

    Call arguments:
        inputs: integer ids `[B, T]`.
        training: whether to replace tokens.

    Example:

    >>> ids = np.array([[4, 7, 0]])
    >>> TokenDropout(0.5, seed=1)(ids, training=True)  # some of 4, 7 become 1; 0 stays
    """

    def __init__(self, rate, unknown_id=1, seed=None, **kwargs):
        check_rate("rate", rate)
        super().__init__(**kwargs)
        self.rate = rate
        self.unknown_id = unknown_id
        self.seed = seed
        self.seed_generator = keras.random.SeedGenerator(seed)

    def call(self, inputs, training=False):
        if not training or self.rate == 0:
            return inputs
        drop = keras.random.uniform(ops.shape(inputs), seed=self.seed_generator) < self.rate
        drop = ops.logical_and(drop, ops.not_equal(inputs, 0))
        return ops.where(drop, ops.cast(self.unknown_id, inputs.dtype), inputs)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        config = super().get_config()
        config.update(rate=self.rate, unknown_id=self.unknown_id, seed=self.seed)
        return config
