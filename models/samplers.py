"""Samplers: turning a model's next-token logits into token sequences, in TensorFlow ops.

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
  probable tokens only; temperature 0 means argmax. A token whose logit is at or below
  `EXCLUDED_LOGIT` (seqlab's models add -1e9 to the ids they must never choose) is never drawn,
  however high the temperature: dividing by a temperature of 1e9 would otherwise lift it to
  the others' level. Each row draws its uniform numbers from
  TensorFlow's stateless generator with its own seed, so the same seed gives the same tokens,
  eagerly or in a SavedModel, whatever else is in the batch.
- `"beam"`: beam search (`BeamSampler`, in its own section below): `beam_width` hypotheses
  per row, GNMT's length penalty, finished hypotheses kept aside, the n best returned.

A sampler may prepare per-decoding data before the loop in `start` (the random sampler draws
its uniform numbers there, so that the loop runs no per-row random op). A sampler that keeps
several hypotheses per row (beam search) overrides `__call__` as well.
"""

import collections
import math
import numbers
import random

import numpy as np
import tensorflow as tf

# A logit at or below this is a token the model excludes: the random sampler never draws it,
# at any temperature (models/char_lm.py and models/translator.py add -1e9 to such tokens).
EXCLUDED_LOGIT = -1e8

def _relaxed_batch_shape(tensor):
    """The shape of `tensor` with an unknown first (batch) dimension, as a loop invariant."""
    return tf.TensorShape([None]).concatenate(tensor.shape[1:])


def _checked_num_steps(num_steps):
    """`num_steps` as a scalar int32 tensor, at least 0.

    A negative Python int is refused. A negative tensor is read as 0 steps rather than refused:
    callers compute it as the maximum of per-row limits, and the maximum over an empty batch is
    the most negative int32 (models/translator.py decodes an empty batch so).

    Raises:
        ValueError: a Python `num_steps` that is not a non-negative integer.
    """
    if not tf.is_tensor(num_steps) and not isinstance(num_steps, np.ndarray):
        if (isinstance(num_steps, bool) or not isinstance(num_steps, numbers.Integral)
                or num_steps < 0):
            raise ValueError(
                f"num_steps must be a non-negative integer. Received: num_steps={num_steps!r}"
            )
    return tf.maximum(tf.convert_to_tensor(num_steps, tf.int32), 0)


