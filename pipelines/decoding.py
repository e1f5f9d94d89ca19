"""Decoding: turning a model's next-token logits into token sequences, in TensorFlow ops.

Every decoder here drives a step function

    step_fn(token_ids [batch] int32, state) -> (logits [batch, vocab], state)

where `state` is any nested structure of tensors whose first dimension is the batch (a
recurrent model's states, a Transformer's key/value cache). A sampler is called with the logits
of the first token to choose (those after the prompt), the state that produced them and a number
of steps, and runs the whole loop as a `tf.while_loop`, so it works eagerly, inside a
`tf.function` and inside an exported SavedModel alike.

Samplers are small classes that differ in one method, `get_next_token(logits, step)` (as
keras-hub's samplers do), and are chosen by name with `get_sampler`:

- `"greedy"`: the most probable token (argmax).
- `"random"`: a sample from softmax(logits / temperature), optionally from the `top_k` most
  probable tokens only; temperature 0 means argmax. Each row draws its uniform numbers from
  TensorFlow's stateless generator with its own seed, so the same seed gives the same tokens,
  eagerly or in a SavedModel, whatever else is in the batch.

A sampler may prepare per-decoding data before the loop in `start` (the random sampler draws
its uniform numbers there, so that the loop runs no per-row random op). A sampler that keeps
several hypotheses per row (beam search) overrides `__call__` as well.
"""

import numpy as np
import tensorflow as tf


def _relaxed_batch_shape(tensor):
    """The shape of `tensor` with an unknown first (batch) dimension, as a loop invariant."""
    return tf.TensorShape([None]).concatenate(tensor.shape[1:])


class Sampler:
    """Base class of the samplers: the decoding loop. Subclasses implement `get_next_token`.

    Call arguments:
        step_fn: `(token_ids [batch], state) -> (logits [batch, vocab], state)`.
        logits: `[batch, vocab]`, the scores of the first token to choose.
        state: the state that produced `logits` (any nested structure of tensors with a leading
            batch dimension; may be empty).
        num_steps: the number of tokens to choose (int or scalar int32 tensor).
        end_token_id: optional; a row that has chosen this token is finished: its later tokens
            are this token too, and the loop stops early when every row is finished.

    Returns:
        `(tokens, logits, state)`: the chosen tokens, int32 `[batch, steps]` (`steps` is
        `num_steps`, or fewer when every row finished early), and the logits and state after
        the last token was fed to `step_fn`, so that decoding can continue from them.

    Example:

    >>> def step_fn(token_ids, state):  # a toy model: the next token is always token + 1
    ...     return tf.one_hot((token_ids + 1) % 5, 5), state
    >>> tokens, _, _ = get_sampler("greedy")(step_fn, tf.one_hot([2], 5), (), num_steps=4)
    >>> tokens.numpy().tolist()
    [[2, 3, 4, 0]]
    """

    def __call__(self, step_fn, logits, state, num_steps, end_token_id=None):
        logits = tf.convert_to_tensor(logits)
        state = tf.nest.map_structure(tf.convert_to_tensor, state)
        batch = tf.shape(logits)[0]
        num_steps = tf.convert_to_tensor(num_steps, tf.int32)
        tokens = tf.TensorArray(tf.int32, size=0, dynamic_size=True, element_shape=[None])
        finished = tf.zeros([batch], tf.bool)
        self.start(logits, num_steps)

        def condition(step, logits, state, tokens, finished):
            running = step < num_steps
            if end_token_id is not None:
                running = running & tf.logical_not(tf.reduce_all(finished))
            return running

        def body(step, logits, state, tokens, finished):
            token = tf.cast(self.get_next_token(logits, step), tf.int32)
            if end_token_id is not None:
                token = tf.where(finished, tf.constant(end_token_id, tf.int32), token)
                finished = finished | tf.equal(token, end_token_id)
            tokens = tokens.write(step, token)
            logits, state = step_fn(token, state)
            return step + 1, logits, state, tokens, finished

        loop_vars = (tf.constant(0), logits, state, tokens, finished)
        invariants = (
            tf.TensorShape([]),
            _relaxed_batch_shape(logits),
            tf.nest.map_structure(_relaxed_batch_shape, state),
            tf.TensorShape(None),
            tf.TensorShape([None]),
        )
        _, logits, state, tokens, _ = tf.while_loop(
            condition, body, loop_vars, shape_invariants=invariants
        )
        # [steps, batch] -> [batch, steps]; the reshape keeps the batch when no step ran.
        tokens = tf.reshape(tf.transpose(tokens.stack()), [batch, -1])
        return tokens, logits, state

    def start(self, logits, num_steps):
        """Prepares a decoding of `num_steps` steps from `logits`; `__call__` calls it before
        the loop."""
        del logits, num_steps  # the base class needs nothing

    def get_next_token(self, logits, step):
        """The token each row chooses: int `[batch]` from `logits` `[batch, vocab]` at `step`."""
        raise NotImplementedError


