"""Seq2seq translation: a GRU encoder-decoder with additive attention, or a Transformer.

`train` reads sentence pairs (aligned files, a folder of aligned split files, a TSV of pairs, or
without data the embedded English -> German smoke-test sample), builds a vocabulary of reversible
tokens per language on the training split (data/translation.py), and fits with teacher forcing:
the decoder reads [START] + target and predicts target + [END]; padding carries no loss. Models:

- `gru-attention`: embedding -> bidirectional GRU encoder; its last states (both directions,
  through a tanh layer) start a GRU decoder; at every step additive (Bahdanau) attention, with
  the decoder's new state as the query, reads the encoder outputs, and [state; context] -> tanh
  layer -> logits (the attention sits after the recurrent step, as in Luong et al.'s
  arrangement, so training runs the decoder GRU over the whole target at once).
- `transformer`: token + sinusoidal position embeddings, `layers` encoder and decoder layers
  (seqlab's `TransformerEncoderLayer` / `TransformerDecoderLayer`), a dense layer to logits.

Decoding (`Translator`) is TensorFlow ops around one step function `(token_ids, state) ->
(logits, state)`: the GRU decoder's cell with attention, or the Transformer decoder's key/value
cache (`init_cache` / `decode_step`), driven by the greedy sampler of models/samplers.py or
by its beam search. The test split is scored with sacrebleu (BLEU with
its signature, and chrF) on detokenised output against the raw reference lines, greedy and beam.

The run directory holds, besides the common files (pipelines/common.py):
`source_vocabulary.txt` and `target_vocabulary.txt` (one token per line; ids 0-3 are padding,
[UNK], [START], [END] and are not written), `plots/loss.png`, `plots/attention_<n>.png` (the
attention of a few validation sentences), and `saved_model/` with `serving_default(text:
string[None]) -> {"translation": string[None]}`: tokenising, beam search (the run's
`beam_width` and `length_penalty`) and detokenising all inside the graph.
"""

import dataclasses
import time
from pathlib import Path

import keras
import numpy as np
import sacrebleu
import tensorflow as tf

from seqlab.data.errors import DataError
from seqlab.data.translation import (
    END_ID,
    PAD_ID,
    START_ID,
    VALIDATION_STEMS,
    SentencePairs,
    Vocabulary,
    detokenize,
    encode_pairs,
    find_split_files,
    load_sample,
    make_dataset,
    read_aligned,
    read_lines,
    read_tsv_pairs,
    split_pairs,
    strip_after_end,
    token_text,
    tokenize,
)
from seqlab.layers import (
    GRU,
    AdditiveAttention,
    TokenAndPositionEmbedding,
    TransformerDecoderLayer,
    TransformerEncoderLayer,
)
from seqlab.pipelines.common import (
    ActionResult,
    Task,
    TrainConfig,
    UsageError,
    format_table,
    open_run,
    option,
    progress_verbosity,
    pyplot,
    save_history_plot,
    training_callbacks,
    write_export_archive,
    write_json_atomic,
    write_text_atomic,
)
from seqlab.models.samplers import BeamSampler, GreedySampler
from seqlab.pipelines.distribute import begin_run, start_run

TASK_NAME = "translate"
MODEL_KINDS = ("gru-attention", "transformer")
# Added to the logits of padding and [START], which the decoder must never choose. Finite, so
# that log-softmax stays finite.
NEVER = -1e9
# Outputs stop at 2 x the source's tokens + 10 (and at max_length - 1).
OUTPUT_LENGTH_FACTOR, OUTPUT_LENGTH_MARGIN = 2, 10
TRAIN_BUCKET_WIDTH = 4


