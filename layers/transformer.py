"""Transformer encoder and decoder layers (Vaswani et al., 2017), post-norm or pre-norm."""

import contextlib

import keras
import tensorflow as tf
from keras import ops

from seqlab.layers._checks import check_positive_int
from seqlab.layers._checks import check_rate
from seqlab.layers._checks import fresh_initializer
from seqlab.layers._frozen import KeepsFrozenLayers
from seqlab.layers.attention import MultiHeadAttention
from seqlab.layers.attention import causal_mask
from seqlab.layers.registry import serializable


class _TransformerLayer(KeepsFrozenLayers, keras.layers.Layer):
    """What the encoder and decoder layers share: arguments, sublayer builders, residuals.

    Each sublayer (attention or feed-forward) is wrapped as
    post-norm: x = LayerNorm(x + Dropout(Sublayer(x)))
    pre-norm:  x = x + Dropout(Sublayer(LayerNorm(x)))
    """

    def __init__(
        self,
        num_heads,
        ff_dim,
        dropout=0.0,
        norm_first=False,
        key_dim=None,
        activation="relu",
        layer_norm_epsilon=1e-5,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        **kwargs,
    ):
        check_positive_int("num_heads", num_heads)
        check_positive_int("ff_dim", ff_dim)
        check_rate("dropout", dropout)
        check_positive_int("key_dim", key_dim, allow_none=True)
        if isinstance(layer_norm_epsilon, bool) or not (
            isinstance(layer_norm_epsilon, (int, float)) and layer_norm_epsilon > 0
        ):
            raise ValueError(
                "Received an invalid value for argument `layer_norm_epsilon`, expected "
                f"a positive number. Received: layer_norm_epsilon={layer_norm_epsilon!r}"
            )
        super().__init__(**kwargs)
        self.supports_masking = True
        self.num_heads = num_heads
        self.ff_dim = ff_dim
        self.dropout = dropout
        self.norm_first = norm_first
        self.key_dim = key_dim
        self.activation = keras.activations.get(activation)
        self.layer_norm_epsilon = layer_norm_epsilon
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)

    def _head_size(self, model_dim):
        if self.key_dim is not None:
            return self.key_dim
        if model_dim % self.num_heads:
            raise ValueError(
                "The model dimension (the inputs' last axis) must be divisible by "
                f"`num_heads` when `key_dim` is not given. Received: model_dim={model_dim}, "
                f"num_heads={self.num_heads}"
            )
        return model_dim // self.num_heads

    def _dense_kwargs(self):
        return dict(
            kernel_initializer=fresh_initializer(self.kernel_initializer),
            bias_initializer=fresh_initializer(self.bias_initializer),
            dtype=self.dtype_policy,
        )

    def _build_attention(self, name, query_shape, value_shape):
        attention = MultiHeadAttention(
            self.num_heads,
            self._head_size(query_shape[-1]),
            dropout=self.dropout,
            name=name,
            **self._dense_kwargs(),
        )
        attention.build(query_shape, value_shape)
        norm = keras.layers.LayerNormalization(
            epsilon=self.layer_norm_epsilon, dtype=self.dtype_policy, name=f"{name}_norm"
        )
        norm.build(query_shape)
        dropout = keras.layers.Dropout(
            self.dropout, dtype=self.dtype_policy, name=f"{name}_dropout"
        )
        return attention, norm, dropout

    def _build_feedforward(self, inputs_shape):
        self.feedforward_intermediate = keras.layers.Dense(
            self.ff_dim, activation=self.activation, name="feedforward_intermediate",
            **self._dense_kwargs(),
        )
        self.feedforward_intermediate.build(inputs_shape)
        self.feedforward_output = keras.layers.Dense(
            inputs_shape[-1], name="feedforward_output", **self._dense_kwargs()
        )
        self.feedforward_output.build(tuple(inputs_shape[:-1]) + (self.ff_dim,))
        self.feedforward_norm = keras.layers.LayerNormalization(
            epsilon=self.layer_norm_epsilon, dtype=self.dtype_policy, name="feedforward_norm"
        )
        self.feedforward_norm.build(inputs_shape)
        self.feedforward_dropout = keras.layers.Dropout(
            self.dropout, dtype=self.dtype_policy, name="feedforward_dropout"
        )

    def _sublayer_input(self, x, norm):
        return norm(x) if self.norm_first else x

    def _sublayer_output(self, x, y, norm, dropout, training):
        y = dropout(y, training=training)
        return x + y if self.norm_first else norm(x + y)

    def _feedforward(self, x, training):
        """FFN(x) = activation(x W_1 + b_1) W_2 + b_2, with its residual and norm."""
        h = self._sublayer_input(x, self.feedforward_norm)
        y = self.feedforward_output(self.feedforward_intermediate(h))
        return self._sublayer_output(
            x, y, self.feedforward_norm, self.feedforward_dropout, training
        )

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "num_heads": self.num_heads,
                "ff_dim": self.ff_dim,
                "dropout": self.dropout,
                "norm_first": self.norm_first,
                "key_dim": self.key_dim,
                "activation": keras.activations.serialize(self.activation),
                "layer_norm_epsilon": self.layer_norm_epsilon,
                "kernel_initializer": keras.initializers.serialize(self.kernel_initializer),
                "bias_initializer": keras.initializers.serialize(self.bias_initializer),
            }
        )
        return config


