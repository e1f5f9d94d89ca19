"""A linear-chain conditional random field (CRF) for sequence tagging, and a model that trains one.

`CRF` holds the transition scores and decodes (Viterbi); its methods `log_likelihood`,
`log_partition`, `sequence_score` and `viterbi_decode` are the building blocks of a loss.
`CRFModel` puts a CRF on top of any Keras model that outputs per-step tag potentials and trains
it with `model.fit` on the negative log-likelihood of the gold tags.
"""

import numbers

import keras
import tensorflow as tf

from seqlab.layers.registry import serializable


# The score added to forbidden transitions in the likelihood (log Z and s(x, y)): finite, so
# that log-space sums stay free of NaN. Viterbi decoding gives them -inf instead.
FORBIDDEN_SCORE = -1e4


def _check_num_tags(num_tags):
    if isinstance(num_tags, bool) or not isinstance(num_tags, int) or num_tags < 1:
        raise ValueError(
            f"`num_tags` must be a positive integer. Received: num_tags={num_tags!r}"
        )


def _fresh_initializer(initializer):
    """A new instance with the same config: an unseeded Keras initializer instance draws its
    seed once, so reusing one instance would give two same-shaped weights equal values."""
    return initializer.__class__.from_config(initializer.get_config())


def _is_tag_id(value, num_tags):
    return (isinstance(value, numbers.Integral) and not isinstance(value, bool)
            and 0 <= value < num_tags)


def _check_start_tags(tag_ids, num_tags):
    """`forbidden_start_tags` as a sorted list of distinct ints, or [] for None."""
    tag_ids = [] if tag_ids is None else list(tag_ids)
    if not all(_is_tag_id(t, num_tags) for t in tag_ids):
        raise ValueError(
            f"`forbidden_start_tags` must hold tag ids in [0, num_tags={num_tags}). "
            f"Received: forbidden_start_tags={tag_ids!r}"
        )
    return sorted({int(t) for t in tag_ids})


def _check_tag_pairs(pairs, num_tags):
    """`forbidden_transitions` as a sorted list of distinct `[i, j]` pairs, or [] for None."""
    pairs = [] if pairs is None else [list(pair) for pair in pairs]
    if not all(len(pair) == 2 and all(_is_tag_id(t, num_tags) for t in pair) for pair in pairs):
        raise ValueError(
            "`forbidden_transitions` must hold pairs [from_tag, to_tag] of tag ids in "
            f"[0, num_tags={num_tags}). Received: forbidden_transitions={pairs!r}"
        )
    return [list(pair) for pair in sorted({(int(i), int(j)) for i, j in pairs})]


def _keras_mask(tensor):
    """The padding mask Keras attached to `tensor` (Keras's masking guide: `_keras_mask`)."""
    return getattr(tensor, "_keras_mask", None)