@dataclasses.dataclass
class TranslateConfig(TrainConfig):
    """Every setting of a translation run; the defaults suit the embedded sample."""

    data: str | None = option(
        None,
        "a TSV of sentence pairs (source, target, other columns ignored), or a folder of aligned "
        "split files train.<src-lang> / train.<tgt-lang>, val.*, test*.* "
        "(default: the embedded English -> German smoke-test sample)",
    )
    src: str | None = option(None, "aligned source-language file, one sentence per line")
    tgt: str | None = option(None, "aligned target-language file, line n translates --src line n")
    src_lang: str | None = option(None, "source-language suffix of the --data folder's files")
    tgt_lang: str | None = option(None, "target-language suffix of the --data folder's files")
    tsv_columns: list[int] = option([1, 2], "1-based source and target columns of a TSV")
    val_fraction: float = option(
        0.1, "share of pairs held out for validation when the data has no val split"
    )
    test_fraction: float = option(
        0.1, "share of pairs held out for the test split when the data has no test split"
    )
    epochs: int = option(40, "maximum number of epochs (early stopping may end sooner)")
    batch_size: int = option(64, "sentence pairs per batch (also per decoding batch)")
    model: str = option("transformer", "model kind", MODEL_KINDS)
    embedding_dim: int = option(128, "token embedding size (transformer: the model width)")
    units: int = option(128, "gru-attention: GRU units per direction and attention units")
    layers: int = option(2, "transformer: encoder layers and decoder layers")
    num_heads: int = option(4, "transformer: attention heads")
    ff_dim: int = option(256, "transformer: feed-forward width")
    dropout: float = option(0.1, "dropout rate")
    max_length: int = option(
        64, "most tokens of a training sentence (longer pairs are skipped and counted) and of "
        "an output"
    )
    min_count: int = option(1, "tokens seen fewer times in the training split become [UNK]")
    max_vocabulary: int = option(32000, "most ids per language (most frequent tokens kept)")
    learning_rate: float = option(1e-3, "peak Adam learning rate (then cosine decay to a tenth of it)")
    warmup_steps: int = option(0, "batches of linear learning-rate warmup from 0")
    clipnorm: float | None = option(1.0, "gradient norm clipping of Adam")
    patience: int = option(5, "early-stopping patience in epochs (best weights restored)")
    beam_width: int = option(4, "beam width of the beam-search figures and of the SavedModel")
    length_penalty: float = option(0.6, "GNMT length penalty alpha of beam search")
    attention_plots: int = option(3, "validation sentences whose attention is plotted")

    def __post_init__(self):
        super().__post_init__()
        for name in ("embedding_dim", "units", "layers", "num_heads", "ff_dim", "min_count",
                     "patience", "beam_width"):
            value = getattr(self, name)
            if value < 1:
                raise ValueError(f"{name} must be at least 1. Received: {name}={value}")
        for name in ("warmup_steps", "attention_plots"):
            value = getattr(self, name)
            if value < 0:
                raise ValueError(f"{name} must be at least 0. Received: {name}={value}")
        if self.max_length < 2:
            raise ValueError(
                f"max_length must be at least 2. Received: max_length={self.max_length}"
            )
        if self.max_vocabulary < 5:
            raise ValueError(
                f"max_vocabulary must be at least 5. Received: max_vocabulary={self.max_vocabulary}"
            )
        if not 0 <= self.dropout < 1:
            raise ValueError(f"dropout must lie in [0, 1). Received: dropout={self.dropout}")
        if self.length_penalty < 0:
            raise ValueError(
                f"length_penalty must be >= 0. Received: length_penalty={self.length_penalty}"
            )
        if self.clipnorm is not None and self.clipnorm <= 0:
            raise ValueError(f"clipnorm must be positive. Received: clipnorm={self.clipnorm}")
        if not (0 <= self.val_fraction < 1 and 0 < self.test_fraction < 1
                and self.val_fraction + self.test_fraction < 1):
            raise ValueError(
                "val_fraction must lie in [0, 1), test_fraction in (0, 1), their sum below 1. "
                f"Received: val_fraction={self.val_fraction}, test_fraction={self.test_fraction}"
            )
        if len(self.tsv_columns) != 2 or min(self.tsv_columns) < 1 or (
            self.tsv_columns[0] == self.tsv_columns[1]
        ):
            raise ValueError(
                "tsv_columns must be two different 1-based column numbers. Received: "
                f"tsv_columns={self.tsv_columns}"
            )
        if (self.src is None) != (self.tgt is None):
            raise ValueError("--src and --tgt go together: give both aligned files, or neither")
        if self.src is not None and self.data is not None:
            raise ValueError("give either --data or --src/--tgt, not both")
        if self.model == "transformer" and self.embedding_dim % self.num_heads:
            raise ValueError(
                "embedding_dim must be divisible by num_heads for the transformer. Received: "
                f"embedding_dim={self.embedding_dim}, num_heads={self.num_heads}"
            )


# ---------------------------------------------------------------------------------------------
# Data


@dataclasses.dataclass
class TranslationData:
    """The splits of a run's data.

    Attributes:
        train, val: `SentencePairs` (val may be empty).
        tests: `{test set name: SentencePairs}`, scored after training.
        source: what was read, for reports.
        notes: how the splits were made.
    """

    train: SentencePairs
    val: SentencePairs
    tests: dict
    source: str
    notes: list


def load_data(config):
    """The `TranslationData` the config names (`--src/--tgt`, `--data`, or the sample).

    Data without given splits is split at random (seeded) into train / val / test with
    `val_fraction` and `test_fraction`; a folder's missing val or test split is taken from its
    training pairs the same way.

    Raises:
        DataError: unreadable or misaligned data.
        UsageError: a `--data` folder without `--src-lang` / `--tgt-lang`.
    """
    if config.src is not None:
        given = {"train": read_aligned(config.src, config.tgt)}
        source = f"{config.src} + {config.tgt}"
    elif config.data is not None and Path(config.data).is_dir():
        if not (config.src_lang and config.tgt_lang):
            raise UsageError(
                f"--data {config.data} is a folder: name the languages of its aligned files "
                "with --src-lang and --tgt-lang (train.<src-lang>, train.<tgt-lang>, ...)"
            )
        files = find_split_files(config.data, config.src_lang, config.tgt_lang)
        given = {name: read_aligned(*paths) for name, paths in files.items()}
        source = str(config.data)
    elif config.data is not None:
        given = {"train": read_tsv_pairs(config.data, tuple(config.tsv_columns))}
        source = str(config.data)
    else:
        given = {"train": load_sample()}
        source = given["train"].name
    val = next((pairs for name, pairs in given.items() if name in VALIDATION_STEMS), None)
    tests = {name: pairs for name, pairs in given.items() if name.startswith("test")}
    val_fraction = config.val_fraction if val is None else 0.0
    test_fraction = config.test_fraction if not tests else 0.0
    train, held_val, held_test = split_pairs(given["train"], val_fraction, test_fraction,
                                             config.seed)
    notes = []
    if val is None:
        val = held_val
        notes.append(f"val: {len(held_val)} pairs held out of the training data "
                     f"({val_fraction:.0%}, seeded)")
    if not tests:
        tests = {"test": held_test}
        notes.append(f"test: {len(held_test)} pairs held out of the training data "
                     f"({test_fraction:.0%}, seeded)")
    return TranslationData(train=train, val=val, tests=tests, source=source, notes=notes)


# ---------------------------------------------------------------------------------------------
# Models


def _masked_loss():
    # ignore_class=0: padded target positions carry no loss, and the mean is over real tokens.
    return keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=PAD_ID)


