"""Attention: scaled dot-product, multi-head (Keras's weight layout) and additive (Bahdanau).

Masks are boolean and True means "may attend". Masked scores are replaced by a
large finite negative number before the softmax and the masked weights are set
to zero after it, so a query row with nothing to attend to gets all-zero
weights (and a zero context) instead of NaN.
"""

import math

import keras
from keras import ops

from seqlab.layers._checks import check_positive_int
from seqlab.layers._checks import check_rate
from seqlab.layers._checks import fresh_initializer
from seqlab.layers.registry import serializable


def _large_negative(dtype):
    # Finite (an -inf row would give NaN); -1e9 overflows float16.
    return -3e4 if keras.backend.standardize_dtype(dtype) == "float16" else -1e9


def _softmax(scores):
    """Softmax over the last axis. Over a single position (one key: a one-token source) it is
    exp(s - s), 1 where s is finite and NaN where it is not, as softmax gives, without Keras's
    warning that a softmax over an axis of size 1 was probably meant to be a sigmoid."""
    if scores.shape[-1] == 1:
        return ops.exp(scores - scores)
    return ops.softmax(scores, axis=-1)


def _masked_softmax(scores, mask):
    """Softmax over the last axis of `scores`, zero where `mask` is False."""
    if mask is None:
        return _softmax(scores)
    mask = ops.cast(mask, "bool")
    weights = _softmax(ops.where(mask, scores, _large_negative(scores.dtype)))
    # Without this a fully masked row would spread its weight uniformly.
    return ops.where(mask, weights, ops.zeros_like(weights))


def _attention_weights(query, key, mask):
    """softmax(Q K^T / sqrt(d_k)) for `query` [..., T, d_k] and `key` [..., S, d_k]."""
    scale = 1.0 / math.sqrt(query.shape[-1])
    scores = ops.einsum("...td,...sd->...ts", query * ops.cast(scale, query.dtype), key)
    return _masked_softmax(scores, mask)


def scaled_dot_product_attention(query, key, value, mask=None):
    """Scaled dot-product attention, the core of the Transformer.

    Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V

    Masked positions (`mask` False) get a large negative score before the
    softmax and a weight of exactly zero after it; a query row whose positions
    are all masked gets zero weights and a zero output, never NaN.

    Args:
        query: float tensor `[..., T, d_k]` (the last axis must be known).
        key: float tensor `[..., S, d_k]`.
        value: float tensor `[..., S, d_v]`.
        mask: optional boolean tensor broadcastable to `[..., T, S]`; True
            where the query may attend to the key.

    Returns:
        `(outputs, weights)`: `outputs` `[..., T, d_v]` and the attention
        weights `[..., T, S]` (each unmasked row sums to 1).

    Example:

    >>> q = k = v = keras.random.normal((2, 5, 8))
    >>> outputs, weights = scaled_dot_product_attention(q, k, v)
    >>> outputs.shape, weights.shape
    (TensorShape([2, 5, 8]), TensorShape([2, 5, 5]))
    """
    weights = _attention_weights(query, key, mask)
    return ops.einsum("...ts,...sv->...tv", weights, value), weights


def causal_mask(query_length, key_length, offset=0):
    """Lower-triangular look-ahead mask `[1, query_length, key_length]`.

    Query row t may attend to key position s when s <= t + offset; `offset` is
    the position of the first query in the key sequence (non-zero when the keys
    come from a cache that already holds `offset` earlier steps).
    """
    rows = ops.expand_dims(ops.arange(query_length) + offset, -1)
    columns = ops.expand_dims(ops.arange(key_length), 0)
    return ops.expand_dims(ops.greater_equal(rows, columns), 0)


def _and_masks(*masks):
    result = None
    for mask in masks:
        if mask is None:
            continue
        mask = ops.cast(mask, "bool")
        result = mask if result is None else ops.logical_and(result, mask)
    return result