@serializable
class CRF(keras.layers.Layer):
    """Linear-chain conditional random field over per-step tag potentials.

    For potentials x_t[j] (the score of tag j at step t, typically a `Dense(num_tags)` output)
    at the unmasked steps t = 1..L, the score of a tag sequence y = (y_1..y_L) is

        s(x, y) = b_start[y_1] + sum_{t=1..L} x_t[y_t] + sum_{t=2..L} A[y_{t-1}, y_t]
                  + b_end[y_L]

    with A the `transitions` matrix (A[i, j]: from tag i to tag j) and b_start, b_end the
    boundary scores (zero when `use_boundary_transitions=False`). The model is
    p(y | x) = exp(s(x, y)) / Z(x), with Z(x) the sum of exp(s(x, y')) over all K^L sequences.

    Forward algorithm, in log space (log Z without enumerating sequences):

        alpha_1[j] = b_start[j] + x_1[j]
        alpha_t[j] = x_t[j] + logsumexp_i(alpha_{t-1}[i] + A[i, j])
        log Z(x)   = logsumexp_j(alpha_L[j] + b_end[j])

    Viterbi decoding replaces logsumexp by max and keeps the argmax as a backpointer:

        delta_1[j] = b_start[j] + x_1[j]
        delta_t[j] = x_t[j] + max_i(delta_{t-1}[i] + A[i, j]),  psi_t[j] = argmax_i(...)
        y*_L = argmax_j(delta_L[j] + b_end[j]),  y*_{t-1} = psi_t[y*_t]

    Constraints: `forbidden_transitions` (pairs i -> j) and `forbidden_start_tags`. In the
    likelihood (`log_partition`, `sequence_score`, `log_likelihood`, hence the training loss)
    they get the constant score FORBIDDEN_SCORE = -10^4 added to A[i, j] and b_start[j]: a
    sequence that uses one has a probability about e^-10000 times that of the same sequence
    without the penalty, so Z is in practice the sum over the allowed sequences. Viterbi decoding
    (`viterbi_decode`, calling the layer) gives them -inf instead, so it never returns a
    sequence that uses one when an allowed sequence exists, however large the potentials. Only
    where no allowed sequence exists (constraints that rule out every path of a row's length)
    does it fall back to the FORBIDDEN_SCORE penalty and return the best penalised sequence,
    with its penalised score. In BIO, forbidding O -> I-X, B-X -> I-Y, I-X -> I-Y (X != Y) and
    starts with I-X makes every decoded sequence valid.

    Masks: the chain runs over the unmasked steps in order; masked steps are skipped (a mask
    with holes links the steps on either side of the hole). A sequence with no unmasked step
    (zero time steps included) has score 0 and log Z = 0. Decoded tags at masked steps are 0.

    Args:
        num_tags: K, the number of tags (the last dimension of the potentials).
        use_boundary_transitions: learn the start and end scores b_start, b_end.
        transitions_initializer: initializer of A.
        boundary_initializer: initializer of b_start and b_end.
        transitions_regularizer: regularizer of A.
        transitions_constraint: constraint of A.
        forbidden_transitions: pairs `[i, j]` of tag ids: tag j may not follow tag i.
        forbidden_start_tags: tag ids that may not start a sequence.

    Call arguments:
        potentials: float `[batch, time, num_tags]` (`time` may be 0). Potentials of another
            rank or last dimension are refused (`ValueError` where the shape is known when
            traced, `tf.errors.InvalidArgumentError` otherwise), by every method.
        mask: optional boolean `[batch, time]`, True at real steps (passed on automatically from
            `Embedding(mask_zero=True)` and the layers after it).

    Returns:
        The Viterbi tag ids, int32 `[batch, time]`; the mask is passed on unchanged.

    Example:

    >>> crf = CRF(3)
    >>> potentials = np.random.normal(size=(2, 5, 3)).astype("float32")
    >>> crf(potentials).shape
    TensorShape([2, 5])
    >>> crf.log_likelihood(potentials, np.zeros((2, 5), "int32")).shape
    TensorShape([2])
    """

    def __init__(
        self,
        num_tags,
        use_boundary_transitions=True,
        transitions_initializer="glorot_uniform",
        boundary_initializer="zeros",
        transitions_regularizer=None,
        transitions_constraint=None,
        forbidden_transitions=None,
        forbidden_start_tags=None,
        **kwargs,
    ):
        # Float32 under a mixed-precision policy too: log Z in float16 made a negative
        # log-likelihood below 0.
        kwargs.setdefault("dtype", "float32")
        super().__init__(**kwargs)
        _check_num_tags(num_tags)
        self.forbidden_transitions = _check_tag_pairs(forbidden_transitions, num_tags)
        self.forbidden_start_tags = _check_start_tags(forbidden_start_tags, num_tags)
        if not isinstance(use_boundary_transitions, bool):
            raise ValueError(
                "`use_boundary_transitions` must be True or False. "
                f"Received: use_boundary_transitions={use_boundary_transitions!r}"
            )
        self.num_tags = num_tags
        self.use_boundary_transitions = use_boundary_transitions
        self.transitions_initializer = keras.initializers.get(transitions_initializer)
        self.boundary_initializer = keras.initializers.get(boundary_initializer)
        self.transitions_regularizer = keras.regularizers.get(transitions_regularizer)
        self.transitions_constraint = keras.constraints.get(transitions_constraint)
        self.supports_masking = True

    def build(self, input_shape):
        if input_shape[-1] is not None and input_shape[-1] != self.num_tags:
            raise ValueError(
                f"The potentials' last dimension must equal num_tags={self.num_tags}. "
                f"Received: input_shape={tuple(input_shape)}"
            )
        self.transitions = self.add_weight(
            shape=(self.num_tags, self.num_tags),
            name="transitions",
            initializer=_fresh_initializer(self.transitions_initializer),
            regularizer=self.transitions_regularizer,
            constraint=self.transitions_constraint,
        )
        self.start_transitions = self.end_transitions = None
        if self.use_boundary_transitions:
            self.start_transitions = self.add_weight(
                shape=(self.num_tags,), name="start_transitions",
                initializer=_fresh_initializer(self.boundary_initializer),
            )
            self.end_transitions = self.add_weight(
                shape=(self.num_tags,), name="end_transitions",
                initializer=_fresh_initializer(self.boundary_initializer),
            )

    # -----------------------------------------------------------------------------------------
    # Keras API

    def call(self, potentials, mask=None):
        tags, _ = self.viterbi_decode(potentials, mask)
        return tags

    def compute_mask(self, inputs, mask=None):
        return mask

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[:-1])

    def compute_output_spec(self, potentials, mask=None):
        return keras.KerasTensor(self.compute_output_shape(potentials.shape), dtype="int32")

    def get_config(self):
        config = super().get_config()
        config.update(
            num_tags=self.num_tags,
            use_boundary_transitions=self.use_boundary_transitions,
            transitions_initializer=keras.initializers.serialize(self.transitions_initializer),
            boundary_initializer=keras.initializers.serialize(self.boundary_initializer),
            transitions_regularizer=keras.regularizers.serialize(self.transitions_regularizer),
            transitions_constraint=keras.constraints.serialize(self.transitions_constraint),
            forbidden_transitions=self.forbidden_transitions,
            forbidden_start_tags=self.forbidden_start_tags,
        )
        return config

    # -----------------------------------------------------------------------------------------
    # The CRF's quantities. Each takes an explicit mask (None: every step is real).

    def log_partition(self, potentials, mask=None):
        """log Z(x) by the forward algorithm, float `[batch]`."""
        potentials = self._checked_potentials(potentials)
        potentials, mask, lengths, _ = self._left_aligned(potentials, mask)
        transitions, start, end = self._scores(potentials.dtype)

        def forward_step(alpha, step):
            potentials_t, mask_t, is_first = step
            from_previous = tf.reduce_logsumexp(alpha[:, :, None] + transitions, axis=1)
            alpha_t = potentials_t + tf.where(is_first, start[None, :], from_previous)
            return tf.where(mask_t[:, None], alpha_t, alpha)

        # A fold (not a scan's last element) so that zero steps leave the initializer.
        alpha = tf.foldl(
            forward_step,
            self._time_major_steps(potentials, mask),
            initializer=tf.zeros([tf.shape(potentials)[0], self.num_tags], potentials.dtype),
        )
        log_z = tf.reduce_logsumexp(alpha + end[None, :], axis=1)
        return tf.where(lengths > 0, log_z, tf.zeros_like(log_z))

    def sequence_score(self, potentials, tag_ids, mask=None):
        """s(x, y) of the tag sequences `tag_ids` (int `[batch, time]`), float `[batch]`.

        Raises:
            ValueError: `tag_ids` whose shape is not the potentials' `[batch, time]` (where
                both are known when traced; `tf.errors.InvalidArgumentError` otherwise).
        """
        potentials = self._checked_potentials(potentials)
        tag_ids = self._checked_tag_ids(tag_ids, potentials)
        potentials, mask, lengths, order = self._left_aligned(potentials, mask)
        tag_ids = tf.gather(tag_ids, order, batch_dims=1)
        tag_ids = tf.where(mask, tag_ids, tf.zeros_like(tag_ids))  # any id may pad
        transitions, start, end = self._scores(potentials.dtype)
        weights = tf.cast(mask, potentials.dtype)
        unary = tf.gather(potentials, tag_ids, batch_dims=2)
        score = tf.reduce_sum(unary * weights, axis=1)
        pairs = tf.stack([tag_ids[:, :-1], tag_ids[:, 1:]], axis=-1)
        binary = tf.gather_nd(transitions, pairs)
        score += tf.reduce_sum(binary * weights[:, 1:], axis=1)
        has_steps = lengths > 0
        # One padding column, so that zero time steps still have a (discarded) first and last.
        padded = tf.pad(tag_ids, [[0, 0], [0, 1]])
        first = padded[:, 0]
        last = tf.gather(padded, tf.maximum(lengths - 1, 0), batch_dims=1)
        boundary = tf.gather(start, first) + tf.gather(end, last)
        return score + tf.where(has_steps, boundary, tf.zeros_like(boundary))

    def log_likelihood(self, potentials, tag_ids, mask=None):
        """log p(y | x) = s(x, y) - log Z(x) of `tag_ids`, float `[batch]` (at most 0)."""
        return self.sequence_score(potentials, tag_ids, mask) - self.log_partition(
            potentials, mask
        )

    def viterbi_decode(self, potentials, mask=None):
        """The best tag sequences and their scores.

        Forbidden transitions and start tags are never used where a sequence without them
        exists (see the class docstring).

        Returns:
            `(tag_ids, scores)`: int32 `[batch, time]` (0 at masked steps) and float `[batch]`,
            the score s(x, y*) of each best sequence.
        """
        potentials = self._checked_potentials(potentials)
        original_mask = mask
        potentials, mask, lengths, order = self._left_aligned(potentials, mask)
        tags, scores = self._viterbi(potentials, mask, *self._scores(potentials.dtype, strict=True))
        if self.forbidden_transitions or self.forbidden_start_tags:
            # -inf: every path of the row uses a forbidden step. Such rows (rare: constraints
            # that rule out a whole length) get the best path under the finite penalty instead.
            no_allowed_path = (lengths > 0) & tf.equal(scores, -float("inf"))

            def penalised():
                penalised_tags, penalised_scores = self._viterbi(
                    potentials, mask, *self._scores(potentials.dtype)
                )
                return (tf.where(no_allowed_path[:, None], penalised_tags, tags),
                        tf.where(no_allowed_path, penalised_scores, scores))

            tags, scores = tf.cond(
                tf.reduce_any(no_allowed_path), penalised, lambda: (tags, scores)
            )
        scores = tf.where(lengths > 0, scores, tf.zeros_like(scores))
        if original_mask is None:
            return tags, scores
        # Back to the original positions; masked steps get tag 0.
        tags = tf.gather(tags, tf.argsort(order, axis=1), batch_dims=1)
        return tf.where(tf.cast(original_mask, tf.bool), tags, tf.zeros_like(tags)), scores

    def _viterbi(self, potentials, mask, transitions, start, end):
        """Viterbi over left-aligned `potentials` and `mask`: `(tag_ids, scores)` with the tags
        in left-aligned order and the raw scores (rows without steps not yet zeroed)."""
        num_tags = tf.shape(potentials)[-1]
        batch_size = tf.shape(potentials)[0]
        stay = tf.broadcast_to(tf.range(num_tags)[None, :], [batch_size, num_tags])

        def viterbi_step(carry, step):
            delta, _ = carry
            potentials_t, mask_t, is_first = step
            candidates = delta[:, :, None] + transitions
            best_previous = tf.reduce_max(candidates, axis=1)
            delta_t = potentials_t + tf.where(is_first, start[None, :], best_previous)
            # At a padded step the path stays on its tag, so that the backward pass walks
            # through the padding unchanged to the last real step.
            pointers = tf.where(
                mask_t[:, None] & ~is_first,
                tf.argmax(candidates, axis=1, output_type=tf.int32),
                stay,
            )
            return tf.where(mask_t[:, None], delta_t, delta), pointers

        def decode():
            deltas, pointers = tf.scan(
                viterbi_step,
                self._time_major_steps(potentials, mask),
                initializer=(tf.zeros([batch_size, self.num_tags], potentials.dtype), stay),
            )
            final = deltas[-1] + end[None, :]
            scores = tf.reduce_max(final, axis=1)
            last_tags = tf.argmax(final, axis=1, output_type=tf.int32)

            def backtrack_step(tag_t, pointers_t):
                return tf.gather(pointers_t, tag_t, batch_dims=1)

            # Tags of steps 0..T-2 come from the pointers of steps 1..T-1, read backwards. The
            # scan runs over every step (step 0's pointers only repeat its tag; that output is
            # dropped), because a scan over the T-1 later steps has nothing to stack when T is 1.
            earlier_tags = tf.scan(
                backtrack_step, pointers, initializer=last_tags, reverse=True
            )[1:]
            tags = tf.concat([earlier_tags, last_tags[None, :]], axis=0)
            return tf.transpose(tags), scores

        def no_steps():
            return tf.zeros([batch_size, 0], tf.int32), tf.zeros([batch_size], potentials.dtype)

        # The backward pass starts from the last step: with zero steps there is none.
        time = potentials.shape[1]
        if time is not None:
            return decode() if time > 0 else no_steps()
        return tf.cond(tf.shape(potentials)[1] > 0, decode, no_steps)

    # -----------------------------------------------------------------------------------------
    # Helpers

    def _build_for(self, potentials):
        """Builds the layer when a method is used before the layer was called."""
        if not self.built:
            self.build(tuple(potentials.shape))
            self.built = True

    def _checked_potentials(self, potentials):
        """`potentials` as a float tensor `[batch, time, num_tags]`, the layer built.

        Checked on every call, not only when building: a CRF built for K tags would otherwise
        broadcast other potentials against its K x K transitions and fail deep inside.

        Raises:
            ValueError: a rank or last dimension known to be wrong when traced (otherwise the
                graph raises `tf.errors.InvalidArgumentError`).
        """
        potentials = tf.convert_to_tensor(potentials)
        if not potentials.dtype.is_floating:
            potentials = tf.cast(potentials, keras.config.floatx())
        expected = f"[batch, time, num_tags={self.num_tags}]"
        shape = potentials.shape
        if shape.rank is not None and (
            shape.rank != 3 or shape[-1] not in (None, self.num_tags)
        ):
            raise ValueError(
                f"potentials must have the shape {expected}. "
                f"Received: potentials.shape={tuple(shape)}"
            )
        checks = []
        if shape.rank is None:
            checks.append(tf.debugging.assert_rank(
                potentials, 3, message=f"potentials must have the shape {expected}"
            ))
        if shape.rank is None or shape[-1] is None:
            checks.append(tf.debugging.assert_equal(
                tf.shape(potentials)[-1], self.num_tags,
                message=f"potentials must have the shape {expected}",
            ))
        if checks:
            with tf.control_dependencies(checks):
                potentials = tf.identity(potentials)
            potentials = tf.ensure_shape(potentials, [None, None, self.num_tags])
        self._build_for(potentials)
        return potentials

    @staticmethod
    def _checked_tag_ids(tag_ids, potentials):
        """`tag_ids` as int32, checked to have the potentials' `[batch, time]`: a longer
        sequence would otherwise lose its extra steps unnoticed."""
        tag_ids = tf.cast(tf.convert_to_tensor(tag_ids), tf.int32)
        expected = potentials.shape[:2]
        message = "tag_ids must have the shape [batch, time] of the potentials"
        if tag_ids.shape.rank is not None and (
            tag_ids.shape.rank != 2 or not tag_ids.shape.is_compatible_with(expected)
        ):
            raise ValueError(
                f"{message}, {tuple(expected)}. Received: tag_ids.shape={tuple(tag_ids.shape)}"
            )
        if tag_ids.shape.is_fully_defined() and expected.is_fully_defined():
            return tag_ids
        checks = []
        if tag_ids.shape.rank is None:
            checks.append(tf.debugging.assert_rank(tag_ids, 2, message=message))
        with tf.control_dependencies(checks):  # the rank first, or the shapes cannot compare
            check = tf.debugging.assert_equal(
                tf.shape(tag_ids), tf.shape(potentials)[:2], message=message
            )
        with tf.control_dependencies([check]):
            return tf.identity(tag_ids)

    def _scores(self, dtype, strict=False):
        """`(A, b_start, b_end)` with FORBIDDEN_SCORE added to the forbidden entries, or with
        those entries set to -inf when `strict` (decoding only: -inf would make log Z's sums
        NaN-prone and change the trained loss)."""
        transitions = tf.cast(self.transitions, dtype)
        if self.use_boundary_transitions:
            start = tf.cast(self.start_transitions, dtype)
            end = tf.cast(self.end_transitions, dtype)
        else:
            start = end = tf.zeros([self.num_tags], dtype)

        def forbid(values, indices, shape):
            if strict:
                forbidden = tf.scatter_nd(indices, tf.ones([len(indices)], tf.bool), shape)
                return tf.where(forbidden, tf.cast(-float("inf"), dtype), values)
            return values + tf.scatter_nd(
                indices, tf.fill([len(indices)], tf.cast(FORBIDDEN_SCORE, dtype)), shape
            )

        if self.forbidden_transitions:
            transitions = forbid(
                transitions, self.forbidden_transitions, [self.num_tags, self.num_tags]
            )
        if self.forbidden_start_tags:
            start = forbid(
                start, [[tag] for tag in self.forbidden_start_tags], [self.num_tags]
            )
        return transitions, start, end

    @staticmethod
    def _left_aligned(potentials, mask):
        """Moves the unmasked steps of each row to the front, keeping their order.

        Then every row is a prefix of `lengths` real steps followed by padding, which the
        recursions above assume.

        Returns:
            `(potentials, mask, lengths, order)`; `order[b, k]` is the original step now at k.
        """
        shape = tf.shape(potentials)
        batch_size, time = shape[0], shape[1]
        steps = tf.broadcast_to(tf.range(time)[None, :], [batch_size, time])
        if mask is None:
            everything = tf.ones([batch_size, time], tf.bool)
            return potentials, everything, tf.fill([batch_size], time), steps
        # A mask traced without a rank would leave the recursions' loop shapes unknown.
        mask = tf.ensure_shape(tf.cast(mask, tf.bool), [None, None])
        real_so_far = tf.cumsum(tf.cast(mask, tf.int32), axis=1)
        lengths = tf.reduce_sum(tf.cast(mask, tf.int32), axis=1)  # [:, -1] fails at zero steps
        # Real steps go to 0..length-1 in order, padded steps after them in order.
        new_position = tf.where(mask, real_so_far - 1, lengths[:, None] + steps - real_so_far)
        order = tf.argsort(new_position, axis=1)
        potentials = tf.gather(potentials, order, batch_dims=1)
        return potentials, steps < lengths[:, None], lengths, order

    @staticmethod
    def _time_major_steps(potentials, mask):
        """`(potentials_t, mask_t, is_first)` stacked over time, for `tf.scan`."""
        time = tf.shape(potentials)[1]
        return (
            tf.transpose(potentials, [1, 0, 2]),
            tf.transpose(mask),
            tf.equal(tf.range(time), 0)[:, None, None],
        )