class Sampler:
    """Base class of the samplers: the decoding loop. Subclasses implement `get_next_token`.

    Call arguments:
        step_fn: `(token_ids [batch], state) -> (logits [batch, vocab], state)`.
        logits: `[batch, vocab]`, the scores of the first token to choose.
        state: the state that produced `logits` (any nested structure of tensors with a leading
            batch dimension; may be empty).
        num_steps: the number of tokens to choose (int or scalar int32 tensor). A negative
            int is refused (`ValueError`); a negative tensor means 0 steps.
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
        num_steps = _checked_num_steps(num_steps)
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
        # [steps, batch] -> [batch, steps]. With no step run there is nothing to stack (and a
        # TensorArray of unknown element shape cannot stack nothing): [batch, 0].
        tokens = tf.cond(
            tokens.size() > 0,
            lambda: tf.transpose(tokens.stack()),
            lambda: tf.zeros([batch, 0], tf.int32),
        )
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
        temperature: a finite float or a float tensor `[batch]` (one per row). Below 1 sharpens
            the distribution, above 1 flattens it; 0 means argmax (no division by zero). A
            negative, NaN or infinite Python number is refused (`ValueError`); a tensor with a
            NaN or infinite value fails when decoding starts (`tf.errors.InvalidArgumentError`).
        top_k: keep only the `top_k` most probable tokens of each step (ties with the k-th
            are kept too); None or 0 keeps every token.
        seed: an int or an int tensor `[batch]` (one per row); None draws one at random when
            the sampler is made, so that two samplers differ (each sampler's calls then repeat
            one another, as with any fixed seed: make a new sampler for new draws).
    """

    def __init__(self, temperature=1.0, top_k=None, seed=0):
        if seed is None:
            seed = random.SystemRandom().randrange(2**31)
        elif isinstance(seed, (bool, float, np.floating)):
            raise ValueError(f"seed must be an int, an int tensor or None. Received: seed={seed!r}")
        if isinstance(temperature, numbers.Real) and not isinstance(temperature, bool) and not (
            math.isfinite(temperature) and temperature >= 0
        ):
            raise ValueError(
                "temperature must be 0 (argmax) or positive and finite. "
                f"Received: temperature={temperature}"
            )
        if top_k is not None and (
            isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 0
        ):
            raise ValueError(f"top_k must be a non-negative integer. Received: top_k={top_k!r}")
        self.temperature = temperature
        self.top_k = top_k or None
        self.seed = seed
        self.uniforms = None
        self.temperatures = None

    def start(self, logits, num_steps):
        batch = tf.shape(logits)[0]
        num_steps = tf.maximum(tf.convert_to_tensor(num_steps, tf.int32), 0)
        seeds = tf.broadcast_to(tf.cast(self.seed, tf.int32), [batch])
        # A NaN or a negative temperature would otherwise fail `temperature > 0` and decode
        # that row by argmax unnoticed (a Python number is refused in __init__).
        temperatures = tf.broadcast_to(tf.cast(self.temperature, tf.float32), [batch])
        checks = [
            tf.debugging.assert_all_finite(
                temperatures, "temperature must be finite (0 means argmax)"),
            tf.debugging.assert_non_negative(
                temperatures, message="temperature must be 0 (argmax) or positive"),
        ]
        with tf.control_dependencies(checks):
            self.temperatures = tf.identity(temperatures)
        # Strictly positive, so that a token of probability 0 is never chosen.
        smallest = float(np.finfo(np.float32).tiny)

        def draw(seed):
            return tf.random.stateless_uniform(
                [num_steps], seed=tf.stack([seed, 0]), minval=smallest, maxval=1.0
            )

        # map_fn cannot stack the results of no row: an empty batch gets its empty draws here.
        self.uniforms = tf.cond(
            batch > 0,
            lambda: tf.map_fn(draw, seeds, fn_output_signature=tf.TensorSpec([None])),
            lambda: tf.zeros([0, num_steps]),
        )

    def get_next_token(self, logits, step):
        if self.uniforms is None:
            raise RuntimeError("call start() before get_next_token() (__call__ does)")
        logits = tf.cast(logits, tf.float32)
        vocab = tf.shape(logits)[1]
        excluded = logits <= EXCLUDED_LOGIT
        if self.top_k is not None:
            kth_best = tf.math.top_k(logits, k=tf.minimum(self.top_k, vocab)).values[:, -1:]
            excluded |= logits < kth_best
        # A row whose every logit is that low (no seqlab model makes one) keeps them all.
        excluded &= ~tf.reduce_all(excluded, axis=-1, keepdims=True)
        logits = tf.where(excluded, tf.constant(-float("inf")), logits)
        temperature = self.temperatures
        sampled = temperature > 0
        # From the row's best logit: divided by a tiny temperature, the logits themselves
        # overflow to inf and the softmax to NaN (then every draw was id 0, which is excluded).
        best = tf.reduce_max(logits, axis=-1, keepdims=True)
        scaled = (logits - best) / tf.where(sampled, temperature, 1.0)[:, None]
        cumulative = tf.cumsum(tf.nn.softmax(scaled), axis=-1)
        target = self.uniforms[:, step][:, None] * cumulative[:, -1:]
        draws = tf.reduce_sum(tf.cast(cumulative < target, tf.int32), axis=-1)
        draws = tf.minimum(draws, vocab - 1)
        return tf.where(sampled, draws, tf.argmax(logits, axis=-1, output_type=tf.int32))


# ---------------------------------------------------------------------------------------------
# Beam search
#
# It drives the same step functions and is called like the samplers above, but keeps
# `beam_width` hypotheses per row, so it overrides `__call__` and returns the n best sequences
# of each row with their scores (a `BeamSearchOutput`).
#
# The algorithm is the one of GNMT (Wu et al., 2016) and tensor2tensor, with two sets of
# hypotheses per row:
#
# - alive: the `beam_width` best hypotheses that have not ended. Each step extends every alive
#   hypothesis by every token. Of the best `2 * beam_width` candidates, the best `beam_width`
#   that do not end with `end_token_id` stay alive (there are always enough: at most
#   `beam_width` candidates end), and those that end and rank among the best `beam_width` of
#   the step go to the finished set (as in fairseq and Hugging Face's generate).
# - finished: the `beam_width` best hypotheses that ended, ranked by the length-normalised
#   score log P(y) / lp(y) with GNMT's length penalty lp(y) = ((5 + |y|) / 6) ** alpha (|y|
#   counts the end token; alpha 0 ranks by log-probability alone, larger alphas favour longer
#   outputs). Finished hypotheses are kept as they are and never extended.
#
# The loop stops after `num_steps` steps, or earlier once no alive hypothesis can still beat the
# worst finished one of its row (its log-probability can only fall, and its length penalty can
# at most reach lp(num_steps)), which gives the same result as running every step. Hypotheses
# that reach `num_steps` without ending are returned only where a row has fewer finished ones
# than asked for, after them, scored with lp(num_steps). With `beam_width=1` and
# `length_penalty=0` beam search chooses the same tokens as greedy decoding.
#
# A candidate of log-probability -inf is no hypothesis: it is what fills the beam where fewer
# distinct sequences exist than `beam_width` (a small vocabulary, few steps, or tokens the model
# gives probability 0). Such slots are returned last and marked (see BeamSearchOutput), never as
# a copy of a real hypothesis.