@serializable
class MultiHeadAttention(keras.layers.Layer):
    """Multi-head attention (Vaswani et al., 2017), weight-compatible with Keras's.

    head_i = Attention(Q W_i^Q + b_i^Q, K W_i^K + b_i^K, V W_i^V + b_i^V)
    MultiHead(Q, K, V) = Concat(head_1, ..., head_h) W^O + b^O

    with Attention(Q, K, V) = softmax(Q K^T / sqrt(key_dim)) V (see
    `scaled_dot_product_attention`); dropout, when set, is applied to the
    attention weights. The weights are stored as in
    `keras.layers.MultiHeadAttention` (query, key, value kernels
    `(input_dim, num_heads, key_dim or value_dim)` with biases
    `(num_heads, dim)`, output kernel `(num_heads, value_dim, output_dim)`,
    in that order), so `ours.set_weights(keras_mha.get_weights())` gives the
    same function.

    The attention mask combines, with a logical AND, the explicit
    `attention_mask`, the Keras masks of `query` (`[B, T, 1]`), `value` and
    `key` (`[B, 1, S]`), and the causal mask. A query row that may attend to
    nothing (for example a padded query position) gets zero weights; Keras's
    fused path spreads such a row uniformly instead, so the two layers agree
    everywhere except at such rows, whose outputs are padding anyway.

    For incremental decoding, `call` is the composition of two public
    methods: `project_key_value` (keys and values to heads) and `attend`
    (project the query, attend, project the output), so keys and values can be
    projected once and cached.

    Args:
        num_heads: number of attention heads.
        key_dim: size of each head for query and key.
        value_dim: size of each head for value; defaults to `key_dim`.
        dropout: dropout rate on the attention weights.
        use_bias: whether the projections have biases.
        output_shape: size of the output's last axis (an int or a one-element
            tuple); defaults to the query's last axis.
        kernel_initializer: initializer of the projection kernels.
        bias_initializer: initializer of the projection biases.
        kernel_regularizer: regularizer of the projection kernels.
        bias_regularizer: regularizer of the projection biases.
        kernel_constraint: constraint on the projection kernels.
        bias_constraint: constraint on the projection biases.
        seed: seed of the dropout.
        **kwargs: base layer arguments (`name`, `dtype`, ...).

    Call arguments:
        query: `[B, T, query_dim]`.
        value: `[B, S, value_dim_in]`.
        key: optional `[B, S, key_dim_in]`; defaults to `value`.
        attention_mask: optional boolean `[B, T, S]` (or broadcastable); True
            where query t may attend to key s.
        use_causal_mask: whether query t may only attend to keys s <= t.
        return_attention_scores: whether to also return the weights.
        training: whether dropout is active.
        query_mask, value_mask, key_mask: boolean padding masks `[B, T]`,
            `[B, S]`, `[B, S]`; filled by Keras from the inputs' masks (for
            example `Embedding(mask_zero=True)`).

    Returns:
        `[B, T, output_dim]`, and with `return_attention_scores=True` also the
        attention weights `[B, num_heads, T, S]`.

    Example:

    >>> x = keras.random.normal((2, 6, 16))
    >>> MultiHeadAttention(num_heads=4, key_dim=4)(x, x).shape
    TensorShape([2, 6, 16])
    """

    def __init__(
        self,
        num_heads,
        key_dim,
        value_dim=None,
        dropout=0.0,
        use_bias=True,
        output_shape=None,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        kernel_regularizer=None,
        bias_regularizer=None,
        kernel_constraint=None,
        bias_constraint=None,
        seed=None,
        **kwargs,
    ):
        check_positive_int("num_heads", num_heads)
        check_positive_int("key_dim", key_dim)
        check_positive_int("value_dim", value_dim, allow_none=True)
        check_rate("dropout", dropout)
        if isinstance(output_shape, (tuple, list)):
            if len(output_shape) != 1:
                raise ValueError(
                    "`output_shape` must be an int or a one-element tuple. "
                    f"Received: output_shape={output_shape}"
                )
            output_shape = output_shape[0]
        check_positive_int("output_shape", output_shape, allow_none=True)
        super().__init__(**kwargs)
        self.supports_masking = True
        self.num_heads = num_heads
        self.key_dim = key_dim
        self.value_dim = value_dim or key_dim
        self.dropout = dropout
        self.use_bias = use_bias
        self._output_dim = output_shape
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)
        self.kernel_regularizer = keras.regularizers.get(kernel_regularizer)
        self.bias_regularizer = keras.regularizers.get(bias_regularizer)
        self.kernel_constraint = keras.constraints.get(kernel_constraint)
        self.bias_constraint = keras.constraints.get(bias_constraint)
        self.seed = seed

    def _projection(self, name, kernel_shape):
        kernel = self.add_weight(
            name=f"{name}_kernel",
            shape=kernel_shape,
            initializer=fresh_initializer(self.kernel_initializer),
            regularizer=self.kernel_regularizer,
            constraint=self.kernel_constraint,
        )
        bias = None
        if self.use_bias:
            bias = self.add_weight(
                name=f"{name}_bias",
                shape=kernel_shape[-2:] if name != "output" else kernel_shape[-1:],
                initializer=fresh_initializer(self.bias_initializer),
                regularizer=self.bias_regularizer,
                constraint=self.bias_constraint,
            )
        return kernel, bias

    def build(self, query_shape, value_shape, key_shape=None):
        key_shape = value_shape if key_shape is None else key_shape
        for name, shape in (("query", query_shape), ("value", value_shape), ("key", key_shape)):
            if len(shape) != 3 or shape[-1] is None:
                raise ValueError(
                    f"`{name}` must have shape [batch, length, features] with known "
                    f"features. Received: {name}_shape={tuple(shape)}"
                )
        output_dim = self._output_dim or query_shape[-1]
        # Creation order = get_weights() order = Keras's (query, key, value, output).
        self.query_kernel, self.query_bias = self._projection(
            "query", (query_shape[-1], self.num_heads, self.key_dim)
        )
        self.key_kernel, self.key_bias = self._projection(
            "key", (key_shape[-1], self.num_heads, self.key_dim)
        )
        self.value_kernel, self.value_bias = self._projection(
            "value", (value_shape[-1], self.num_heads, self.value_dim)
        )
        self.output_kernel, self.output_bias = self._projection(
            "output", (self.num_heads, self.value_dim, output_dim)
        )
        self._dropout_layer = keras.layers.Dropout(
            self.dropout, seed=self.seed, dtype=self.dtype_policy, name="attention_dropout"
        )

    @staticmethod
    def _to_heads(x, kernel, bias):
        # [B, S, D] x [D, N, H] -> [B, N, S, H]
        heads = ops.einsum("bsd,dnh->bnsh", x, kernel)
        return heads if bias is None else heads + ops.expand_dims(bias, 1)

    def project_key_value(self, value, key=None):
        """Projects `key` and `value` `[B, S, dim]` to heads.

        Returns:
            `(keys, values)` of shapes `[B, num_heads, S, key_dim]` and
            `[B, num_heads, S, value_dim]`, the form `attend` takes.
        """
        key = value if key is None else key
        return (
            self._to_heads(key, self.key_kernel, self.key_bias),
            self._to_heads(value, self.value_kernel, self.value_bias),
        )

    def attend(self, query, keys, values, attention_mask=None, training=None):
        """Attends from `query` `[B, T, query_dim]` to projected `keys`/`values`.

        Args:
            query: the raw (unprojected) query.
            keys, values: heads from `project_key_value` (or a cache of them).
            attention_mask: boolean, broadcastable to `[B, T, S]`.
            training: whether dropout is active.

        Returns:
            `(outputs [B, T, output_dim], weights [B, num_heads, T, S])`.
        """
        queries = self._to_heads(query, self.query_kernel, self.query_bias)
        if attention_mask is not None:
            attention_mask = ops.expand_dims(attention_mask, -3)  # the heads axis
        weights = _attention_weights(queries, keys, attention_mask)
        dropped = weights
        if self.dropout > 0:
            dropped = self._dropout_layer(weights, training=training)
        context = ops.einsum("bnts,bnsh->bnth", dropped, values)
        outputs = ops.einsum("bnth,nho->bto", context, self.output_kernel)
        if self.output_bias is not None:
            outputs = outputs + self.output_bias
        return outputs, weights

    def call(
        self,
        query,
        value,
        key=None,
        attention_mask=None,
        use_causal_mask=False,
        return_attention_scores=False,
        training=None,
        query_mask=None,
        value_mask=None,
        key_mask=None,
    ):
        mask = _and_masks(
            attention_mask,
            None if query_mask is None else ops.expand_dims(query_mask, -1),
            None if value_mask is None else ops.expand_dims(value_mask, -2),
            None if key_mask is None else ops.expand_dims(key_mask, -2),
            causal_mask(ops.shape(query)[1], ops.shape(value)[1]) if use_causal_mask else None,
        )
        keys, values = self.project_key_value(value, key)
        outputs, weights = self.attend(query, keys, values, mask, training=training)
        if return_attention_scores:
            return outputs, weights
        return outputs

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "num_heads": self.num_heads,
                "key_dim": self.key_dim,
                "value_dim": self.value_dim,
                "dropout": self.dropout,
                "use_bias": self.use_bias,
                "output_shape": self._output_dim,
                "kernel_initializer": keras.initializers.serialize(self.kernel_initializer),
                "bias_initializer": keras.initializers.serialize(self.bias_initializer),
                "kernel_regularizer": keras.regularizers.serialize(self.kernel_regularizer),
                "bias_regularizer": keras.regularizers.serialize(self.bias_regularizer),
                "kernel_constraint": keras.constraints.serialize(self.kernel_constraint),
                "bias_constraint": keras.constraints.serialize(self.bias_constraint),
                "seed": self.seed,
            }
        )
        return config


