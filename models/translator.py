"""`Translator`: a seq2seq model, source ids and teacher-forced target ids in, logits out.

`TextTranslator` puts text around it: the source vocabulary and tokenizer make the ids, a
sampler (greedy or beam search) the output, the target vocabulary the text; it also gives the
data of attention plots and the serving SavedModel.
"""

import numbers

import keras
import numpy as np
import tensorflow as tf
from keras import ops

from seqlab.layers import (
    GRU,
    AdditiveAttention,
    TokenAndPositionEmbedding,
    TransformerDecoderLayer,
    TransformerEncoderLayer,
)
from seqlab.layers._frozen import KeepsFrozenLayers
from seqlab.layers.registry import bidirectional
from seqlab.models._training import TracesTrainingOnce
from seqlab.models.samplers import BeamSampler, get_sampler
from seqlab.models.serving import checked_ids, checked_rank, checked_utf8

KINDS = ("gru-attention", "transformer")
PADDING_ID = 0
# Added to the logits of padding and the start token, which generation must never choose.
# Finite, so that log-softmax stays finite.
NEVER = -1e9
# The most tokens a text of the exported `serving_default` may have: a longer text is refused
# inside the graph (InvalidArgumentError naming the cap), so that a request stays bounded.
MAX_INPUT_TOKENS = 1000
# The most decoder positions one request of the exported `serving_default` may hold: texts x
# beam width x (the longest text's tokens + the model's max_length). Beam search keeps, for every
# text and hypothesis, the encoder's keys and values (one per source token) and a self-attention
# cache of max_length positions in every decoder layer: about 2 KB per position at the default
# width and layers, so a request stays within about a GB (486 one-word texts with a beam of 4
# and a max_length of 256 fit). A batch beyond it is refused inside the graph; one text alone is
# always accepted (its size is bounded by MAX_INPUT_TOKENS).
MAX_REQUEST_POSITIONS = 500_000
# Generated outputs stop at 2 x the source's tokens + 10 unless told otherwise.
OUTPUT_LENGTH_FACTOR, OUTPUT_LENGTH_MARGIN = 2, 10