BeamSearchOutput = collections.namedtuple(
    "BeamSearchOutput", ["tokens", "scores", "log_probs", "lengths", "finished"]
)
BeamSearchOutput.__doc__ = """The n best hypotheses of each row, best first.

Finished hypotheses come first, then unfinished ones, then empty slots. A slot is empty where
the row has fewer distinct hypotheses of nonzero probability than `num_return` (e.g. a
vocabulary of 4 tokens and 1 step give at most 4): its score and log-probability are -inf, its
length is 0, `finished` is False and its tokens are all the end token (0 without one), so an
empty slot is never a copy of a real hypothesis. `scores > -inf` selects the real ones.

Attributes:
    tokens: int32 `[batch, num_return, steps]`; after a hypothesis's end token, the end token
        again (as the samplers pad).
    scores: float32 `[batch, num_return]`, log-probability / length penalty (-inf: empty slot).
    log_probs: float32 `[batch, num_return]`, the log-probability of the tokens up to and with
        the end token (-inf: empty slot).
    lengths: int32 `[batch, num_return]`, tokens up to and with the end token (`steps` for a
        hypothesis that did not end, 0 for an empty slot).
    finished: bool `[batch, num_return]`, whether the hypothesis ended with the end token.
"""


def length_penalty(length, alpha):
    """GNMT's length penalty ((5 + length) / 6) ** alpha, as float32."""
    return tf.pow((5.0 + tf.cast(length, tf.float32)) / 6.0, alpha)