@serializable
class AdditiveAttention(keras.layers.Layer):
    """Additive (Bahdanau) attention for RNN encoder-decoders.

    e_{t,s} = v^T tanh(W_1 q_t + W_2 k_s)
    alpha_{t,s} = softmax_s(e_{t,s})         (masked keys get weight 0)
    c_t = sum_s alpha_{t,s} k_s

    where the keys k_s are the `values` (the encoder's outputs) and q_t the
    decoder's state. The query may be one step `[B, query_dim]` (inside a
    decoder loop) or a sequence `[B, T, query_dim]` (teacher forcing).

    Args:
        units: size of the projected space (rows of `W_1`, `W_2` and `v`).
        kernel_initializer: initializer of `W_1`, `W_2` and `v`.
        kernel_regularizer: regularizer of `W_1`, `W_2` and `v`.
        kernel_constraint: constraint on `W_1`, `W_2` and `v`.
        **kwargs: base layer arguments (`name`, `dtype`, ...).

    Call arguments:
        query: `[B, query_dim]` or `[B, T, query_dim]`.
        values: `[B, S, value_dim]`.
        values_mask: optional boolean `[B, S]`, True for real (non-padding)
            positions; filled by Keras from the Keras mask of `values`.

    Returns:
        `(context, weights)`: `context` `[B, value_dim]` and `weights`
        `[B, S]` for a single-step query; `[B, T, value_dim]` and
        `[B, T, S]` for a sequence.

    Example:

    >>> encoder_outputs = keras.random.normal((2, 7, 16))
    >>> state = keras.random.normal((2, 32))
    >>> context, weights = AdditiveAttention(units=8)(state, encoder_outputs)
    >>> context.shape, weights.shape
    (TensorShape([2, 16]), TensorShape([2, 7]))
    """

    def __init__(
        self,
        units,
        kernel_initializer="glorot_uniform",
        kernel_regularizer=None,
        kernel_constraint=None,
        **kwargs,
    ):
        check_positive_int("units", units)
        super().__init__(**kwargs)
        self.supports_masking = True
        self.units = units
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.kernel_regularizer = keras.regularizers.get(kernel_regularizer)
        self.kernel_constraint = keras.constraints.get(kernel_constraint)

    def _kernel(self, name, shape):
        return self.add_weight(
            name=name,
            shape=shape,
            initializer=fresh_initializer(self.kernel_initializer),
            regularizer=self.kernel_regularizer,
            constraint=self.kernel_constraint,
        )

    def build(self, query_shape, values_shape):
        if len(query_shape) not in (2, 3) or len(values_shape) != 3:
            raise ValueError(
                "`query` must be [batch, dim] or [batch, time, dim] and `values` "
                f"[batch, time, dim]. Received: query_shape={tuple(query_shape)}, "
                f"values_shape={tuple(values_shape)}"
            )
        self.query_kernel = self._kernel("query_kernel", (query_shape[-1], self.units))
        self.values_kernel = self._kernel("values_kernel", (values_shape[-1], self.units))
        self.score_vector = self._kernel("score_vector", (self.units, 1))

    def call(self, query, values, values_mask=None):
        single_step = len(query.shape) == 2
        if single_step:
            query = ops.expand_dims(query, 1)
        projected_query = ops.expand_dims(ops.matmul(query, self.query_kernel), 2)  # [B, T, 1, u]
        projected_keys = ops.expand_dims(ops.matmul(values, self.values_kernel), 1)  # [B, 1, S, u]
        scores = ops.squeeze(
            ops.matmul(ops.tanh(projected_query + projected_keys), self.score_vector), -1
        )  # [B, T, S]
        mask = None if values_mask is None else ops.expand_dims(values_mask, 1)
        weights = _masked_softmax(scores, mask)
        context = ops.matmul(weights, values)
        if single_step:
            return ops.squeeze(context, 1), ops.squeeze(weights, 1)
        return context, weights

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "units": self.units,
                "kernel_initializer": keras.initializers.serialize(self.kernel_initializer),
                "kernel_regularizer": keras.regularizers.serialize(self.kernel_regularizer),
                "kernel_constraint": keras.constraints.serialize(self.kernel_constraint),
            }
        )
        return config
