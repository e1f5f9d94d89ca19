"""Helpers for the checks that exported serving signatures run inside the graph."""

import tensorflow as tf

from seqlab.data.errors import MAX_ABS_VALUE


def dynamic_shape(tensor):
    """`tf.shape(tensor)` that graph optimisation cannot replace with the signature's static
    shape: what a loaded signature is really called with.

    A loaded SavedModel signature does not check the shapes of its inputs, and Grappler folds
    `tf.shape` of an input to the declared shape, so a check on it would never fire; reading the
    shape through a placeholder of unknown shape keeps it dynamic.
    """
    unshaped = tf.raw_ops.PlaceholderWithDefault(input=tensor, shape=tf.TensorShape(None))
    return tf.shape(unshaped)


def checked_rank(tensor, name, expected, rank):
    """`tensor` behind a check of its rank inside the graph (`InvalidArgumentError` "`name`
    must be `expected` (rank `rank`)")."""
    ranked = tf.debugging.assert_equal(
        tf.size(dynamic_shape(tensor)), rank, message=f"{name} must be {expected} (rank {rank})")
    with tf.control_dependencies([ranked]):
        return tf.identity(tensor)


def checked_utf8(strings, name):
    """`strings` behind a check inside the graph that every one is UTF-8 text
    (`InvalidArgumentError` "`name` must be UTF-8 text"), as the command line refuses a file that
    is not: the graph's string ops read such bytes without a word (a made-up answer)."""
    valid = tf.reduce_all(tf.equal(
        strings, tf.strings.unicode_transcode(strings, "UTF-8", "UTF-8", errors="replace")))
    checked = tf.debugging.assert_equal(valid, True, message=f"{name} must be UTF-8 text")
    with tf.control_dependencies([checked]):
        return tf.identity(strings)


def checked_ids(ids, name, size, size_name):
    """`ids` as int32 `[B, T]`, refused unless they are integer ids of rank 2 within
    `[0, size)`: a `ValueError` for the dtype or a known wrong rank, an `InvalidArgumentError`
    (in the graph too) for the rank or values seen only when run. `size_name` names the size
    in the messages ("source_vocabulary_size")."""
    # Converted without a dtype first: float ids would be truncated silently by a cast.
    ids = tf.convert_to_tensor(ids)
    if not ids.dtype.is_integer:
        raise ValueError(f"{name} must be integer ids in [0, {size}). Received: dtype "
                         f"{ids.dtype.name}")
    expected = f"{name} must be [batch, time] (rank 2)"
    if ids.shape.rank is not None and ids.shape.rank != 2:
        raise ValueError(f"{expected}. Received: shape {ids.shape}")
    # In the graph (a shape unknown when traced): checked, then known to the layers.
    ids = tf.ensure_shape(checked_rank(ids, name, "[batch, time]", 2), [None, None])
    # Checked before the cast to int32, which would wrap large int64 ids into the range.
    message = f"{name} must lie in [0, {size_name}={size})"
    checks = [tf.debugging.assert_non_negative(ids, message=message),
              # In int64: the size cast to a narrow dtype (int8, uint8) would wrap.
              tf.debugging.assert_less(tf.cast(ids, tf.int64), tf.constant(size, tf.int64),
                                       message=message)]
    with tf.control_dependencies(checks):
        return tf.cast(ids, tf.int32)


def checked_input(tensor, name, expected, rank, dimensions):
    """`tensor` behind the checks a serving signature runs on its input, inside the graph: its
    rank, then each of `dimensions`, then finite values of at most `MAX_ABS_VALUE` only. Each
    failure is an `InvalidArgumentError` whose message names the input and what was expected.

    Args:
        tensor: the signature's input.
        name: its name in the messages ("window", "history").
        expected: its expected form in the messages, e.g. "float32[batch, 24, 3]".
        rank: its rank.
        dimensions: `(axis, assertion, value, what)` each: `assertion(size of axis, value)`
            (`tf.debugging.assert_equal`, `assert_greater_equal`, ...), its message ending in
            `what`.
    """
    tensor = checked_rank(tensor, name, expected, rank)
    shape = dynamic_shape(tensor)
    checks = [assertion(shape[axis], value, message=f"{name} must be {expected}: {what}")
              for axis, assertion, value, what in dimensions]
    with tf.control_dependencies(checks):
        finite = tf.debugging.check_numerics(
            tensor, f"{name} must hold finite values only ({expected})")
    # As the command line reads them (`data.errors.MAX_ABS_VALUE`): larger values overflow
    # float32 in the network (a forecast of -inf from a window of 1e25).
    bounded = tf.debugging.assert_less_equal(
        tf.abs(finite), tf.cast(MAX_ABS_VALUE, finite.dtype),
        message=f"{name} must hold values of at most +-{MAX_ABS_VALUE:g} ({expected})")
    with tf.control_dependencies([bounded]):
        return tf.identity(finite)