def _learning_rate(config, total_steps):
    """Linear warmup to `learning_rate` over `warmup_steps`, then cosine decay to 10 %."""
    warmup = min(config.warmup_steps, max(total_steps - 1, 0))
    return keras.optimizers.schedules.CosineDecay(
        initial_learning_rate=0.0 if warmup else config.learning_rate,
        decay_steps=max(total_steps - warmup, 1),
        alpha=0.1,
        warmup_target=config.learning_rate if warmup else None,
        warmup_steps=warmup,
    )


def build_model(config, source_vocabulary_size, target_vocabulary_size, total_steps=1):
    """The teacher-forced training model, compiled: `[source_ids, target_in_ids] -> logits`.

    Layers have fixed names ("source_embedding", "attention", "decoder_0", "logits", ...) that
    `Translator` uses to build the step function from the same weights.

    Args:
        config: a `TranslateConfig`.
        source_vocabulary_size, target_vocabulary_size: ids per language.
        total_steps: the planned number of training batches (for the learning-rate schedule).
    """
    source_ids = keras.Input((None,), dtype="int32", name="source_ids")
    target_in_ids = keras.Input((None,), dtype="int32", name="target_in_ids")
    source_mask = keras.ops.not_equal(source_ids, PAD_ID)
    if config.model == "gru-attention":
        logits = _gru_attention(config, source_ids, target_in_ids, source_mask,
                                source_vocabulary_size, target_vocabulary_size)
    else:
        logits = _transformer(config, source_ids, target_in_ids, source_mask,
                              source_vocabulary_size, target_vocabulary_size)
    model = keras.Model([source_ids, target_in_ids], logits, name=f"translate_{config.model}")
    model.compile(
        optimizer=keras.optimizers.Adam(_learning_rate(config, total_steps),
                                        clipnorm=config.clipnorm),
        loss=_masked_loss(),
    )
    return model


def _gru_attention(config, source_ids, target_in_ids, source_mask, source_size, target_size):
    units = config.units
    embedded = keras.layers.Embedding(
        source_size, config.embedding_dim, mask_zero=True, name="source_embedding"
    )(source_ids)
    embedded = keras.layers.Dropout(config.dropout, name="source_dropout")(embedded)
    memory, forward_state, backward_state = keras.layers.Bidirectional(
        GRU(units, return_sequences=True, return_state=True, seed=config.seed), name="encoder"
    )(embedded)
    initial_state = keras.layers.Dense(units, activation="tanh", name="bridge")(
        keras.layers.Concatenate(name="encoder_state")([forward_state, backward_state])
    )
    target = keras.layers.Embedding(
        target_size, config.embedding_dim, mask_zero=True, name="target_embedding"
    )(target_in_ids)
    target = keras.layers.Dropout(config.dropout, name="target_dropout")(target)
    states = GRU(units, return_sequences=True, seed=config.seed + 1, name="decoder")(
        target, initial_state=[initial_state]
    )
    context, _ = AdditiveAttention(units, name="attention")(
        states, memory, values_mask=source_mask
    )
    hidden = keras.layers.Dense(units, activation="tanh", name="attention_output")(
        keras.layers.Concatenate(name="state_and_context")([states, context])
    )
    hidden = keras.layers.Dropout(config.dropout, name="output_dropout")(hidden)
    return keras.layers.Dense(target_size, name="logits")(hidden)


def _transformer(config, source_ids, target_in_ids, source_mask, source_size, target_size):
    width = config.embedding_dim
    layer_args = dict(num_heads=config.num_heads, ff_dim=config.ff_dim, dropout=config.dropout)
    encoded = TokenAndPositionEmbedding(
        source_size, config.max_length, width, mask_zero=True, name="source_embedding"
    )(source_ids)
    encoded = keras.layers.Dropout(config.dropout, name="source_dropout")(encoded)
    for index in range(config.layers):
        encoded = TransformerEncoderLayer(**layer_args, name=f"encoder_{index}")(encoded)
    decoded = TokenAndPositionEmbedding(
        target_size, config.max_length, width, mask_zero=True, name="target_embedding"
    )(target_in_ids)
    decoded = keras.layers.Dropout(config.dropout, name="target_dropout")(decoded)
    for index in range(config.layers):
        decoded = TransformerDecoderLayer(**layer_args, name=f"decoder_{index}")(
            decoded, encoded, encoder_mask=source_mask
        )
    return keras.layers.Dense(target_size, name="logits")(decoded)


# ---------------------------------------------------------------------------------------------
# Decoding