@keras.saving.register_keras_serializable(package="seqlab")
class Translator(KeepsFrozenLayers, TracesTrainingOnce, keras.Model):
    """An encoder-decoder translation model: a GRU with additive attention, or a Transformer.

    `[source_ids [batch, S], target_in_ids [batch, T]] -> logits [batch, T,
    target_vocabulary_size]`, trained with teacher forcing: the decoder reads the start token
    and the target, and predicts the target and the end token. Id 0 is padding in both
    languages; padded positions change no other position's logits.

    - `"gru-attention"`: embedding -> bidirectional GRU encoder; its last states (both
      directions, through the tanh layer `bridge`) start a GRU decoder; additive (Bahdanau)
      attention, with the decoder's new state as the query, reads the encoder outputs; then
      [state; context] -> tanh layer `attention_output` -> logits. The attention sits after the
      recurrent step (Luong et al.'s arrangement), so training runs the decoder GRU over the
      whole target at once.
    - `"transformer"`: token + sinusoidal position embeddings, `layers` seqlab
      `TransformerEncoderLayer`s and `TransformerDecoderLayer`s, a dense layer to logits.

    Generation runs one decoder step at a time from a state: `encode` makes the state,
    `decode_step` feeds one token per row (the GRU decoder's cell with attention, or the
    Transformer decoder layers' key/value caches, so nothing earlier is recomputed), and
    `generate` drives them with a sampler of `seqlab.models.samplers` (greedy, random, beam).
    Text and vocabularies stay outside the model (`TextTranslator` adds them).

    The parts are attributes: `source_embedding`, `target_embedding`, `output_projection` (and
    the weightless `source_dropout`, `target_dropout`); gru-attention adds `encoder` (a
    `Bidirectional` GRU), `bridge`, `decoder` (a GRU), `attention`, `attention_output` and
    `output_dropout`; transformer adds `encoder_layers` and `decoder_layers` (lists). Their
    layer names are those of seqlab 0.1.0's functional translation model ("source_embedding",
    "encoder_0", "decoder_0", "logits", ...), so the weights of runs it wrote copy by name.
    The weights exist as soon as the model is constructed.

    Args:
        source_vocabulary_size: source ids (0 is padding).
        target_vocabulary_size: target ids (0 is padding).
        kind: "gru-attention" or "transformer".
        embedding_dim: token embedding size (transformer: the model width).
        units: gru-attention: GRU units per direction and attention units.
        layers: transformer: encoder layers and decoder layers.
        num_heads: transformer: attention heads (must divide `embedding_dim`).
        ff_dim: transformer: feed-forward width.
        dropout: dropout rate.
        max_length: the most target positions (the Transformer's position range and key/value
            cache); `generate` chooses at most `max_length - 2` tokens, then the end token.
        start_token_id: the id the decoder reads first.
        end_token_id: the id that ends an output.
        seed: seed of the GRUs' dropout masks (the decoder's is `seed + 1`).
        **kwargs: base model arguments (`name`, ...).

    Example:

    ```python
    model = Translator(source_vocabulary_size=100, target_vocabulary_size=120,
                       kind="transformer", embedding_dim=32, layers=2, num_heads=4, ff_dim=64)
    model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(
        from_logits=True, ignore_class=0))
    model.fit(dataset, epochs=5)  # ((source_ids, target_in_ids), target_out_ids) batches
    tokens = model.generate(source_ids, sampler="greedy")  # int32 [batch, steps]
    best = model.generate(source_ids, sampler=BeamSampler(beam_width=4)).tokens[:, 0]
    ```
    """

    def __init__(
        self,
        source_vocabulary_size,
        target_vocabulary_size,
        kind="transformer",
        embedding_dim=128,
        units=128,
        layers=2,
        num_heads=4,
        ff_dim=256,
        dropout=0.1,
        max_length=64,
        start_token_id=2,
        end_token_id=3,
        seed=0,
        **kwargs,
    ):
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {', '.join(KINDS)}. Received: kind={kind!r}")
        for name, value in (
            ("source_vocabulary_size", source_vocabulary_size),
            ("target_vocabulary_size", target_vocabulary_size),
            ("embedding_dim", embedding_dim),
            ("units", units),
            ("layers", layers),
            ("num_heads", num_heads),
            ("ff_dim", ff_dim),
        ):
            if value < 1:
                raise ValueError(f"{name} must be at least 1. Received: {name}={value}")
        if max_length < 2:
            raise ValueError(f"max_length must be at least 2. Received: max_length={max_length}")
        if kind == "transformer" and embedding_dim % num_heads:
            raise ValueError(
                "embedding_dim must be divisible by num_heads for the transformer. Received: "
                f"embedding_dim={embedding_dim}, num_heads={num_heads}"
            )
        for name, value in (("start_token_id", start_token_id), ("end_token_id", end_token_id)):
            if not 0 < value < target_vocabulary_size:
                raise ValueError(
                    f"{name} must be a target id other than padding (1 to "
                    f"{target_vocabulary_size - 1}). Received: {name}={value}"
                )
        kwargs.setdefault("name", f"translate_{kind}")
        super().__init__(**kwargs)
        self.source_vocabulary_size = source_vocabulary_size
        self.target_vocabulary_size = target_vocabulary_size
        self.kind = kind
        self.embedding_dim, self.units, self.num_layers = embedding_dim, units, layers
        self.num_heads, self.ff_dim, self.dropout = num_heads, ff_dim, dropout
        self.max_length = max_length
        self.start_token_id, self.end_token_id = start_token_id, end_token_id
        self.seed = seed

        if kind == "gru-attention":
            self.source_embedding = keras.layers.Embedding(
                source_vocabulary_size, embedding_dim, mask_zero=True, name="source_embedding"
            )
            self.encoder = bidirectional(
                GRU(units, return_sequences=True, return_state=True, seed=seed), name="encoder"
            )
            self.bridge = keras.layers.Dense(units, activation="tanh", name="bridge")
            self.target_embedding = keras.layers.Embedding(
                target_vocabulary_size, embedding_dim, mask_zero=True, name="target_embedding"
            )
            self.decoder = GRU(units, return_sequences=True, seed=seed + 1, name="decoder")
            self.attention = AdditiveAttention(units, name="attention")
            self.attention_output = keras.layers.Dense(
                units, activation="tanh", name="attention_output"
            )
            self.output_dropout = keras.layers.Dropout(dropout, name="output_dropout")
        else:
            sublayer_args = dict(num_heads=num_heads, ff_dim=ff_dim, dropout=dropout)
            self.source_embedding = TokenAndPositionEmbedding(
                source_vocabulary_size, max_length, embedding_dim, mask_zero=True,
                name="source_embedding",
            )
            self.encoder_layers = [
                TransformerEncoderLayer(**sublayer_args, name=f"encoder_{index}")
                for index in range(layers)
            ]
            self.target_embedding = TokenAndPositionEmbedding(
                target_vocabulary_size, max_length, embedding_dim, mask_zero=True,
                name="target_embedding",
            )
            self.decoder_layers = [
                TransformerDecoderLayer(**sublayer_args, name=f"decoder_{index}")
                for index in range(layers)
            ]
        self.source_dropout = keras.layers.Dropout(dropout, name="source_dropout")
        self.target_dropout = keras.layers.Dropout(dropout, name="target_dropout")
        # Logits in float32 under a mixed-precision policy too (softmax and beam scores).
        self.output_projection = keras.layers.Dense(target_vocabulary_size, name="logits",
                                                    dtype="float32")
        # Every size is known: the weights exist from here on (weights copy into the model by
        # layer name, and BackupAndRestore restores into it, before any call).
        self.build()
        # The logits carry the target padding mask whatever the kind (`compute_mask`), so that
        # a loss without `ignore_class` leaves padding out for both: only the Transformer's
        # carried it (through its layers), and gru-attention's loss counted padded positions.
        self.supports_masking = True

    def compute_mask(self, inputs, mask=None):
        """The logits' mask: the target positions that are not padding, `[B, T]` (the
        attention scores returned beside them carry none)."""
        return ops.not_equal(inputs[1], PADDING_ID)

    def build(self, input_shape=None):
        """Creates every weight; the sizes come from the constructor, not `input_shape`."""
        source, target = (None, None), (None, None)
        self.source_embedding.build(source)
        self.target_embedding.build(target)
        width = self.embedding_dim
        if self.kind == "gru-attention":
            self.encoder.build((None, None, width))
            self.bridge.build((None, 2 * self.units))
            self.decoder.build((None, None, width))
            self.attention.build((None, None, self.units), (None, None, 2 * self.units))
            self.attention_output.build((None, None, 3 * self.units))
            self.output_projection.build((None, None, self.units))
        else:
            for encoder in self.encoder_layers:
                encoder.build((None, None, width))
            for decoder in self.decoder_layers:
                decoder.build((None, None, width), (None, None, width))
            self.output_projection.build((None, None, width))

    def call(self, inputs, training=None, return_attention_scores=False):
        """Teacher-forced logits of `[source_ids, target_in_ids]`.

        Args:
            inputs: `[source_ids int [B, S], target_in_ids int [B, T]]`, 0-padded.
            training: whether dropout is active.
            return_attention_scores: also return the attention of each target position over
                the source positions, `[B, T, S]` (rows sum to 1, zero at source padding):
                gru-attention's additive attention, or the last Transformer decoder layer's
                cross-attention averaged over its heads.

        Returns:
            logits `[B, T, target_vocabulary_size]`, or `(logits, attention)`.
        """
        source_ids, target_in_ids = inputs
        source_mask = ops.not_equal(source_ids, PADDING_ID)
        target_mask = ops.not_equal(target_in_ids, PADDING_ID)
        target = self.target_dropout(self.target_embedding(target_in_ids), training=training)
        if self.kind == "gru-attention":
            memory, initial_state = self._encode_gru(source_ids, source_mask, training)
            states = self.decoder(
                target, initial_state=[initial_state], mask=target_mask, training=training
            )
            context, attention = self.attention(states, memory, values_mask=source_mask)
            hidden = self.attention_output(ops.concatenate([states, context], axis=-1))
            hidden = self.output_dropout(hidden, training=training)
        else:
            memory = self._encode_transformer(source_ids, source_mask, training)
            hidden = target
            for decoder in self.decoder_layers:
                hidden, attention = decoder(
                    hidden, memory, encoder_mask=source_mask, decoder_mask=target_mask,
                    return_attention_scores=True, training=training,
                )
            attention = ops.mean(attention, axis=1)
        logits = self.output_projection(hidden)
        if return_attention_scores:
            return logits, attention
        return logits

    def _encode_gru(self, source_ids, source_mask, training):
        """The encoder outputs `[B, S, 2 units]` and the decoder's initial state `[B, units]`."""
        embedded = self.source_dropout(self.source_embedding(source_ids), training=training)
        memory, forward_state, backward_state = self.encoder(
            embedded, mask=source_mask, training=training
        )
        initial_state = self.bridge(ops.concatenate([forward_state, backward_state], axis=-1))
        return memory, initial_state

    def _encode_transformer(self, source_ids, source_mask, training):
        """The last encoder layer's outputs `[B, S, embedding_dim]`."""
        encoded = self.source_dropout(self.source_embedding(source_ids), training=training)
        for encoder in self.encoder_layers:
            encoded = encoder(encoded, mask=source_mask, training=training)
        return encoded

    # Step-by-step decoding.

    def encode(self, source_ids):
        """Encodes the sources: the decoding state before the first target token.

        Args:
            source_ids: int `[B, S]`, 0-padded.

        Returns:
            A dict of tensors with a leading batch dimension (so samplers can repeat and
            reorder it): gru-attention `{"h": [B, units], "memory": [B, S, 2 units],
            "memory_mask": [B, S]}`; transformer `{"caches": [key/value cache of each decoder
            layer (`TransformerDecoderLayer.init_cache`)], "memory_mask": [B, S], "position":
            [B]}` (the next target position, the same in every row).
        """
        source_ids = tf.convert_to_tensor(source_ids, tf.int32)
        mask = tf.not_equal(source_ids, PADDING_ID)
        if self.kind == "gru-attention":
            memory, h = self._encode_gru(source_ids, mask, training=False)
            return {"h": h, "memory": memory, "memory_mask": mask}
        memory = self._encode_transformer(source_ids, mask, training=False)
        return {
            "caches": [decoder.init_cache(memory, self.max_length)
                       for decoder in self.decoder_layers],
            "memory_mask": mask,
            "position": tf.zeros_like(source_ids[:, 0]),
        }

    def decode_step(self, token_ids, state):
        """Feeds one target token per row: `(logits [B, target_vocabulary_size], new state)`.

        Feeding `target_in_ids[:, t]` for t = 0, 1, ... from `encode(source_ids)` gives the
        logits of `call([source_ids, target_in_ids])[:, t]`, computing only the new position.

        Args:
            token_ids: int `[B]`, real tokens (not padding).
            state: from `encode` or the previous `decode_step`.
        """
        token_ids = tf.convert_to_tensor(token_ids, tf.int32)
        if self.kind == "gru-attention":
            # The embedding rows themselves: the layer would attach a padding mask, and every
            # decoding step is a real token.
            embedded = tf.gather(self.target_embedding.embeddings, token_ids)
            h, _ = self.decoder.cell(embedded, [state["h"]])
            context, _ = self.attention(h, state["memory"], values_mask=state["memory_mask"])
            hidden = self.attention_output(tf.concat([h, context], axis=-1))
            state = {**state, "h": h}
        else:
            # Every row is at the same position; the state keeps one copy per row so that beam
            # search can reorder it like the rest (a batch of no rows is at 0).
            position = tf.reduce_max(tf.concat([state["position"], [0]], axis=0))
            hidden = self.target_embedding(token_ids[:, None], start_index=position)
            caches = []
            for decoder, cache in zip(self.decoder_layers, state["caches"]):
                hidden, cache = decoder.decode_step(
                    hidden, cache, position, encoder_mask=state["memory_mask"]
                )
                caches.append(cache)
            hidden = hidden[:, 0]
            state = {**state, "caches": caches, "position": state["position"] + 1}
        return self.output_projection(hidden), state

    def generate(self, source_ids, sampler="greedy", max_length=None):
        """Translates source ids: the start token, then tokens chosen by `sampler`.

        Padding and the start token are never chosen. Works eagerly and inside a
        `tf.function` or SavedModel alike.

        Args:
            source_ids: int `[B, S]`, 0-padded, at least one position.
            sampler: a `seqlab.models.samplers.Sampler` (`BeamSampler` included) or a name
                for `get_sampler` ("greedy", "random", "beam").
            max_length: the most tokens to choose per row (int or scalar int tensor);
                default `2 * n + 10` for a source of `n` tokens (its own, not the padded
                batch's `S`: a row ends at its own limit whatever the others are). Never more
                than the model's `max_length - 2`: the end token after them is the last the
                decoder's positions hold.

        Returns:
            int32 `[B, steps]`, the chosen tokens (the end token again after a row's end);
            with a `BeamSampler`, its `BeamSearchOutput` (the n best hypotheses per row with
            their scores).
        """
        if isinstance(sampler, str):
            sampler = get_sampler(sampler)
        if isinstance(max_length, numbers.Integral) and max_length < 0:  # was [B, 0] silently
            raise ValueError(f"max_length must be at least 0. Received: max_length={max_length}")
        source_ids = self._checked_source_ids(source_ids)
        if max_length is None:
            source_lengths = tf.reduce_sum(tf.cast(source_ids != PADDING_ID, tf.int32), axis=1)
            limits = OUTPUT_LENGTH_FACTOR * source_lengths + OUTPUT_LENGTH_MARGIN
        else:
            limits = tf.fill([tf.shape(source_ids)[0]], tf.cast(max_length, tf.int32))
        limits = tf.minimum(limits, self.max_length - 2)
        # One step past the longest limit: every row, the longest included, chooses its end
        # token at its limit inside the loop. A row stopped by the loop instead would leave its
        # longest hypotheses unfinished, which beam search ranks after every finished one, so
        # a sentence's translation would depend on whether a longer one shared its batch.
        num_steps = tf.reduce_max(limits) + 1
        never_chosen = np.zeros(self.target_vocabulary_size, np.float32)
        never_chosen[[PADDING_ID, self.start_token_id]] = NEVER
        # At a row's limit only the end token may be chosen: the row ends there.
        only_end = np.full(self.target_vocabulary_size, NEVER, np.float32)
        only_end[self.end_token_id] = 0.0

        def step_fn(token_ids, state):
            # `position`: the index of the token the returned logits choose, per row (a
            # sampler reorders the rows of the state, beam search's hypotheses included).
            logits, model_state = self.decode_step(token_ids, state["model"])
            return chosen_logits(logits, state["position"] + 1, state["limit"]), {
                **state, "model": model_state, "position": state["position"] + 1}

        def chosen_logits(logits, position, limit):
            at_limit = (position >= limit)[:, None]
            return tf.where(at_limit, tf.cast(only_end, logits.dtype), logits + never_chosen)

        start = tf.fill([tf.shape(source_ids)[0]], self.start_token_id)
        first = {"model": self.encode(source_ids), "limit": limits,
                 "position": tf.fill([tf.shape(source_ids)[0]], -1)}
        logits, state = step_fn(start, first)
        output = sampler(step_fn, logits, state, num_steps, end_token_id=self.end_token_id)
        if isinstance(sampler, BeamSampler):
            return output
        tokens, _, _ = output
        return tokens

    def _checked_source_ids(self, source_ids):
        """`source_ids` as int32 `[B, S]`, refused unless they are integer ids of rank 2 within
        `[0, source_vocabulary_size)`: a `ValueError` for the dtype or a known wrong rank, an
        `InvalidArgumentError` (in the graph too) for the rank or values seen only when run."""
        return checked_ids(source_ids, "source_ids", self.source_vocabulary_size,
                           "source_vocabulary_size")

    def attention_weights(self, source_ids, output_ids):
        """The attention of each output token over the source when the model chose it.

        The model reads the start token and `output_ids` (teacher forcing on its own output),
        so row t is the attention with which it predicted output token t.

        Args:
            source_ids: int `[B, S]`, 0-padded.
            output_ids: int `[B, T]`, as `generate` returns them.

        Returns:
            float `[B, T, S]` (`call`'s `return_attention_scores`).
        """
        output_ids = tf.convert_to_tensor(output_ids, tf.int32)
        starts = tf.fill([tf.shape(output_ids)[0], 1], self.start_token_id)
        target_in = tf.concat([starts, output_ids[:, :-1]], axis=1)
        _, weights = self([source_ids, target_in], return_attention_scores=True)
        return weights

    def get_config(self):
        return {
            **super().get_config(),
            "source_vocabulary_size": self.source_vocabulary_size,
            "target_vocabulary_size": self.target_vocabulary_size,
            "kind": self.kind,
            "embedding_dim": self.embedding_dim,
            "units": self.units,
            "layers": self.num_layers,
            "num_heads": self.num_heads,
            "ff_dim": self.ff_dim,
            "dropout": self.dropout,
            "max_length": self.max_length,
            "start_token_id": self.start_token_id,
            "end_token_id": self.end_token_id,
            "seed": self.seed,
        }