class GreedySampler(Sampler):
    """Chooses the most probable token at every step (argmax of the logits)."""

    def get_next_token(self, logits, step):
        return tf.argmax(logits, axis=-1, output_type=tf.int32)


class RandomSampler(Sampler):
    """Samples from softmax(logits / temperature), optionally among the `top_k` best tokens.

    Sampling is by inverse CDF: row r's token at step t is the first token whose cumulative
    probability reaches u[r, t], where u[r, :] are the first `num_steps` numbers of TensorFlow's
    stateless uniform stream seeded with `(seed[r], 0)` (drawn in `start`). The same seed gives
    the same tokens, and a shorter decoding gives a prefix of a longer one.

    Args:
        temperature: a float or a float tensor `[batch]` (one per row). Below 1 sharpens the
            distribution, above 1 flattens it; 0 means argmax (no division by zero).
        top_k: keep only the `top_k` most probable tokens of each step (ties with the k-th
            are kept too); None or 0 keeps every token.
        seed: an int or an int tensor `[batch]` (one per row).
    """

    def __init__(self, temperature=1.0, top_k=None, seed=0):
        if isinstance(temperature, (int, float)) and temperature < 0:
            raise ValueError(
                f"temperature must be 0 (argmax) or positive. Received: temperature={temperature}"
            )
        if top_k is not None and (not isinstance(top_k, int) or top_k < 0):
            raise ValueError(f"top_k must be a non-negative integer. Received: top_k={top_k!r}")
        self.temperature = temperature
        self.top_k = top_k or None
        self.seed = seed
        self.uniforms = None

    def start(self, logits, num_steps):
        batch = tf.shape(logits)[0]
        seeds = tf.broadcast_to(tf.cast(self.seed, tf.int32), [batch])
        # Strictly positive, so that a token of probability 0 is never chosen.
        smallest = float(np.finfo(np.float32).tiny)

        def draw(seed):
            return tf.random.stateless_uniform(
                [num_steps], seed=tf.stack([seed, 0]), minval=smallest, maxval=1.0
            )

        self.uniforms = tf.map_fn(draw, seeds, fn_output_signature=tf.TensorSpec([None]))

    def get_next_token(self, logits, step):
        if self.uniforms is None:
            raise RuntimeError("call start() before get_next_token() (__call__ does)")
        logits = tf.cast(logits, tf.float32)
        batch, vocab = tf.shape(logits)[0], tf.shape(logits)[1]
        if self.top_k is not None:
            kth_best = tf.math.top_k(logits, k=tf.minimum(self.top_k, vocab)).values[:, -1:]
            logits = tf.where(logits < kth_best, tf.constant(-float("inf")), logits)
        temperature = tf.broadcast_to(tf.cast(self.temperature, tf.float32), [batch])
        sampled = temperature > 0
        scaled = logits / tf.where(sampled, temperature, 1.0)[:, None]
        cumulative = tf.cumsum(tf.nn.softmax(scaled), axis=-1)
        target = self.uniforms[:, step][:, None] * cumulative[:, -1:]
        draws = tf.reduce_sum(tf.cast(cumulative < target, tf.int32), axis=-1)
        draws = tf.minimum(draws, vocab - 1)
        return tf.where(sampled, draws, tf.argmax(logits, axis=-1, output_type=tf.int32))


SAMPLERS = {"greedy": GreedySampler, "random": RandomSampler}


def get_sampler(name, **kwargs):
    """The sampler called `name` (a key of `SAMPLERS`), built with `kwargs`.

    Raises:
        ValueError: an unknown name.
    """
    if name not in SAMPLERS:
        raise ValueError(f"sampler must be one of {', '.join(SAMPLERS)}. Received: {name!r}")
    return SAMPLERS[name](**kwargs)


__all__ = ["GreedySampler", "RandomSampler", "SAMPLERS", "Sampler", "get_sampler"]