class Translator:
    """Translates text with a trained model: tokens in, greedy or beam search, text out.

    Everything is TensorFlow ops, so the same methods run eagerly, in `tf.function` and inside
    the exported SavedModel. The step function reuses the training model's layers:

    - gru-attention: state `{"h": [B, units], "memory": [B, S, 2 units], "memory_mask": [B, S]}`;
      one step is the decoder GRU's cell, then attention with the new state as the query.
    - transformer: state `{"decoder_<i>": key/value cache of decoder layer i (from
      `init_cache`), "memory_mask": [B, S], "position": [B]}`; one step is `decode_step` of
      every decoder layer at the current position (nothing earlier is recomputed).

    Args:
        model: the model `build_model` made (trained, or loaded from `model.keras`).
        config: the run's `TranslateConfig`.
        source_vocabulary, target_vocabulary: the run's `Vocabulary`s.
    """

    def __init__(self, model, config, source_vocabulary, target_vocabulary):
        self.model = model
        self.config = config
        self.source_lookup = source_vocabulary.lookup_layer()
        self.target_tokens = target_vocabulary.lookup_layer(invert=True)
        never = np.zeros(len(target_vocabulary), "float32")
        never[[PAD_ID, START_ID]] = NEVER
        self.never = tf.constant(never)
        self._functions = {}

    # Tokens and text.

    def source_ids(self, texts):
        """Padded source ids `[B, S]` (S at least 1) of a string tensor `[B]`."""
        ids = tf.cast(self.source_lookup(tokenize(texts)), tf.int32).to_tensor()
        return tf.pad(ids, [[0, 0], [0, tf.maximum(1 - tf.shape(ids)[1], 0)]])

    def to_text(self, token_ids):
        """Detokenised text `[B]` of output ids `[B, steps]` (cut at the first [END])."""
        return detokenize(strip_after_end(self.target_tokens(token_ids)))

    # The step function.

    def start(self, source_ids):
        """Encodes the sources and feeds [START]: `(logits of the first token, state)`."""
        mask = tf.not_equal(source_ids, PAD_ID)
        layer = self.model.get_layer
        if self.config.model == "gru-attention":
            embedded = layer("source_embedding")(source_ids)
            memory, forward_state, backward_state = layer("encoder")(embedded, mask=mask)
            h = layer("bridge")(tf.concat([forward_state, backward_state], axis=-1))
            state = {"h": h, "memory": memory, "memory_mask": mask}
        else:
            encoded = layer("source_embedding")(source_ids)
            for index in range(self.config.layers):
                encoded = layer(f"encoder_{index}")(encoded, mask=mask)
            state = {
                f"decoder_{index}": layer(f"decoder_{index}").init_cache(
                    encoded, self.config.max_length
                )
                for index in range(self.config.layers)
            }
            state.update(memory_mask=mask, position=tf.zeros_like(source_ids[:, 0]))
        start = tf.fill([tf.shape(source_ids)[0]], START_ID)
        return self.step(start, state)

    def step(self, token_ids, state):
        """`(token_ids [B], state) -> (logits [B, vocab], state)`: one decoder step."""
        layer = self.model.get_layer
        if self.config.model == "gru-attention":
            # The embedding rows themselves: the layer would attach a padding mask, and every
            # decoding step is a real token.
            embedded = tf.gather(layer("target_embedding").embeddings, token_ids)
            h, _ = layer("decoder").cell(embedded, [state["h"]])
            context, _ = layer("attention")(h, state["memory"], values_mask=state["memory_mask"])
            hidden = layer("attention_output")(tf.concat([h, context], axis=-1))
            state = {**state, "h": h}
        else:
            # Every row is at the same position; the state keeps one copy per row so that beam
            # search can reorder it like the rest.
            position = state["position"][0]
            hidden = layer("target_embedding")(token_ids[:, None], start_index=position)
            state = dict(state)
            for index in range(self.config.layers):
                name = f"decoder_{index}"
                hidden, state[name] = layer(name).decode_step(
                    hidden, state[name], position, encoder_mask=state["memory_mask"]
                )
            hidden = hidden[:, 0]
            state["position"] = state["position"] + 1
        return layer("logits")(hidden) + self.never, state

    def max_output_length(self, source_ids):
        source_length = tf.shape(source_ids)[1]
        return tf.minimum(
            OUTPUT_LENGTH_FACTOR * source_length + OUTPUT_LENGTH_MARGIN,
            self.config.max_length - 1,
        )

    # Decoding.

    def greedy_ids(self, source_ids):
        """Greedy output ids `[B, steps]` ([END] after the end)."""
        logits, state = self.start(source_ids)
        tokens, _, _ = GreedySampler()(
            self.step, logits, state, self.max_output_length(source_ids), end_token_id=END_ID
        )
        return tokens

    def beam_search(self, source_ids, beam_width, length_penalty, num_return=1):
        """The `BeamSearchOutput` of the sources: `num_return` hypotheses per row."""
        logits, state = self.start(source_ids)
        sampler = BeamSampler(beam_width, length_penalty, num_return)
        return sampler(
            self.step, logits, state, self.max_output_length(source_ids), end_token_id=END_ID
        )

    def decode_texts(self, texts, beam_width=None, length_penalty=0.6, num_return=1):
        """Translations of a string tensor `[B]`, greedy when `beam_width` is None.

        A text without tokens (empty or blank) translates to the empty string.

        Returns:
            `(translations string[B, num_return], scores float32[B, num_return])`; the scores
            are beam search's (log-probability / length penalty), zeros for greedy decoding.
        """
        source_ids = self.source_ids(texts)
        batch = tf.shape(source_ids)[0]
        if beam_width is None:
            translations = self.to_text(self.greedy_ids(source_ids))[:, None]
            scores = tf.zeros([batch, 1])
        else:
            output = self.beam_search(source_ids, beam_width, length_penalty, num_return)
            flat = tf.reshape(output.tokens, [batch * num_return, -1])
            translations = tf.reshape(self.to_text(flat), [batch, num_return])
            scores = output.scores
        empty = tf.equal(source_ids[:, :1], PAD_ID)
        return tf.where(empty, tf.constant(""), translations), scores

    def function(self, beam_width=None, length_penalty=0.6, num_return=1):
        """`decode_texts` with these settings as a `tf.function` (one per setting, traced once).

        Returns:
            A function `texts string[B] -> (translations string[B, num_return], scores
            float32[B, num_return])`.
        """
        key = (beam_width, float(length_penalty), num_return)
        if key not in self._functions:
            # Every loop is an explicit tf.while_loop: autograph would only add tracing time.
            self._functions[key] = tf.function(
                lambda texts: self.decode_texts(texts, *key),
                input_signature=[tf.TensorSpec([None], tf.string)],
                autograph=False,
            )
        return self._functions[key]

    def translate(self, texts, beam_width=None, length_penalty=0.6, num_return=1,
                  batch_size=64):
        """Translates a list of str: greedy when `beam_width` is None, else beam search.

        Sentences are decoded in batches of similar length (then put back in order).

        Returns:
            A list of str; with `num_return > 1` a list of `[(translation, score), ...]` per
            sentence, best first.
        """
        decode = self.function(beam_width, length_penalty, num_return)
        lengths = tokenize(list(texts)).row_lengths().numpy() if len(texts) else []
        order = np.argsort(lengths, kind="stable")
        results = [None] * len(texts)
        for begin in range(0, len(texts), batch_size):
            chosen = order[begin : begin + batch_size]
            translations, scores = decode(tf.constant([texts[i] for i in chosen]))
            for i, row, row_scores in zip(chosen, translations.numpy(), scores.numpy()):
                decoded = [t.decode("utf-8") for t in row]
                results[i] = decoded[0] if num_return == 1 else list(
                    zip(decoded, row_scores.tolist())
                )
        return results