class TextTranslator:
    """Text in, text out around a `Translator`: tokens to ids, decoding, ids to text.

    The vocabularies are plain lists of tokens by id, as the model's ids index them: id 0 is
    padding (its entry, usually "", is the text of padding) and id 1 the token that unknown
    tokens map to; the model's `start_token_id` and `end_token_id` index the target list. The
    tokenizer that made the vocabularies is passed in: `tokenize` (string tensor `[B]` ->
    ragged string tokens `[B, (tokens)]`) and its inverse `detokenize` (string tokens `[B,
    steps]`, "" at padding -> string tensor `[B]`), both TensorFlow ops, such as
    `seqlab.data.translation.tokenize` and `detokenize`.

    TensorFlow ops throughout: the same methods run eagerly, in `tf.function` and in the
    exported SavedModel.

    Args:
        model: a `Translator`.
        source_vocabulary, target_vocabulary: the tokens by id (lists of str), one per id of
            the model's source and target vocabularies.
        tokenize, detokenize: the tokenizer of the vocabularies, as above.

    Example:

    ```python
    from seqlab.data.translation import detokenize, tokenize
    translator = TextTranslator(model, source_tokens, target_tokens, tokenize, detokenize)
    translator.translate(["A dog runs."])                    # greedy: ["Ein Hund rennt."]
    translator.translate(["A dog runs."], beam_width=4, num_return=2)  # [[(text, score), ...]]
    translator.export_archive(beam_width=4, length_penalty=0.6).write_out("serving/1")
    ```
    """

    def __init__(self, model, source_vocabulary, target_vocabulary, tokenize, detokenize):
        for name, tokens, size in (
            ("source_vocabulary", source_vocabulary, model.source_vocabulary_size),
            ("target_vocabulary", target_vocabulary, model.target_vocabulary_size),
        ):
            if len(tokens) != size:
                raise ValueError(
                    f"{name} must hold one token per id of the model ({size}). Received: "
                    f"{len(tokens)} tokens"
                )
        self.model = model
        self.tokenize, self.detokenize = tokenize, detokenize
        # Tokens to ids, and target ids back to tokens.
        self.source_lookup = keras.layers.StringLookup(
            vocabulary=list(source_vocabulary[2:]), mask_token=source_vocabulary[PADDING_ID],
            oov_token=source_vocabulary[1],
        )
        self.target_lookup = keras.layers.StringLookup(
            vocabulary=list(target_vocabulary[2:]), mask_token=target_vocabulary[PADDING_ID],
            oov_token=target_vocabulary[1], invert=True,
        )
        self._functions = {}

    def source_ids(self, texts):
        """Padded source ids `[B, S]` of a string tensor `[B]`; S is at least 1, so that a batch
        of texts without tokens still has a (padding) column."""
        ids = tf.cast(self.source_lookup(self.tokenize(texts)), tf.int32).to_tensor()
        return tf.pad(ids, [[0, 0], [0, tf.maximum(1 - tf.shape(ids)[1], 0)]])

    def to_text(self, token_ids):
        """Detokenised text `[B]` of output ids `[B, steps]`, each row cut at its first end
        token (padding and start tokens left out)."""
        token_ids = tf.convert_to_tensor(token_ids, tf.int32)
        ended = tf.cast(tf.cumsum(tf.cast(tf.equal(token_ids, self.model.end_token_id),
                                          tf.int32), axis=-1), tf.bool)
        left_out = ended | tf.equal(token_ids, self.model.start_token_id)
        return self.detokenize(self.target_lookup(tf.where(left_out, PADDING_ID, token_ids)))

    def decode_texts(self, texts, beam_width=None, length_penalty=0.6, num_return=1):
        """`(translations string[B, num_return], scores float32[B, num_return])` of texts
        `[B]`: greedy (scores 0) when `beam_width` is None, else beam search (its scores). A
        text without tokens translates to the empty string."""
        source_ids = self.source_ids(texts)
        batch = tf.shape(source_ids)[0]
        if beam_width is None:
            translations = self.to_text(self.model.generate(source_ids))[:, None]
            scores = tf.zeros([batch, 1])
        else:
            sampler = BeamSampler(beam_width, length_penalty, num_return)
            output = self.model.generate(source_ids, sampler)
            flat = tf.reshape(output.tokens, [batch * num_return, -1])
            translations = tf.reshape(self.to_text(flat), [batch, num_return])
            scores = output.scores
        empty = tf.equal(source_ids[:, :1], PADDING_ID)
        return tf.where(empty, tf.constant(""), translations), scores

    def function(self, beam_width=None, length_penalty=0.6, num_return=1):
        """`decode_texts` with these settings as a `tf.function` (one per setting, traced once)."""
        key = (beam_width, float(length_penalty), num_return)
        if key not in self._functions:
            # Every loop is an explicit tf.while_loop: autograph would only add tracing time.
            self._functions[key] = tf.function(
                lambda texts: self.decode_texts(texts, *key),
                input_signature=[tf.TensorSpec([None], tf.string)],
                autograph=False,
            )
        return self._functions[key]

    def batches_by_length(self, texts, batch_size, hypotheses=1):
        """The indices of `texts` (a list of str) in batches of at most `batch_size` texts of
        similar token counts, shortest first (ties in the given order): they decode with little
        padding. A batch also stays within `MAX_REQUEST_POSITIONS` (texts x `hypotheses` x
        (its longest text's tokens + the model's `max_length`), as the SavedModel's requests),
        so that wide beams over long outputs decode in smaller batches instead of running out
        of memory; a text alone is always a batch."""
        lengths = self.tokenize(list(texts)).row_lengths().numpy() if len(texts) else []
        order = np.argsort(lengths, kind="stable")
        batches, current = [], []
        for index in order:  # shortest first: the text added is the batch's longest
            positions = (len(current) + 1) * hypotheses * (lengths[index] + self.model.max_length)
            if current and (len(current) == batch_size or positions > MAX_REQUEST_POSITIONS):
                batches.append(np.asarray(current))
                current = []
            current.append(index)
        return batches + ([np.asarray(current)] if current else [])

    def translate(self, texts, beam_width=None, length_penalty=0.6, num_return=1,
                  batch_size=64):
        """Translations of a list of str (decoded in batches of similar length): str each, or
        with `num_return > 1` (beam search) `[(translation, score), ...]` best first. One str
        gets its translation (a list of str was read one character a text).

        Raises:
            ValueError: `num_return > 1` without `beam_width` (greedy decoding gives one).
        """
        if num_return != 1 and beam_width is None:
            raise ValueError(f"num_return > 1 needs beam search (beam_width): greedy decoding "
                             f"gives one translation. Received: num_return={num_return}, "
                             "beam_width=None")
        if isinstance(texts, str):
            return self.translate([texts], beam_width, length_penalty, num_return,
                                  batch_size)[0]
        texts = list(texts)
        decode = self.function(beam_width, length_penalty, num_return)
        results = [None] * len(texts)
        for chosen in self.batches_by_length(texts, batch_size, beam_width or 1):
            translations, scores = decode(tf.constant([texts[i] for i in chosen]))
            for i, row, row_scores in zip(chosen, translations.numpy(), scores.numpy()):
                decoded = [t.decode("utf-8") for t in row]
                results[i] = decoded[0] if num_return == 1 else list(
                    zip(decoded, row_scores.tolist())
                )
        return results

    def attention(self, text):
        """What an attention plot shows of the greedy translation of one text.

        Returns:
            `(source_tokens, output_tokens, weights)`: the text's tokens (list of str, empty
            for a text without tokens), the output tokens up to and including the end token
            (list of str, as the target vocabulary spells them) and the attention of each output
            token over the source positions, float32 numpy `[len(output_tokens), S]` (S: the
            source tokens, or 1 padding position for a text without any).
        """
        source_ids = self.source_ids(tf.constant([text]))
        output_ids = self.model.generate(source_ids)
        ids = output_ids[0].numpy().tolist()
        end = self.model.end_token_id
        length = ids.index(end) + 1 if end in ids else len(ids)
        weights = self.model.attention_weights(source_ids, output_ids[:, :length])
        output_tokens = self.target_lookup(output_ids[0, :length]).numpy()
        source_tokens = self.tokenize([text])[0].numpy()
        return ([t.decode("utf-8") for t in source_tokens],
                [t.decode("utf-8") for t in output_tokens], weights[0].numpy())

    def export_archive(self, beam_width, length_penalty):
        """A `keras.export.ExportArchive` of `serving_default(text: string[None]) ->
        {"translation": string[None]}`: tokenising, beam search with these settings and
        detokenising, all inside the graph; `write_out(path)` writes the SavedModel. A text
        that is not UTF-8 or of more than `MAX_INPUT_TOKENS` tokens is refused
        (`InvalidArgumentError`), and so is a batch of more than one text beyond
        `MAX_REQUEST_POSITIONS` (texts x beam width x (the longest text's tokens + the model's
        `max_length`)); an empty batch gets an empty batch."""
        translate = self.function(beam_width, length_penalty)  # the one `translate` uses
        hypotheses = beam_width or 1
        positions_message = (
            f"text must fit MAX_REQUEST_POSITIONS={MAX_REQUEST_POSITIONS}: texts x beam width "
            f"{hypotheses} x (tokens of the longest text + max_length {self.model.max_length}) "
            "at most that (send fewer texts per request; one text alone is always accepted)")

        def serve(text):
            # Checked in the graph: the loaded signature checks no shapes itself.
            text = checked_utf8(checked_rank(text, "text", "a vector [batch]", 1), "text")
            lengths = self.tokenize(text).row_lengths()
            longest = tf.reduce_max(tf.concat([tf.cast(lengths, tf.int32), [0]], axis=0))
            too_long = tf.debugging.assert_less_equal(
                longest, MAX_INPUT_TOKENS,
                message=f"text must have at most MAX_INPUT_TOKENS={MAX_INPUT_TOKENS} tokens")
            # Checked before decoding: beam search holds texts x beam width x (padded source
            # tokens + the key/value cache of max_length) positions. One text is let through
            # whatever its cost (MAX_INPUT_TOKENS bounds it), so every model can answer.
            texts = tf.cast(tf.size(lengths), tf.int64)
            positions = texts * hypotheses * (tf.cast(tf.maximum(longest, 1), tf.int64)
                                              + self.model.max_length)
            too_many = tf.debugging.assert_equal(
                (texts <= 1) | (positions <= MAX_REQUEST_POSITIONS), True,
                message=positions_message)
            with tf.control_dependencies([too_long, too_many]):
                text = tf.identity(text)
            translation = tf.cond(tf.size(text) > 0, lambda: translate(text)[0][:, 0],
                                  lambda: tf.zeros([0], tf.string))
            return {"translation": translation}

        archive = keras.export.ExportArchive()
        archive.track(self.model)
        # Called inside `translate`, the lookup layers are not seen by `add_endpoint`.
        archive.track(self.source_lookup.lookup_table)
        archive.track(self.target_lookup.lookup_table)
        archive.add_endpoint("serving_default", serve,
                             input_signature=[tf.TensorSpec([None], tf.string, name="text")])
        return archive