_SHARED_ARGS_DOC = """
    Args:
        num_heads: number of attention heads.
        ff_dim: width of the feed-forward network's hidden layer.
        dropout: dropout rate on the attention weights and on each sublayer's
            output before the residual addition.
        norm_first: False for post-norm (the paper's
            `x = LayerNorm(x + Sublayer(x))`), True for pre-norm
            (`x = x + Sublayer(LayerNorm(x))`; a stack of pre-norm layers
            usually ends with one more `LayerNormalization`).
        key_dim: size of each attention head; defaults to
            `d_model // num_heads` (d_model, the inputs' last axis, must then be
            divisible by `num_heads`).
        activation: activation of the feed-forward hidden layer.
        layer_norm_epsilon: epsilon of the layer normalizations.
        kernel_initializer: initializer of all kernels.
        bias_initializer: initializer of all biases.
        **kwargs: base layer arguments (`name`, `dtype`, ...).
"""


@serializable
class TransformerEncoderLayer(_TransformerLayer):
    __doc__ = (
        """One Transformer encoder layer: self-attention, then a point-wise FFN.

    Post-norm (default), as in the paper:
        x = LayerNorm(x + Dropout(MultiHead(x, x, x)))
        y = LayerNorm(x + Dropout(FFN(x)))
    with FFN(x) = ReLU(x W_1 + b_1) W_2 + b_2. Padding positions (mask False)
    are never attended to, so padding does not change the other positions'
    outputs; the mask is passed on to the next layer.
"""
        + _SHARED_ARGS_DOC
        + """
    Call arguments:
        inputs: `[B, T, d_model]`.
        mask: optional boolean `[B, T]`, True for real tokens; filled by Keras
            from the inputs' mask (for example `TokenAndPositionEmbedding(...,
            mask_zero=True)`).
        training: whether dropout is active.

    Returns:
        `[B, T, d_model]`.

    Example:

    >>> x = keras.random.normal((2, 10, 16))
    >>> TransformerEncoderLayer(num_heads=2, ff_dim=32)(x).shape
    TensorShape([2, 10, 16])
    """
    )

    def build(self, inputs_shape):
        self.self_attention, self.self_attention_norm, self.self_attention_dropout = (
            self._build_attention("self_attention", inputs_shape, inputs_shape)
        )
        self._build_feedforward(inputs_shape)

    def call(self, inputs, mask=None, training=None):
        h = self._sublayer_input(inputs, self.self_attention_norm)
        y = self.self_attention(h, h, query_mask=mask, value_mask=mask, training=training)
        x = self._sublayer_output(
            inputs, y, self.self_attention_norm, self.self_attention_dropout, training
        )
        return self._feedforward(x, training)