# ---------------------------------------------------------------------------------------------
# Scoring


def corpus_scores(hypotheses, references):
    """sacreBLEU's corpus BLEU and chrF of detokenised hypotheses.

    Args:
        hypotheses: one str per sentence.
        references: a list of reference streams, each one str per sentence (sacrebleu's
            layout: `[[ref_1 of every sentence], [ref_2 of every sentence], ...]`).

    Returns:
        `{"bleu", "bleu_details", "bleu_signature", "chrf", "chrf_signature"}` (scores 0-100).
    """
    bleu, chrf = sacrebleu.BLEU(), sacrebleu.CHRF()
    bleu_score = bleu.corpus_score(hypotheses, references)
    chrf_score = chrf.corpus_score(hypotheses, references)
    return {
        "bleu": float(bleu_score.score),
        "bleu_details": str(bleu_score),
        "bleu_signature": str(bleu.get_signature()),
        "chrf": float(chrf_score.score),
        "chrf_signature": str(chrf.get_signature()),
    }


def score_pairs(translator, pairs, beam_width, length_penalty, batch_size):
    """Greedy and beam-search figures of one set of pairs, and its translations."""
    references = [pairs.targets]
    started = time.perf_counter()
    greedy = translator.translate(pairs.sources, batch_size=batch_size)
    greedy_seconds = time.perf_counter() - started
    started = time.perf_counter()
    beam = translator.translate(
        pairs.sources, beam_width=beam_width, length_penalty=length_penalty,
        batch_size=batch_size,
    )
    beam_seconds = time.perf_counter() - started
    figures = {
        "sentences": len(pairs),
        "greedy": {**corpus_scores(greedy, references), "seconds": round(greedy_seconds, 2)},
        "beam": {
            **corpus_scores(beam, references),
            "beam_width": beam_width,
            "length_penalty": length_penalty,
            "seconds": round(beam_seconds, 2),
        },
    }
    return figures, {"greedy": greedy, "beam": beam}


def metrics_table(test_figures):
    rows = []
    for name, figures in test_figures.items():
        beam = figures["beam"]
        rows.append([name, "greedy", figures["greedy"]["bleu"], figures["greedy"]["chrf"]])
        rows.append([name, f"beam (width {beam['beam_width']}, alpha {beam['length_penalty']})",
                     beam["bleu"], beam["chrf"]])
    table = format_table(["test set", "decoding", "BLEU", "chrF"], rows)
    first = next(iter(test_figures.values()))
    return "\n".join([
        table,
        f"BLEU signature: {first['greedy']['bleu_signature']}",
        f"chrF signature: {first['greedy']['chrf_signature']}",
    ])


def examples_text(pairs, translations, count=3):
    lines = []
    for index in range(min(count, len(pairs))):
        lines += [
            f"  source:    {pairs.sources[index]}",
            f"  reference: {pairs.targets[index]}",
            f"  greedy:    {translations['greedy'][index]}",
            f"  beam:      {translations['beam'][index]}",
        ]
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# Attention plots


def attention_weights(translator, source_ids, output_ids):
    """Attention of each output token over the source tokens, `[B, T, S]`.

    The model reads [START] + output (teacher forcing on its own output); row t is the
    attention when it predicted output token t. gru-attention: the additive attention's
    weights; transformer: the last decoder layer's cross-attention, averaged over heads.
    """
    model = translator.model
    target_in = tf.concat([tf.fill([tf.shape(output_ids)[0], 1], START_ID),
                           output_ids[:, :-1]], axis=1)
    if translator.config.model == "gru-attention":
        probe = keras.Model(model.inputs, model.get_layer("attention").output[1])
        return probe([source_ids, target_in])
    layers = translator.config.layers
    last = model.get_layer(f"decoder_{layers - 1}")
    decoder_inputs = model.get_layer(
        f"decoder_{layers - 2}" if layers > 1 else "target_dropout"
    ).output
    encoder_outputs = model.get_layer(f"encoder_{layers - 1}").output
    probe = keras.Model(model.inputs, [decoder_inputs, encoder_outputs])
    x, memory = probe([source_ids, target_in])
    return _cross_attention_weights(last, x, memory, tf.not_equal(source_ids, PAD_ID))


def _cross_attention_weights(layer, x, memory, memory_mask):
    """The cross-attention weights of a `TransformerDecoderLayer`, head-averaged `[B, T, S]`.

    Recomputes the layer's first sublayer (causal self-attention with its residual and norm,
    post- or pre-norm, no dropout) to get the cross-attention's queries.
    """
    h = layer.self_attention_norm(x) if layer.norm_first else x
    y = layer.self_attention(h, h, use_causal_mask=True)
    x = x + y if layer.norm_first else layer.self_attention_norm(x + y)
    h = layer.cross_attention_norm(x) if layer.norm_first else x
    _, weights = layer.cross_attention(
        h, memory, value_mask=memory_mask, return_attention_scores=True
    )
    return tf.reduce_mean(weights, axis=1)