class BeamSampler(Sampler):
    """Beam search with GNMT's length penalty, n-best output and finished-hypothesis handling.

    Args:
        beam_width: hypotheses kept per row (1 with `length_penalty=0` is greedy decoding).
        length_penalty: alpha of lp(y) = ((5 + |y|) / 6) ** alpha, at least 0. GNMT used 0.6-1.0.
        num_return: how many hypotheses to return per row (the n in n-best), at most
            `beam_width`. Where fewer distinct hypotheses exist, the last slots are empty
            (score -inf, length 0; see `BeamSearchOutput`).

    Call arguments:
        step_fn: `(token_ids [batch], state) -> (logits [batch, vocab], state)`.
        logits: `[batch, vocab]`, the scores of the first token to choose.
        state: the state that produced `logits` (a nested structure of tensors with a leading
            batch dimension, such as a recurrent state or a key/value cache; may be empty). It
            is repeated `beam_width` times per row and reordered as hypotheses are chosen.
        num_steps: the most tokens to choose (int or scalar int32 tensor). A negative int is
            refused (`ValueError`); a negative tensor means 0 steps.
        end_token_id: the token that ends a hypothesis; None: hypotheses never end.

    Returns:
        A `BeamSearchOutput` of the `num_return` best hypotheses per row.

    Example:

    >>> def step_fn(token_ids, state):  # the next token is always token + 1, then 0 (the end)
    ...     return 5.0 * tf.one_hot((token_ids + 1) % 4, 4), state
    >>> output = BeamSampler(beam_width=3)(step_fn, tf.one_hot([1], 4), (), 6, end_token_id=0)
    >>> output.tokens[:, 0].numpy().tolist(), output.lengths.numpy().tolist()
    ([[1, 2, 3, 0]], [[4]])
    """

    def __init__(self, beam_width=4, length_penalty=0.6, num_return=1):
        if isinstance(beam_width, bool) or not isinstance(beam_width, int) or beam_width < 1:
            raise ValueError(
                f"beam_width must be a positive integer. Received: beam_width={beam_width!r}"
            )
        if isinstance(length_penalty, bool) or not (
            isinstance(length_penalty, (int, float)) and length_penalty >= 0
        ):
            raise ValueError(
                "length_penalty (alpha) must be a number >= 0. Received: "
                f"length_penalty={length_penalty!r}"
            )
        if (isinstance(num_return, bool) or not isinstance(num_return, int)
                or not 1 <= num_return <= beam_width):
            raise ValueError(
                f"num_return must be an integer from 1 to beam_width={beam_width}. Received: "
                f"num_return={num_return!r}"
            )
        self.beam_width = beam_width
        self.length_penalty = float(length_penalty)
        self.num_return = num_return

    def __repr__(self):
        return (
            f"BeamSampler(beam_width={self.beam_width}, length_penalty={self.length_penalty}, "
            f"num_return={self.num_return})"
        )

    def __call__(self, step_fn, logits, state, num_steps, end_token_id=None):
        width, alpha = self.beam_width, self.length_penalty
        logits = tf.convert_to_tensor(logits)
        state = tf.nest.map_structure(tf.convert_to_tensor, state)
        num_steps = _checked_num_steps(num_steps)
        # -1 never matches a token: without an end token no hypothesis finishes.
        end = tf.constant(-1 if end_token_id is None else end_token_id, tf.int32)
        batch = tf.shape(logits)[0]
        vocab = tf.shape(logits)[1]
        negative_inf = tf.constant(-float("inf"))

        logits = tf.repeat(logits, width, axis=0)
        state = tf.nest.map_structure(lambda s: tf.repeat(s, width, axis=0), state)
        # Only the first of the identical start hypotheses is live, or each would be found
        # `width` times.
        alive_log_probs = tf.tile(
            tf.concat([[0.0], tf.fill([width - 1], negative_inf)], axis=0)[None], [batch, 1]
        )
        empty = tf.zeros([batch, width, 0], tf.int32)
        finished = {
            "tokens": empty,
            "scores": tf.fill([batch, width], negative_inf),
            "log_probs": tf.fill([batch, width], negative_inf),
            "lengths": tf.zeros([batch, width], tf.int32),
            "flags": tf.zeros([batch, width], tf.bool),
        }
        # Row r's hypothesis k lives in row r * width + k of the logits and the state.
        row_offsets = tf.range(batch)[:, None] * width

        def best_possible_alive_score(alive_log_probs):
            return tf.reduce_max(alive_log_probs, axis=1) / length_penalty(num_steps, alpha)

        def condition(step, logits, state, alive_tokens, alive_log_probs, finished):
            # A row is done when it has `width` finished hypotheses and none alive can beat them.
            worst_finished = tf.reduce_min(finished["scores"], axis=1)
            done = tf.reduce_all(finished["flags"], axis=1) & (
                worst_finished >= best_possible_alive_score(alive_log_probs)
            )
            return (step < num_steps) & tf.logical_not(tf.reduce_all(done))

        def body(step, logits, state, alive_tokens, alive_log_probs, finished):
            log_probs = tf.nn.log_softmax(tf.cast(logits, tf.float32))
            candidates = alive_log_probs[:, :, None] + tf.reshape(log_probs, [batch, width, vocab])
            candidate_log_probs, index = tf.math.top_k(
                tf.reshape(candidates, [batch, width * vocab]), k=2 * width
            )
            origin, token = index // vocab, index % vocab
            candidate_tokens = tf.concat(
                [tf.gather(alive_tokens, origin, batch_dims=1), token[:, :, None]], axis=2
            )
            is_end = tf.equal(token, end)
            # As in fairseq and Hugging Face, an ended candidate counts only if it ranks among
            # the best `width` of this step (with width 1: exactly when greedy would end).
            ends = (is_end & (tf.range(2 * width)[None] < width)
                    & (candidate_log_probs > negative_inf))

            # The best `width` candidates that did not end stay alive.
            alive_log_probs, chosen = tf.math.top_k(
                tf.where(is_end, negative_inf, candidate_log_probs), k=width
            )
            alive_tokens = tf.gather(candidate_tokens, chosen, batch_dims=1)
            origin = tf.gather(origin, chosen, batch_dims=1)
            token = tf.gather(token, chosen, batch_dims=1)

            # The ended candidates compete with the finished hypotheses for `width` places.
            length = step + 1
            padded = tf.pad(finished["tokens"], [[0, 0], [0, 0], [0, 1]], constant_values=end)
            pool = {
                "tokens": tf.concat([padded, candidate_tokens], axis=1),
                "scores": tf.concat(
                    [finished["scores"],
                     tf.where(ends, candidate_log_probs / length_penalty(length, alpha),
                              negative_inf)],
                    axis=1,
                ),
                "log_probs": tf.concat(
                    [finished["log_probs"],
                     tf.where(ends, candidate_log_probs, negative_inf)],
                    axis=1,
                ),
                "lengths": tf.concat(
                    [finished["lengths"], tf.fill([batch, 2 * width], length)], axis=1
                ),
                "flags": tf.concat([finished["flags"], ends], axis=1),
            }
            _, best = tf.math.top_k(pool["scores"], k=width)
            finished = {k: tf.gather(v, best, batch_dims=1) for k, v in pool.items()}

            rows = tf.reshape(row_offsets + origin, [-1])
            state = tf.nest.map_structure(lambda s: tf.gather(s, rows), state)
            logits, state = step_fn(tf.reshape(token, [-1]), state)
            return step + 1, logits, state, alive_tokens, alive_log_probs, finished

        loop_vars = (tf.constant(0), logits, state, empty, alive_log_probs, finished)
        sequences = tf.TensorShape([None, width, None])
        rows = tf.TensorShape([None, width])
        invariants = (
            tf.TensorShape([]),
            tf.TensorShape([None, None]),
            tf.nest.map_structure(_relaxed_batch_shape, state),
            sequences,
            rows,
            {"tokens": sequences, "scores": rows, "log_probs": rows, "lengths": rows,
             "flags": rows},
        )
        steps, _, _, alive_tokens, alive_log_probs, finished = tf.while_loop(
            condition, body, loop_vars, shape_invariants=invariants
        )
        return self._n_best(steps, alive_tokens, alive_log_probs, finished, batch,
                            0 if end_token_id is None else end_token_id)

    def _n_best(self, steps, alive_tokens, alive_log_probs, finished, batch, filler):
        """The `num_return` best per row: finished hypotheses first, then unfinished ones,
        then empty slots (tokens all `filler`)."""
        n = self.num_return
        slot = tf.tile(tf.range(n)[None], [batch, 1])
        n_finished = tf.reduce_sum(tf.cast(finished["flags"], tf.int32), axis=1, keepdims=True)
        from_finished = slot < n_finished
        finished_slot = tf.minimum(slot, self.beam_width - 1)
        alive_slot = tf.clip_by_value(slot - n_finished, 0, self.beam_width - 1)

        def pick(finished_values, alive_values):
            chosen_finished = tf.gather(finished_values, finished_slot, batch_dims=1)
            chosen_alive = tf.gather(alive_values, alive_slot, batch_dims=1)
            condition = from_finished
            if finished_values.shape.rank == 3:
                condition = condition[:, :, None]
            return tf.where(condition, chosen_finished, chosen_alive)

        alive_lengths = tf.fill([batch, self.beam_width], steps)
        log_probs = pick(finished["log_probs"], alive_log_probs)
        # The beam's -inf entries hold arbitrary tokens, often those of a real hypothesis:
        # without this an empty slot would read as a second copy of it.
        empty = tf.equal(log_probs, -float("inf"))
        tokens = pick(finished["tokens"], alive_tokens)
        return BeamSearchOutput(
            tokens=tf.where(empty[:, :, None], tf.constant(filler, tf.int32), tokens),
            scores=pick(
                finished["scores"], alive_log_probs / length_penalty(steps, self.length_penalty)
            ),
            log_probs=log_probs,
            lengths=tf.where(empty, 0, pick(finished["lengths"], alive_lengths)),
            finished=from_finished & ~empty,
        )


SAMPLERS = {"greedy": GreedySampler, "random": RandomSampler, "beam": BeamSampler}


def get_sampler(name, **kwargs):
    """The sampler called `name` (a key of `SAMPLERS`), built with `kwargs`.

    Raises:
        ValueError: an unknown name.
    """
    if name not in SAMPLERS:
        raise ValueError(f"sampler must be one of {', '.join(SAMPLERS)}. Received: {name!r}")
    return SAMPLERS[name](**kwargs)


__all__ = [
    "BeamSampler",
    "BeamSearchOutput",
    "GreedySampler",
    "RandomSampler",
    "SAMPLERS",
    "Sampler",
    "get_sampler",
    "length_penalty",
]
