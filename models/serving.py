"""Helpers for the checks that exported serving signatures run inside the graph."""

import tensorflow as tf


def dynamic_shape(tensor):
    """`tf.shape(tensor)` that graph optimisation cannot replace with the signature's static
    shape: what a loaded signature is really called with.

    A loaded SavedModel signature does not check the shapes of its inputs, and Grappler folds
    `tf.shape` of an input to the declared shape, so a check on it would never fire; reading the
    shape through a placeholder of unknown shape keeps it dynamic.
    """
    unshaped = tf.raw_ops.PlaceholderWithDefault(input=tensor, shape=tf.TensorShape(None))
    return tf.shape(unshaped)