def save_attention_plots(translator, pairs, count, folder):
    """Heatmaps of the greedy translation's attention for the first `count` pairs."""
    plt = pyplot()
    paths = []
    for index in range(min(count, len(pairs))):
        source_ids = translator.source_ids(tf.constant([pairs.sources[index]]))
        output_ids = translator.greedy_ids(source_ids)
        tokens = [t.decode("utf-8") for t in translator.target_tokens(output_ids)[0].numpy()]
        length = tokens.index("[END]") + 1 if "[END]" in tokens else len(tokens)
        output_ids = output_ids[:, :length]
        weights = attention_weights(translator, source_ids, output_ids)[0].numpy()
        source_tokens = [t.decode("utf-8") for t in tokenize([pairs.sources[index]])[0].numpy()]
        source_tokens = [token_text(t) for t in source_tokens] or ["(empty)"]
        output_tokens = [token_text(t) for t in tokens[:length]]
        figure, axis = plt.subplots(
            figsize=(1.0 + 0.45 * len(source_tokens), 1.2 + 0.4 * len(output_tokens))
        )
        axis.imshow(weights[:, : len(source_tokens)], cmap="viridis", vmin=0.0, vmax=1.0,
                    aspect="auto")
        axis.set_xticks(range(len(source_tokens)), source_tokens, rotation=60, ha="right")
        axis.set_yticks(range(len(output_tokens)), output_tokens)
        axis.set_xlabel("source")
        axis.set_ylabel("output (greedy)")
        axis.set_title(f"attention, validation sentence {index + 1}", fontsize=9)
        figure.tight_layout()
        path = Path(folder) / f"attention_{index + 1}.png"
        figure.savefig(path, dpi=100)
        plt.close(figure)
        paths.append(path)
    return paths


# ---------------------------------------------------------------------------------------------
# Export


def export_saved_model(translator, path):
    """Writes a SavedModel whose `serving_default` translates raw text with beam search.

    `serving_default(text: string[None]) -> {"translation": string[None]}`: tokenising, beam
    search with the run's `beam_width` and `length_penalty`, and detokenising run in the graph.
    Written to a temporary directory, then renamed.
    """
    path = Path(path)
    config = translator.config
    # The same traced function as `Translator.translate` with the run's settings.
    translate = translator.function(config.beam_width, config.length_penalty)

    def serve(text):
        translations, _ = translate(text)
        return {"translation": translations[:, 0]}

    archive = keras.export.ExportArchive()
    archive.track(translator.model)
    # Called inside `translate`, the lookup layers are not seen by `add_endpoint`: their
    # tables are tracked here.
    archive.track(translator.source_lookup.lookup_table)
    archive.track(translator.target_tokens.lookup_table)
    archive.add_endpoint(
        "serving_default", serve, input_signature=[tf.TensorSpec([None], tf.string, name="text")]
    )
    return write_export_archive(archive, path)


# ---------------------------------------------------------------------------------------------
# Actions


def _planned_batches(lengths, batch_size):
    """Batches per epoch of `make_dataset(..., bucket_width=TRAIN_BUCKET_WIDTH)`."""
    longest = int(lengths.max())
    boundaries = np.arange(TRAIN_BUCKET_WIDTH + 1, longest + 1, TRAIN_BUCKET_WIDTH)
    per_bucket = np.bincount(np.searchsorted(boundaries, lengths, side="right"))
    return int(np.sum(np.ceil(per_bucket / batch_size)))