@serializable
class TransformerDecoderLayer(_TransformerLayer):
    __doc__ = (
        """One Transformer decoder layer: causal self-attention, cross-attention, FFN.

    Post-norm (default), as in the paper, with z the encoder's outputs:
        x = LayerNorm(x + Dropout(MultiHead(x, x, x, look-ahead mask)))
        x = LayerNorm(x + Dropout(MultiHead(Q=x, K=z, V=z)))
        y = LayerNorm(x + Dropout(FFN(x)))
    The cross-attention's queries come from the decoder and its keys and
    values from the encoder's outputs. The look-ahead mask lets position t
    attend to positions <= t only.

    Incremental decoding: `init_cache(encoder_outputs, max_length)` returns a
    dict of fixed-shape tensors (the self-attention keys and values of every
    position so far, zeros where not yet written, and the projected encoder
    keys and values, computed once); `decode_step(inputs, cache, index)` runs
    the steps at positions `index, ..., index + L - 1` against it and returns
    `(outputs, new_cache)`. Shapes never change, so the loop fits in
    `tf.function` / `tf.while_loop` with `index` a scalar tensor; the
    outputs equal those of the full-sequence call.
"""
        + _SHARED_ARGS_DOC
        + """
    Call arguments:
        decoder_inputs: `[B, T, d_model]`.
        encoder_outputs: `[B, S, encoder_dim]`.
        encoder_mask: optional boolean `[B, S]`, True for real source tokens;
            defaults to the Keras mask of `encoder_outputs`.
        decoder_mask: optional boolean `[B, T]`, True for real target tokens;
            defaults to the Keras mask of `decoder_inputs`.
        return_attention_scores: whether to also return the cross-attention
            weights (as `keras.layers.MultiHeadAttention` does).
        training: whether dropout is active.

    Returns:
        `[B, T, d_model]`; with `return_attention_scores=True`, the tuple
        `(outputs [B, T, d_model], weights [B, num_heads, T, S])`, where
        `weights[b, h, t]` is head h's attention of target position t over
        the encoder's positions (before dropout; zero at masked positions).

    Example:

    >>> decoder = TransformerDecoderLayer(num_heads=2, ff_dim=32)
    >>> target = keras.random.normal((2, 5, 16))
    >>> source = keras.random.normal((2, 7, 16))
    >>> full = decoder(target, source)
    >>> cache = decoder.init_cache(source, max_length=5)
    >>> first, cache = decoder.decode_step(target[:, :1], cache, index=0)
    >>> full.shape, first.shape
    (TensorShape([2, 5, 16]), TensorShape([2, 1, 16]))
    >>> _, scores = decoder(target, source, return_attention_scores=True)
    >>> scores.shape  # [batch, heads, target positions, source positions]
    TensorShape([2, 2, 5, 7])
    """
    )

    def build(self, decoder_inputs_shape, encoder_outputs_shape):
        self.self_attention, self.self_attention_norm, self.self_attention_dropout = (
            self._build_attention("self_attention", decoder_inputs_shape, decoder_inputs_shape)
        )
        self.cross_attention, self.cross_attention_norm, self.cross_attention_dropout = (
            self._build_attention("cross_attention", decoder_inputs_shape, encoder_outputs_shape)
        )
        self._build_feedforward(decoder_inputs_shape)

    def call(
        self,
        decoder_inputs,
        encoder_outputs,
        encoder_mask=None,
        decoder_mask=None,
        return_attention_scores=False,
        training=None,
    ):
        # Masks left as None are filled by MultiHeadAttention from the Keras masks.
        h = self._sublayer_input(decoder_inputs, self.self_attention_norm)
        y = self.self_attention(
            h,
            h,
            use_causal_mask=True,
            query_mask=decoder_mask,
            value_mask=decoder_mask,
            training=training,
        )
        x = self._sublayer_output(
            decoder_inputs, y, self.self_attention_norm, self.self_attention_dropout, training
        )
        h = self._sublayer_input(x, self.cross_attention_norm)
        y, weights = self.cross_attention(
            h,
            encoder_outputs,
            value_mask=encoder_mask,
            return_attention_scores=True,
            training=training,
        )
        x = self._sublayer_output(
            x, y, self.cross_attention_norm, self.cross_attention_dropout, training
        )
        outputs = self._feedforward(x, training)
        if return_attention_scores:
            return outputs, weights
        return outputs

    def init_cache(self, encoder_outputs, max_length):
        """The cache `decode_step` starts from.

        Args:
            encoder_outputs: `[B, S, encoder_dim]`.
            max_length: the most decoder positions the cache will hold.

        Returns:
            A dict of tensors: `"self_key"` and `"self_value"`
            `[B, num_heads, max_length, key_dim]` (zeros), and `"cross_key"`
            and `"cross_value"` `[B, num_heads, S, key_dim]` (the projected
            encoder outputs).
        """
        if not self.built:
            raise ValueError(
                "The layer must be built (called once, or loaded) before `init_cache`."
            )
        check_positive_int("max_length", max_length)
        with self._autocast_scope():
            cross_key, cross_value = self.cross_attention.project_key_value(
                self._in_compute_dtype(encoder_outputs))
        batch_size = ops.shape(encoder_outputs)[0]
        attention = self.self_attention
        return {
            "self_key": ops.zeros(
                (batch_size, attention.num_heads, max_length, attention.key_dim),
                self.compute_dtype,
            ),
            "self_value": ops.zeros(
                (batch_size, attention.num_heads, max_length, attention.value_dim),
                self.compute_dtype,
            ),
            "cross_key": cross_key,
            "cross_value": cross_value,
        }

    def decode_step(self, inputs, cache, index, encoder_mask=None):
        """Runs the decoder on the positions `index, ..., index + L - 1` only.

        Writes these positions' self-attention keys and values into the cache
        and attends to every position up to each query's own, which gives the
        same outputs as the full-sequence call at these positions (dropout is
        off). Decoder padding masks do not apply here: every step is a token.

        Args:
            inputs: `[B, L, d_model]`, usually L = 1 (one new token).
            cache: from `init_cache` or the previous `decode_step`.
            index: position of `inputs[:, 0]` (an int or scalar int tensor).
            encoder_mask: optional boolean `[B, S]`, True for real source tokens.

        Returns:
            `(outputs [B, L, d_model], new_cache)`.

        Raises:
            ValueError: the positions do not fit in the cache (`index < 0` or
                `index + L > max_length`), where `index` is known when traced (a
                Python int, or an eager tensor); a symbolic index is the caller's to
                keep in range (`Translator` stops at the cache's length).
        """
        inputs = self._in_compute_dtype(inputs)
        _check_cache_positions(index, inputs.shape[1], cache["self_key"].shape[2])
        with self._autocast_scope():
            return self._decode_step(inputs, cache, index, encoder_mask)

    def _in_compute_dtype(self, inputs):
        """Floating `inputs` in the layer's compute dtype, as Keras casts `call`'s."""
        inputs = ops.convert_to_tensor(inputs)
        if "float" in str(inputs.dtype) and self.autocast:
            return ops.cast(inputs, self.compute_dtype)
        return inputs

    def _autocast_scope(self):
        """The scope in which Keras runs `call` under a mixed precision policy (variables read
        in the compute dtype): `init_cache` and `decode_step` are plain methods, which Keras
        does not wrap, so under `mixed_float16` their float32 keys met the float16 cache (their
        floating inputs are cast as `call`'s are: `_in_compute_dtype`)."""
        if self.autocast and self.compute_dtype != self.variable_dtype:
            return keras.src.backend.AutocastScope(self.compute_dtype)
        return contextlib.nullcontext()

    def _decode_step(self, inputs, cache, index, encoder_mask):
        h = self._sublayer_input(inputs, self.self_attention_norm)
        keys, values = self.self_attention.project_key_value(h)
        start = (0, 0, index, 0)
        self_key = ops.slice_update(cache["self_key"], start, keys)
        self_value = ops.slice_update(cache["self_value"], start, values)
        mask = causal_mask(ops.shape(inputs)[1], ops.shape(self_key)[2], offset=index)
        y, _ = self.self_attention.attend(h, self_key, self_value, mask, training=False)
        x = self._sublayer_output(
            inputs, y, self.self_attention_norm, self.self_attention_dropout, False
        )
        h = self._sublayer_input(x, self.cross_attention_norm)
        cross_mask = None if encoder_mask is None else ops.expand_dims(encoder_mask, 1)
        y, _ = self.cross_attention.attend(
            h, cache["cross_key"], cache["cross_value"], cross_mask, training=False
        )
        x = self._sublayer_output(
            x, y, self.cross_attention_norm, self.cross_attention_dropout, False
        )
        outputs = self._feedforward(x, False)
        return outputs, {**cache, "self_key": self_key, "self_value": self_value}


def _check_cache_positions(index, length, max_length):
    """Refuses decoder positions `index .. index + length - 1` outside a cache of
    `max_length` where all three are known when traced: the cache's write would be clamped
    to its last slots, and the outputs silently wrong."""
    index = tf.get_static_value(index) if tf.is_tensor(index) else index
    if index is None or length is None or max_length is None:
        return
    if index < 0 or index + length > max_length:
        raise ValueError(
            f"decode_step: positions {int(index)}..{int(index) + length - 1} do not fit in "
            f"the cache of max_length {max_length} (from init_cache); expected 0 <= index "
            f"and index + {length} <= {max_length}"
        )