@serializable
class CRFModel(keras.Model):
    """A tagger: an encoder model that outputs tag potentials, with a `CRF` on top.

    Calling the model returns the Viterbi tag ids `[batch, time]`. `fit` and `evaluate` minimise
    and report the negative log-likelihood of the gold tags, averaged over the sequences of a
    batch (each multiplied by its `sample_weight` if given, as Keras's losses do), plus the
    model's regularization losses:

        loss = mean_b( w_b (log Z(x_b) - s(x_b, y_b)) )

    Padding (the mask the encoder's output carries, e.g. from `Embedding(mask_zero=True)`)
    adds nothing to the loss. Compile it with an optimizer only (`model.compile("adam")`);
    entity metrics are computed from the decoded tags (`model.predict`).

    Args:
        encoder: a Keras model (or layer) mapping the inputs to potentials
            `[batch, time, num_tags]`.
        crf: the `CRF` layer; default `CRF(num_tags)` with `num_tags` the encoder's last output
            dimension.

    Example:

    >>> tokens = keras.Input((None,), dtype="int32")
    >>> hidden = keras.layers.Embedding(100, 16, mask_zero=True)(tokens)
    >>> hidden = keras.layers.Bidirectional(LSTM(16, return_sequences=True))(hidden)
    >>> model = CRFModel(keras.Model(tokens, keras.layers.Dense(5)(hidden)))
    >>> model.compile("adam")
    >>> model.fit(token_ids, tag_ids, epochs=1, verbose=0)
    >>> model.predict(token_ids)   # int32 tag ids, 0 at padding
    """

    def __init__(self, encoder, crf=None, **kwargs):
        super().__init__(**kwargs)
        if crf is None:
            outputs = getattr(encoder, "outputs", None)
            num_tags = outputs[0].shape[-1] if outputs and len(outputs) == 1 else None
            if num_tags is None:
                raise ValueError(
                    "Pass `crf=CRF(num_tags)`: the number of tags could not be read from the "
                    f"encoder's output. Received: encoder={encoder!r}"
                )
            crf = CRF(num_tags)
        if not isinstance(crf, CRF):
            raise ValueError(f"`crf` must be a CRF layer. Received: crf={crf!r}")
        self.encoder = encoder
        self.crf = crf
        self.loss_tracker = keras.metrics.Mean(name="loss")
        # The encoder is built (or builds on its first call) and the CRF's weights depend only
        # on num_tags, so the model is usable (and restorable by BackupAndRestore) at once.
        self.build()

    def build(self, input_shape=None):
        if not self.crf.built:
            self.crf.build((None, None, self.crf.num_tags))
        self.built = True

    def call(self, inputs, training=False):
        return self.crf(self.encoder(inputs, training=training))

    def negative_log_likelihood(self, inputs, tag_ids, training=False):
        """-log p(tag_ids | inputs) per sequence, float `[batch]`."""
        potentials = self.encoder(inputs, training=training)
        return -self.crf.log_likelihood(potentials, tag_ids, _keras_mask(potentials))

    def _loss(self, data, training):
        inputs, tag_ids, sample_weight = keras.utils.unpack_x_y_sample_weight(data)
        per_sequence = self.negative_log_likelihood(inputs, tag_ids, training=training)
        if sample_weight is not None:
            per_sequence *= tf.cast(tf.reshape(sample_weight, [-1]), per_sequence.dtype)
        # Keras's "sum_over_batch_size": weighted sum over the batch, divided by its size.
        loss = tf.reduce_mean(per_sequence)
        if self.losses:
            loss += tf.add_n([tf.cast(extra, loss.dtype) for extra in self.losses])
        return loss

    def _track(self, loss, data):
        """Averages the epoch's loss over sequences, as Keras does (batches weighted by size)."""
        inputs = keras.utils.unpack_x_y_sample_weight(data)[0]
        batch_size = tf.shape(keras.tree.flatten(inputs)[0])[0]
        self.loss_tracker.update_state(loss, sample_weight=batch_size)
        return {"loss": self.loss_tracker.result()}

    def train_step(self, data):
        # Under a tf.distribute strategy the replicas' gradients are summed: each replica
        # contributes its share of the global mean, as Keras's own train_step does.
        replicas = tf.distribute.get_strategy().num_replicas_in_sync
        with tf.GradientTape() as tape:
            loss = self._loss(data, training=True)
            # Scaled as Keras's own train_step scales it (a LossScaleOptimizer under a
            # mixed_float16 policy divided unscaled gradients by its scale, 32768).
            replica_share = self.optimizer.scale_loss(loss / replicas)
        gradients = tape.gradient(replica_share, self.trainable_variables)
        self.optimizer.apply(gradients, self.trainable_variables)
        return self._track(loss, data)

    def test_step(self, data):
        return self._track(self._loss(data, training=False), data)

    @property
    def metrics(self):
        return [self.loss_tracker]

    def get_config(self):
        return {
            "name": self.name,
            "trainable": self.trainable,
            "encoder": keras.saving.serialize_keras_object(self.encoder),
            "crf": keras.saving.serialize_keras_object(self.crf),
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        encoder = keras.saving.deserialize_keras_object(config.pop("encoder"))
        crf = keras.saving.deserialize_keras_object(config.pop("crf"))
        return cls(encoder, crf=crf, **config)