def train(config, overwrite=False, callbacks=()):
    """Trains a translation model and writes its run directory.

    Args:
        config: a `TranslateConfig`.
        overwrite: replace a finished run at `config.out`.
        callbacks: extra Keras callbacks for `fit` (after the run directory's own).

    Returns:
        An `ActionResult` with the run directory and the test figures.

    Raises:
        DataError: unreadable, misaligned or unsuitable data.
        UsageError: a refused `--out`, or a data folder without languages.
    """
    config, distribution, run = begin_run(
        config, TASK_NAME, overwrite, data_paths=("data", "src", "tgt")
    )
    data = load_data(config)
    if len(data.val) == 0:
        raise DataError("no validation pairs: set --val-fraction above 0", path=data.source)

    source_vocabulary = Vocabulary.build(
        tokenize(data.train.sources), config.min_count, config.max_vocabulary
    )
    target_vocabulary = Vocabulary.build(
        tokenize(data.train.targets), config.min_count, config.max_vocabulary
    )
    source_lookup, target_lookup = (
        source_vocabulary.lookup_layer(), target_vocabulary.lookup_layer()
    )
    train_ids = encode_pairs(data.train, source_lookup, target_lookup, config.max_length)
    val_ids = encode_pairs(data.val, source_lookup, target_lookup, config.max_length)
    if train_ids.skipped == len(data.train):
        raise DataError(
            f"every training pair is longer than max_length={config.max_length} tokens",
            path=data.source,
        )
    lengths = np.maximum(train_ids.source_ids.row_lengths().numpy(),
                         train_ids.target_ids.row_lengths().numpy() + 1)
    batch_size = distribution.global_batch_size(config.batch_size)
    batches = _planned_batches(lengths, batch_size)
    # Bucketing hides the number of batches from Keras; it is known, and asserted.
    train_set = make_dataset(
        train_ids.source_ids, train_ids.target_ids, batch_size,
        shuffle_seed=config.seed, bucket_width=TRAIN_BUCKET_WIDTH,
    ).apply(tf.data.experimental.assert_cardinality(batches))
    val_set = make_dataset(val_ids.source_ids, val_ids.target_ids, batch_size)
    total_steps = batches * config.epochs

    start_run(run, config)
    source_vocabulary.save(run.path("source_vocabulary.txt"))
    target_vocabulary.save(run.path("target_vocabulary.txt"))

    with distribution.scope():
        model = build_model(config, len(source_vocabulary), len(target_vocabulary),
                            total_steps)
    fit_callbacks = training_callbacks(run) + [
        keras.callbacks.EarlyStopping(
            monitor="val_loss", patience=config.patience, restore_best_weights=True
        ),
        *callbacks,
    ]
    started = time.perf_counter()
    model.fit(
        distribution.shard(train_set),
        validation_data=distribution.shard(val_set),
        epochs=config.epochs,
        callbacks=fit_callbacks,
        shuffle=False,  # the training dataset shuffles itself, with the run's seed
        verbose=progress_verbosity(),
    )
    train_seconds = time.perf_counter() - started
    history = fit_callbacks[0].history
    model = distribution.local_model(model, run.path("model.keras"))

    translator = Translator(model, config, source_vocabulary, target_vocabulary)
    test_figures, examples = {}, {}
    for name, pairs in data.tests.items():
        test_figures[name], examples[name] = score_pairs(
            translator, pairs, config.beam_width, config.length_penalty, config.batch_size
        )
    val_losses = [row["val_loss"] for row in history]
    metrics = {
        "test": test_figures,
        "validation_loss": float(min(val_losses)) if val_losses else None,
        "epochs_run": len(history),
        "best_epoch": int(np.argmin(val_losses)) + 1 if val_losses else None,
        "train_seconds_this_session": round(train_seconds, 2),
        "distribution": distribution.report(config.batch_size),
        "data": {
            "source": data.source,
            "pairs": {"train": len(data.train), "val": len(data.val),
                      **{name: len(pairs) for name, pairs in data.tests.items()}},
            "skipped_longer_than_max_length": {"train": train_ids.skipped,
                                               "val": val_ids.skipped},
            "splits": data.notes,
            "vocabulary": {"source": len(source_vocabulary), "target": len(target_vocabulary)},
        },
    }
    run.write_json("metrics.json", metrics)
    save_history_plot(history, run.path("plots", "loss.png"), title=f"{config.model}: loss")
    save_attention_plots(translator, data.val, config.attention_plots, run.path("plots"))
    export_saved_model(translator, run.path("saved_model"))
    final = run.finish()

    first_test = next(iter(data.tests))
    skipped = metrics["data"]["skipped_longer_than_max_length"]
    notes = list(data.notes)
    if distribution.kind != "none":
        notes.append(
            f"{distribution.kind}: {distribution.replicas} replicas, global batch "
            f"{batch_size} = {config.batch_size} per replica"
        )
    if skipped["train"] or skipped["val"]:
        notes.append(
            f"left out (longer than max_length={config.max_length} tokens): "
            f"{skipped['train']} training and {skipped['val']} validation pairs"
        )
    summary = "\n".join(
        [
            f"{TASK_NAME}: {data.source}, {config.model}, {len(data.train)} training pairs, "
            f"vocabularies {len(source_vocabulary)} / {len(target_vocabulary)}, "
            f"{len(history)} epochs ({train_seconds:.0f} s)",
            metrics_table(test_figures),
            *notes,
            f"examples ({first_test}):",
            examples_text(data.tests[first_test], examples[first_test]),
            f"run directory: {final}",
        ]
    )
    return ActionResult(summary=summary, path=final, metrics=metrics)


def load_run(run):
    """`(record, config, translator)` of the finished run directory `run`."""
    record = open_run(run, TASK_NAME)
    config = TranslateConfig(**record.settings)
    model = keras.saving.load_model(record.file("model.keras"), compile=False)
    translator = Translator(
        model,
        config,
        Vocabulary.load(record.file("source_vocabulary.txt")),
        Vocabulary.load(record.file("target_vocabulary.txt")),
    )
    return record, config, translator


def _decoding_settings(config, beam_width, length_penalty):
    beam_width = config.beam_width if beam_width is None else beam_width
    length_penalty = config.length_penalty if length_penalty is None else length_penalty
    if beam_width < 1:
        raise UsageError(f"--beam-width must be at least 1. Received: {beam_width}")
    if length_penalty < 0:
        raise UsageError(f"--length-penalty must be >= 0. Received: {length_penalty}")
    return beam_width, length_penalty


def evaluate(run, data=None, output=None, src=None, tgt=None, beam_width=None,
             length_penalty=None):
    """Scores a trained run with sacreBLEU, greedy and beam: its test split(s), or other pairs.

    Args:
        run: the run directory.
        data: a TSV of pairs (the run's `tsv_columns`), or a folder whose `test*` files (in the
            run's languages) are scored; None re-scores the run's own test split(s).
        output: a JSON file to write the figures to (optional).
        src, tgt: aligned files to score instead of `data`.
        beam_width, length_penalty: beam-search settings (default: the run's).

    Returns:
        An `ActionResult` with the figures.
    """
    record, config, translator = load_run(run)
    beam_width, length_penalty = _decoding_settings(config, beam_width, length_penalty)
    if (src is None) != (tgt is None):
        raise UsageError("--src and --tgt go together: give both aligned files, or neither")
    if src is not None and data is not None:
        raise UsageError("give either --data or --src/--tgt, not both")
    if src is not None:
        tests = {"test": read_aligned(src, tgt)}
    elif data is not None and Path(data).is_dir():
        if not (config.src_lang and config.tgt_lang):
            raise UsageError(
                f"--data {data} is a folder, but the run was not trained on a folder: score "
                "aligned files with --src and --tgt"
            )
        files = find_split_files(data, config.src_lang, config.tgt_lang, require_train=False)
        tests = {n: read_aligned(*p) for n, p in files.items() if n.startswith("test")}
        if not tests:
            raise DataError(
                f"no aligned test*.{config.src_lang} / test*.{config.tgt_lang} files",
                path=data,
            )
    elif data is not None:
        tests = {"test": read_tsv_pairs(data, tuple(config.tsv_columns))}
    else:
        tests = load_data(config).tests
    figures = {
        name: score_pairs(translator, pairs, beam_width, length_penalty, config.batch_size)[0]
        for name, pairs in tests.items()
    }
    path = None
    if output:
        path = Path(output)
        write_json_atomic(path, {"test": figures})
    source = src or data or "the run's test split"
    summary = "\n".join(
        [f"{TASK_NAME}: {source}", metrics_table(figures)]
        + ([f"figures written to {path}"] if path else [])
    )
    return ActionResult(summary=summary, path=path, metrics={"test": figures})


def predict(run, data=None, output=None, texts=(), input=None, beam_width=None,
            length_penalty=None, n_best=1):
    """Translates sentences given on the command line or one per line of a file.

    Args:
        run: the run directory.
        data: same as `input` (the common flag of every task's predict).
        output: also write the translations to this file, one per line.
        texts: sentences to translate.
        input: a UTF-8 file with one sentence per line (an empty line gives an empty line).
        beam_width, length_penalty: beam-search settings (default: the run's).
        n_best: print this many hypotheses per sentence, with their scores.

    Returns:
        An `ActionResult` whose summary holds the translations.
    """
    record, config, translator = load_run(run)
    beam_width, length_penalty = _decoding_settings(config, beam_width, length_penalty)
    if input is not None and data is not None:
        raise UsageError("give the sentences file with --input (or --data), not both")
    if not 1 <= n_best <= beam_width:
        raise UsageError(f"--n-best must lie between 1 and --beam-width={beam_width}. "
                         f"Received: {n_best}")
    input = input if input is not None else data
    sentences = list(texts or [])
    if input is not None:
        sentences += read_lines(input)
    if not sentences:
        raise UsageError('nothing to translate: give sentences ("A man is riding a bike.") or '
                         "--input FILE")
    results = translator.translate(
        sentences, beam_width=beam_width, length_penalty=length_penalty, num_return=n_best,
        batch_size=config.batch_size,
    )
    if n_best == 1:
        lines = list(results)
    else:
        lines = [
            f"{index + 1}\t{rank + 1}\t{score:.4f}\t{translation}"
            for index, hypotheses in enumerate(results)
            for rank, (translation, score) in enumerate(hypotheses)
        ]
    path = None
    if output:
        path = Path(output)
        write_text_atomic(path, "".join(line + "\n" for line in lines))
    summary = "\n".join(lines + ([f"written to {path}"] if path else []))
    return ActionResult(summary=summary, path=path)


def export(run, out=None):
    """Writes the run's SavedModel again, to `out` (default: `<run>/saved_model`)."""
    record, config, translator = load_run(run)
    path = export_saved_model(translator, Path(out) if out else record.file("saved_model"))
    summary = (
        f"SavedModel written to {path}\n"
        "serving_default(text: string[None]) -> {'translation': string[None]} "
        f"(beam search, width {config.beam_width}, length penalty {config.length_penalty})"
    )
    return ActionResult(summary=summary, path=path)


_DECODING_ARGUMENTS = [
    (["--beam-width"], {"type": int, "metavar": "K",
                        "help": "beam width (default: the run's beam_width)"}),
    (["--length-penalty"], {"type": float, "metavar": "ALPHA",
                            "help": "GNMT length penalty alpha (default: the run's)"}),
]

TASK = Task(
    name=TASK_NAME,
    description=(
        "Translate sentences with a GRU encoder-decoder with additive attention "
        "(--model gru-attention) or a Transformer (--model transformer) built from seqlab's "
        "layers, trained with teacher forcing on aligned files (--src/--tgt), a folder of "
        "aligned split files (--data DIR --src-lang en --tgt-lang de) or a TSV of pairs. "
        "Scored on the test split with sacreBLEU (BLEU with its signature, and chrF), greedy "
        "and beam search. Without data it trains on a small English -> German smoke-test "
        "sample shipped with seqlab."
    ),
    examples={
        "train": [
            "seqlab translate train",
            "seqlab translate train --data multi30k --src-lang en --tgt-lang de --min-count 2 "
            "--out runs/multi30k",
            "seqlab translate train --src corpus.en --tgt corpus.de --model gru-attention",
            "seqlab translate train --data deu.txt --epochs 20     # Anki pairs: English, German",
        ],
        "evaluate": [
            "seqlab translate evaluate --run runs/multi30k",
            "seqlab translate evaluate --run runs/multi30k --src test.en --tgt test.de "
            "--beam-width 8",
        ],
        "predict": [
            'seqlab translate predict --run runs/multi30k "A man is riding a bike."',
            "seqlab translate predict --run runs/multi30k --input sentences.txt --output out.txt",
            'seqlab translate predict --run runs/multi30k --beam-width 8 --n-best 3 "Two dogs '
            'play."',
        ],
        "export": ["seqlab translate export --run runs/multi30k --out serving/translate/1"],
    },
    config_class=TranslateConfig,
    train=train,
    evaluate=evaluate,
    predict=predict,
    export=export,
    extra_arguments={
        "predict": [
            (["texts"], {"nargs": "*", "metavar": "TEXT", "help": "sentences to translate"}),
            (["--input"], {"metavar": "FILE",
                           "help": "a file of sentences to translate, one per line"}),
            *_DECODING_ARGUMENTS,
            (["--n-best"], {"type": int, "metavar": "N",
                            "help": "print the N best translations with their scores"}),
        ],
        "evaluate": [
            (["--src"], {"metavar": "FILE", "help": "aligned source file to score"}),
            (["--tgt"], {"metavar": "FILE", "help": "aligned reference file to score"}),
            *_DECODING_ARGUMENTS,
        ],
    },
)
