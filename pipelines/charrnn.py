"""Char-RNN text generation: a stacked GRU or LSTM that predicts the next character.

`train` reads a UTF-8 text file or folder (or, without `--data`, the source code of the
standard library's `email` package, which every Python installation has), splits it 90/10 in
text order, builds the character vocabulary on the training part and fits embedding -> stacked
GRU/LSTM (seqlab's layers) -> dense logits, either stateless (shuffled windows, zero state per
window) or `--stateful` (contiguous streams, the state carried from batch to batch and reset at
the start of every epoch). It reports the validation loss in nats and bits per character and the
perplexity, beside a unigram baseline, and samples at temperatures 0.5, 1.0 and 1.5.

Generation never re-feeds the text: a batch-size-free step model with the trained weights reads
the prompt once, then feeds one character per step with explicit states, and the sampling loop
(models/samplers.py) runs as one `tf.while_loop`.

The run directory holds, besides the common files (pipelines/common.py): `vocabulary.txt` (one
character per line as a JSON string; line n is id n + 1), `plots/loss.png`, and `saved_model/`
with two signatures:

- `generate(prompt: string[None], num_chars: int32[None], temperature: float32[None],
  seed: int32[None]) -> {"text": string[None]}`: prompt and continuation, the whole sampling
  loop in the graph (one value of each input per prompt; temperature 0 is greedy).
- `serving_default(char_ids: int32[None, None], <layer>_h: float32[None, units] (and <layer>_c
  for LSTM) per layer) -> {"logits": float32[None, None, vocab], <the new states>}`: one step
  for servers that keep the state between requests; id 0 is padding (state carried over).
"""

import dataclasses
import math
import time
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf

from seqlab.data.text import (
    PADDING_ID,
    UNKNOWN_ID,
    UNSEEN_POLICIES,
    CharVocabulary,
    describe_chars,
    load_default_text,
    make_stateful_dataset,
    make_window_dataset,
    read_text,
    split_text,
    stateful_layout,
)
from seqlab.layers import GRU, LSTM, reset_states
from seqlab.pipelines.common import (
    ActionResult,
    Task,
    TrainConfig,
    UsageError,
    format_table,
    open_run,
    option,
    progress_verbosity,
    read_json,
    save_history_plot,
    training_callbacks,
    write_export_archive,
    write_json_atomic,
    write_text_atomic,
)
from seqlab.models.samplers import get_sampler
from seqlab.pipelines.distribute import begin_run, start_run

TASK_NAME = "charrnn"
MODEL_KINDS = ("gru", "lstm")
RECURRENT_LAYERS = {"gru": GRU, "lstm": LSTM}
SAMPLE_TEMPERATURES = (0.5, 1.0, 1.5)
# Added to the logits of padding and [UNK] so that generation never chooses them. Finite, so
# that servers can put the logits in JSON.
NEVER = -1e9
# The prompt an empty prompt is read as: the model needs one character to start from.
EMPTY_PROMPT = "\n"


@dataclasses.dataclass
class CharRNNConfig(TrainConfig):
    """Every setting of a char-RNN run; the defaults suit the embedded text on a CPU."""

    data: str | None = option(
        None, "UTF-8 text file or folder of text files (default: the source code of the "
        "standard library's email package)"
    )
    epochs: int = option(10, "maximum number of epochs (early stopping may end sooner)")
    batch_size: int = option(64, "windows per batch (--stateful: the number of streams)")
    window: int = option(100, "characters per training window (steps of backpropagation)")
    stateful: bool = option(
        False, "carry the state from batch to batch over contiguous streams (reset every epoch)"
    )
    model: str = option("gru", "recurrent layer kind", MODEL_KINDS)
    units: int = option(256, "units per recurrent layer")
    layers: int = option(1, "stacked recurrent layers")
    embedding_dim: int = option(64, "character embedding size; 0 feeds one-hot vectors")
    dropout: float = option(0.0, "dropout rate of each recurrent layer's inputs")
    val_fraction: float = option(0.1, "share of the text for validation (its last part)")
    max_train_chars: int | None = option(
        None, "use only the first N characters of the training part (default: all)"
    )
    unseen_chars: str = option(
        "unknown", "validation characters missing from the training text: read as [UNK] or "
        "refuse the data", UNSEEN_POLICIES
    )
    learning_rate: float = option(2e-3, "Adam learning rate")
    clipnorm: float | None = option(1.0, "gradient norm clipping of Adam")
    patience: int = option(3, "early-stopping patience in epochs (best weights restored)")
    max_minutes: float | None = option(
        None, "stop after the first epoch that ends past this many minutes of training in this "
        "session (default: no limit)"
    )
    sample_prompt: str | None = option(
        None, "prompt of the samples in metrics.json (default: the first line of the "
        "validation text, at most 40 characters)"
    )
    sample_chars: int = option(200, "characters per sample in metrics.json")

    def __post_init__(self):
        super().__post_init__()
        for name in ("window", "units", "layers", "patience"):
            value = getattr(self, name)
            if value < 1:
                raise ValueError(f"{name} must be at least 1. Received: {name}={value}")
        for name in ("embedding_dim", "sample_chars"):
            value = getattr(self, name)
            if value < 0:
                raise ValueError(f"{name} must be at least 0. Received: {name}={value}")
        if self.max_train_chars is not None and self.max_train_chars < 2:
            raise ValueError(
                f"max_train_chars must be at least 2. Received: max_train_chars="
                f"{self.max_train_chars}"
            )
        if not 0 <= self.dropout < 1:
            raise ValueError(f"dropout must lie in [0, 1). Received: dropout={self.dropout}")
        if not 0 < self.val_fraction < 1:
            raise ValueError(
                f"val_fraction must lie in (0, 1). Received: val_fraction={self.val_fraction}"
            )
        if self.max_minutes is not None and self.max_minutes <= 0:
            raise ValueError(
                f"max_minutes must be positive. Received: max_minutes={self.max_minutes}"
            )
        if self.clipnorm is not None and self.clipnorm <= 0:
            raise ValueError(f"clipnorm must be positive. Received: clipnorm={self.clipnorm}")
        if self.stateful and self.distribute != "none":
            raise ValueError(
                "stateful training runs on one device: each state row belongs to one stream of "
                f"the batch. Received: stateful=True, distribute={self.distribute!r}"
            )


# ---------------------------------------------------------------------------------------------
# Data


def load_corpus(data):
    """`(text, source)` of a text file or folder, or of the embedded default when None."""
    if data is None:
        return load_default_text()
    text, files = read_text(data)
    source = str(data) if len(files) == 1 else f"{data} ({len(files)} files)"
    return text, source


@dataclasses.dataclass
class Corpus:
    """A run's text, split and encoded.

    Attributes:
        source: where the text came from.
        vocabulary: the `CharVocabulary` of the training part.
        train_ids, val_ids: int32 ids of the training and validation parts.
        val_text: the validation part as text (for the default sample prompt).
        total_chars: characters in the whole text.
        unused_train_chars: training characters left out by `max_train_chars`.
        unseen: `{character: count}` of validation characters read as [UNK].
    """

    source: str
    vocabulary: CharVocabulary
    train_ids: np.ndarray
    val_ids: np.ndarray
    val_text: str
    total_chars: int
    unused_train_chars: int
    unseen: dict


def prepare_corpus(config, vocabulary=None):
    """Reads, splits and encodes the config's text; builds the vocabulary unless given."""
    text, source = load_corpus(config.data)
    train_text, val_text = split_text(text, config.val_fraction, source=source)
    unused = 0
    if config.max_train_chars is not None and len(train_text) > config.max_train_chars:
        unused = len(train_text) - config.max_train_chars
        train_text = train_text[: config.max_train_chars]
    vocabulary = vocabulary or CharVocabulary.from_text(train_text)
    train_ids, _ = vocabulary.encode(train_text)
    val_ids, unseen = vocabulary.encode(val_text, policy=config.unseen_chars, source=source)
    return Corpus(source, vocabulary, train_ids, val_ids, val_text, len(text), unused, unseen)


def make_dataset(config, ids, training, source=None, batch_size=None):
    """The training or evaluation dataset of `ids` for the config's mode.

    Stateless: windows of `config.window` characters (shuffled when training), batches of
    `batch_size` (default: the config's; a distributed run batches globally). Stateful:
    `config.batch_size` contiguous streams, batch k+1 continuing batch k.
    """
    if config.stateful:
        return make_stateful_dataset(ids, config.batch_size, config.window, source=source)
    return make_window_dataset(
        ids, config.window, batch_size or config.batch_size, seed=config.seed, shuffle=training,
        source=source,
    )


def scored_chars(config, length):
    """How many of `length` ids `make_dataset` scores (it drops an incomplete remainder)."""
    if config.stateful:
        _, stream_length = stateful_layout(length, config.batch_size, config.window)
        return config.batch_size * stream_length
    return (length - 1) // config.window * config.window


# ---------------------------------------------------------------------------------------------
# Models


def _embedding(config, vocab_size):
    if config.embedding_dim == 0:
        # One-hot inputs, as in the seeds: a fixed identity embedding.
        return keras.layers.Embedding(
            vocab_size, vocab_size, embeddings_initializer="identity", trainable=False,
            name="embedding",
        )
    return keras.layers.Embedding(vocab_size, config.embedding_dim, name="embedding")


def _recurrent_layer(config, index, **kwargs):
    return RECURRENT_LAYERS[config.model](
        config.units,
        return_sequences=True,
        dropout=config.dropout,
        seed=config.seed + index,
        name=f"{config.model}_{index}",
        **kwargs,
    )


def build_model(config, vocab_size):
    """The training model, compiled: char ids `[batch, time]` -> next-char logits.

    With `config.stateful` the layers are stateful and the batch shape is fixed to
    `(batch_size, window)`; otherwise any batch and length. The loss is the mean cross-entropy
    in nats per character. This is the one place that creates the model and its optimizer, so
    that a distribution strategy's `scope()` can wrap it.
    """
    if config.stateful:
        inputs = keras.Input(
            batch_shape=(config.batch_size, config.window), dtype="int32", name="char_ids"
        )
    else:
        inputs = keras.Input((None,), dtype="int32", name="char_ids")
    hidden = _embedding(config, vocab_size)(inputs)
    for index in range(config.layers):
        hidden = _recurrent_layer(config, index, stateful=config.stateful)(hidden)
    logits = keras.layers.Dense(vocab_size, name="logits")(hidden)
    model = keras.Model(inputs, logits, name=f"charrnn_{config.model}")
    model.compile(
        optimizer=keras.optimizers.Adam(config.learning_rate, clipnorm=config.clipnorm),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    return model


def state_names(config):
    """The names of the recurrent states, layer by layer: `gru_0_h`, or `lstm_0_h, lstm_0_c`."""
    suffixes = ("h", "c") if config.model == "lstm" else ("h",)
    return [f"{config.model}_{i}_{s}" for i in range(config.layers) for s in suffixes]


def build_step_model(config, vocab_size):
    """The inference model: `[char_ids, *states] -> [logits, *new_states]`, stateless.

    `char_ids` is `[batch, time]` with any batch size and length (id 0 is padding: masked, the
    state carried over); the states are explicit inputs and outputs, zeros to start. It has the
    training model's layer names, so `copy_weights` fills it from a model trained with any
    batch size, stateful or not.
    """
    char_ids = keras.Input((None,), dtype="int32", name="char_ids")
    names = state_names(config)
    state_inputs = [keras.Input((config.units,), name=name) for name in names]
    per_layer = len(names) // config.layers
    hidden = _embedding(config, vocab_size)(char_ids)
    # Passed explicitly: Keras does not hand an embedding's mask on to a layer that is also
    # given `initial_state`.
    mask = keras.ops.not_equal(char_ids, PADDING_ID)
    new_states = []
    for index in range(config.layers):
        initial = state_inputs[index * per_layer:(index + 1) * per_layer]
        hidden, *states = _recurrent_layer(config, index, return_state=True)(
            hidden, mask=mask, initial_state=initial
        )
        new_states.extend(states)
    logits = keras.layers.Dense(vocab_size, name="logits")(hidden)
    return keras.Model([char_ids, *state_inputs], [logits, *new_states], name="charrnn_step")


def copy_weights(source, target):
    """Copies the weights of every layer of `target` from the same-named layer of `source`.

    Weights only: a stateful layer's state variables are not weights.
    """
    for layer in target.layers:
        if layer.weights:
            layer.set_weights(source.get_layer(layer.name).get_weights())


class CharGenerator:
    """Text generation with a step model: the prompt is read once, then one char per step.

    Args:
        step_model: from `build_step_model`, with trained weights.
        vocabulary: the run's `CharVocabulary`.
        state_names: the names of the step model's states (`state_names(config)`).

    Example:

    >>> generator = CharGenerator(step_model, vocabulary, state_names(config))
    >>> generator.generate("ROMEO:", num_chars=100, temperature=0.8, seed=1)
    'ROMEO:\\nWhat ...'
    """

    def __init__(self, step_model, vocabulary, state_names):
        self.step_model = step_model
        self.vocabulary = vocabulary
        self.state_names = list(state_names)
        self.state_sizes = [state.shape[-1] for state in step_model.inputs[1:]]
        # For one character per step the layers' cells run directly: no time loop, no mask.
        layer_names = list(dict.fromkeys(name.rsplit("_", 1)[0] for name in self.state_names))
        self._cells = [step_model.get_layer(name).cell for name in layer_names]
        self._embedding = step_model.get_layer("embedding")
        self._head = step_model.get_layer("logits")
        vocab_size = vocabulary.size
        self._never = tf.constant(
            [NEVER if i in (PADDING_ID, UNKNOWN_ID) else 0.0 for i in range(vocab_size)],
            tf.float32,
        )
        self._compiled = {}

    def step(self, char_ids, states):
        """One call of the step model: `char_ids` `[batch, time]` and the states in, the
        logits `[batch, time, vocab]` (padding and [UNK] made impossible) and states out."""
        char_ids = tf.convert_to_tensor(char_ids, tf.int32)
        logits, *states = self.step_model([char_ids, *states], training=False)
        return logits + self._never, list(states)

    def step_one(self, char_ids, states):
        """One character per row: `char_ids` `[batch]` and the states in, the logits
        `[batch, vocab]` (padding and [UNK] made impossible) and states out.

        The same function as `step` on one time step, computed by the cells directly.
        """
        hidden = self._embedding(char_ids)
        new_states, used = [], 0
        for cell in self._cells:
            count = len(cell.state_size) if isinstance(cell.state_size, (list, tuple)) else 1
            hidden, layer_states = cell(hidden, states[used:used + count], training=False)
            new_states.extend(layer_states)
            used += count
        return self._head(hidden) + self._never, new_states

    def zero_states(self, batch):
        return [tf.zeros([batch, size]) for size in self.state_sizes]

    def generate_ids(self, prompt_ids, prompt_lengths, num_steps, sampler):
        """Reads the prompts, then chooses `num_steps` characters per row.

        Args:
            prompt_ids: int32 `[batch, time]`, right-padded with 0.
            prompt_lengths: int `[batch]`, each at least 1.
            num_steps: scalar, the characters to choose.
            sampler: a `seqlab.models.samplers.Sampler`.

        Returns:
            int32 `[batch, num_steps]`.
        """
        batch = tf.shape(prompt_ids)[0]
        logits, states = self.step(prompt_ids, self.zero_states(batch))
        last = tf.gather(logits, tf.cast(prompt_lengths, tf.int32) - 1, batch_dims=1)
        tokens, _, _ = sampler(self.step_one, last, states, num_steps)
        return tokens

    def generate_strings(self, prompt, num_chars, temperature, seed, top_k=None):
        """Prompts and their continuations, in TensorFlow ops (the SavedModel's `generate`).

        Args:
            prompt: string `[batch]`; an empty prompt is read as a line break.
            num_chars: int32 `[batch]`, characters to add to each prompt (negative: 0).
            temperature: float32 `[batch]`; 0 is greedy (argmax).
            seed: int32 `[batch]`, the sampling seed of each row.
            top_k: optional Python int: sample among the k most probable characters.

        Returns:
            string `[batch]`: each prompt followed by its continuation.
        """
        read = tf.where(tf.strings.length(prompt) > 0, prompt, EMPTY_PROMPT)
        chars = tf.strings.unicode_split(read, "UTF-8")
        ids = tf.cast(self.vocabulary.lookup(chars), tf.int32)
        num_chars = tf.maximum(tf.cast(num_chars, tf.int32), 0)
        num_steps = tf.maximum(tf.reduce_max(num_chars), 0)
        sampler = get_sampler("random", temperature=temperature, top_k=top_k, seed=seed)
        tokens = self.generate_ids(ids.to_tensor(PADDING_ID), ids.row_lengths(), num_steps,
                                   sampler)
        kept = tf.RaggedTensor.from_tensor(tokens, lengths=tf.minimum(num_chars, num_steps))
        continuation = tf.strings.reduce_join(
            self.vocabulary.inverse(tf.cast(kept, tf.int64)), axis=-1
        )
        return prompt + continuation

    def generate(self, prompt, num_chars, temperature=1.0, seed=0, top_k=None):
        """Generates text from a prompt (or a list of prompts), from Python.

        The work runs as one compiled graph (`generate_strings` in a `tf.function`, traced
        once per `top_k`).

        Args:
            prompt: a string, or a list of strings.
            num_chars: characters to add to each prompt.
            temperature: 0 is greedy; see `RandomSampler`.
            seed: the sampling seed; the same seed gives the same text.
            top_k: optional: sample among the k most probable characters only.

        Returns:
            The prompt followed by its continuation (a list for a list of prompts).
        """
        prompts = [prompt] if isinstance(prompt, str) else list(prompt)
        batch = len(prompts)
        if top_k not in self._compiled:

            def generate_strings(prompt, num_chars, temperature, seed):
                return self.generate_strings(prompt, num_chars, temperature, seed, top_k=top_k)

            self._compiled[top_k] = tf.function(
                generate_strings, input_signature=generate_signature(), autograph=False
            )
        texts = self._compiled[top_k](
            tf.constant(prompts, tf.string),
            tf.fill([batch], int(num_chars)),
            tf.fill([batch], float(temperature)),
            tf.fill([batch], int(seed)),
        )
        texts = [t.decode("utf-8") for t in texts.numpy()]
        return texts[0] if isinstance(prompt, str) else texts


def generate_signature():
    """The input signature of the SavedModel's `generate`."""
    return [
        tf.TensorSpec([None], tf.string, name="prompt"),
        tf.TensorSpec([None], tf.int32, name="num_chars"),
        tf.TensorSpec([None], tf.float32, name="temperature"),
        tf.TensorSpec([None], tf.int32, name="seed"),
    ]


def make_generator(config, model, vocabulary):
    """A `CharGenerator` whose step model carries the weights of the trained `model`."""
    step_model = build_step_model(config, vocabulary.size)
    copy_weights(model, step_model)
    return CharGenerator(step_model, vocabulary, state_names(config))


class ResetStatesAtEpochStart(keras.callbacks.Callback):
    """Zeroes a stateful model's states when an epoch starts and before each validation.

    Each epoch then reads every stream from its beginning, and validation streams do not
    inherit the state of the training streams.
    """

    def on_epoch_begin(self, epoch, logs=None):
        reset_states(self.model)

    def on_test_begin(self, logs=None):
        reset_states(self.model)


class StopAfterMinutes(keras.callbacks.Callback):
    """Stops training at the end of the first epoch that ends past `minutes` of training.

    A time box for CPU runs: the last epoch is always finished, so the run keeps whole epochs.
    """

    def __init__(self, minutes):
        super().__init__()
        self.seconds = minutes * 60
        self.stopped_epoch = None

    def on_train_begin(self, logs=None):
        self.started = time.perf_counter()

    def on_epoch_end(self, epoch, logs=None):
        last = epoch + 1 >= self.params["epochs"]
        if not last and time.perf_counter() - self.started >= self.seconds:
            self.model.stop_training = True
            self.stopped_epoch = epoch + 1


# ---------------------------------------------------------------------------------------------
# Scoring


def loss_figures(nats):
    """Nats per char, bits per char and perplexity of a mean cross-entropy in nats."""
    return {
        "nats_per_char": float(nats),
        "bits_per_char": float(nats / math.log(2)),
        "perplexity": float(math.exp(nats)),
    }


def char_counts(train_ids, vocabulary):
    """`{character: count}` of the training text, in vocabulary order (saved in metrics.json)."""
    counts = np.bincount(train_ids, minlength=vocabulary.size)[2:]
    return {char: int(count) for char, count in zip(vocabulary.chars, counts)}


def unigram_nats(counts, ids):
    """Cross-entropy of `ids` under the training text's character frequencies `counts` (from
    `char_counts`), add-one smoothed over the characters and [UNK]: the loss of a model that
    ignores context."""
    smoothed = np.array([0, *counts.values()], dtype=np.float64) + 1.0  # [UNK], characters
    log_probabilities = np.log(smoothed / smoothed.sum())
    return float(-log_probabilities[np.asarray(ids) - 1].mean())


def score_text(config, model, ids, source=None):
    """The model's mean cross-entropy on `ids` (nats per char), read as in training.

    Stateless: windows of `window` characters, each from a zero state. Stateful: `batch_size`
    contiguous streams with the state carried across windows (reset before and after).

    Returns:
        `(figures, chars scored, how the text was read)`.
    """
    dataset = make_dataset(config, ids, training=False, source=source)
    if config.stateful:
        reset_states(model)
    nats = model.evaluate(dataset, verbose=0, return_dict=True)["loss"]
    if config.stateful:
        reset_states(model)
        reading = (
            f"{config.batch_size} contiguous streams, state carried across windows of "
            f"{config.window}"
        )
    else:
        reading = f"windows of {config.window} characters, each from a zero state"
    return loss_figures(nats), scored_chars(config, len(ids)), reading


def default_sample_prompt(val_text):
    """The first line of the validation text, at most 40 characters (never empty)."""
    return val_text.split("\n", 1)[0][:40] or EMPTY_PROMPT


def make_samples(generator, prompt, num_chars, seed):
    """One sample per temperature of `SAMPLE_TEMPERATURES`."""
    return [
        {"temperature": t, "text": generator.generate(prompt, num_chars, temperature=t, seed=seed)}
        for t in SAMPLE_TEMPERATURES
    ]


def metrics_table(metrics):
    rows = [
        [name, figures["nats_per_char"], figures["bits_per_char"], figures["perplexity"]]
        for name, figures in (
            ("model", metrics["model"]),
            ("unigram baseline", metrics["unigram_baseline"]),
        )
    ]
    return format_table(["validation", "nats/char", "bits/char", "perplexity"], rows)


def samples_text(samples):
    return "\n".join(
        f"--- temperature {sample['temperature']}:\n{sample['text']}" for sample in samples
    )


# ---------------------------------------------------------------------------------------------
# Export


def export_saved_model(generator, path):
    """Writes the SavedModel with the `generate` and `serving_default` signatures.

    See the module docstring for the signatures. Written to a temporary directory, then
    renamed.
    """
    path = Path(path)
    def serve(char_ids, *states):
        logits, states = generator.step(char_ids, list(states))
        return {"logits": logits, **dict(zip(generator.state_names, states))}

    def generate(prompt, num_chars, temperature, seed):
        return {"text": generator.generate_strings(prompt, num_chars, temperature, seed)}

    archive = keras.export.ExportArchive()
    archive.track(generator.step_model)
    archive.track(generator.vocabulary.lookup)
    archive.track(generator.vocabulary.inverse)
    archive.add_endpoint(
        "serving_default",
        serve,
        input_signature=[
            tf.TensorSpec([None, None], tf.int32, name="char_ids"),
            *(
                tf.TensorSpec([None, size], tf.float32, name=name)
                for name, size in zip(generator.state_names, generator.state_sizes)
            ),
        ],
    )
    archive.add_endpoint("generate", generate, input_signature=generate_signature())
    return write_export_archive(archive, path)


# ---------------------------------------------------------------------------------------------
# Actions


def train(config, overwrite=False, callbacks=()):
    """Trains a char-RNN and writes its run directory.

    Args:
        config: a `CharRNNConfig`.
        overwrite: replace a finished run at `config.out`.
        callbacks: extra Keras callbacks for `fit` (after the run directory's own).

    Returns:
        An `ActionResult` with the run directory and the validation metrics.

    Raises:
        DataError: unreadable text, or text too short for the windows.
        UsageError: a refused `--out`.
    """
    config, distribution, run = begin_run(config, TASK_NAME, overwrite, data_paths=("data",))
    corpus = prepare_corpus(config)
    global_batch = distribution.global_batch_size(config.batch_size)
    train_data = make_dataset(config, corpus.train_ids, training=True, source=corpus.source,
                              batch_size=global_batch)
    val_data = make_dataset(config, corpus.val_ids, training=False,
                            source=f"{corpus.source} (validation part)", batch_size=global_batch)
    start_run(run, config)
    run.write_text("vocabulary.txt", corpus.vocabulary.to_text())

    with distribution.scope():
        model = build_model(config, corpus.vocabulary.size)
    fit_callbacks = training_callbacks(run) + [
        keras.callbacks.EarlyStopping(
            monitor="val_loss", patience=config.patience, restore_best_weights=True
        ),
    ]
    if config.stateful:
        fit_callbacks.append(ResetStatesAtEpochStart())
    time_box = StopAfterMinutes(config.max_minutes) if config.max_minutes else None
    if time_box:
        fit_callbacks.append(time_box)
    fit_callbacks.extend(callbacks)
    started = time.perf_counter()
    model.fit(
        distribution.shard(train_data),
        validation_data=distribution.shard(val_data),
        epochs=config.epochs,
        callbacks=fit_callbacks,
        shuffle=False,  # the stateless dataset shuffles itself with the run's seed
        verbose=progress_verbosity(),
    )
    train_seconds = time.perf_counter() - started
    history = fit_callbacks[0].history
    model = distribution.local_model(model, run.path("model.keras"))

    figures, chars, reading = score_text(config, model, corpus.val_ids)
    counts = char_counts(corpus.train_ids, corpus.vocabulary)
    generator = make_generator(config, model, corpus.vocabulary)
    prompt = config.sample_prompt or default_sample_prompt(corpus.val_text)
    samples = make_samples(generator, prompt, config.sample_chars, config.seed)
    metrics = {
        "split": "validation",
        "model": figures,
        "unigram_baseline": loss_figures(unigram_nats(counts, corpus.val_ids)),
        "chars_scored": chars,
        "reading": reading,
        "samples": samples,
        "sample_prompt": prompt,
        "sample_seed": config.seed,
        "epochs_run": len(history),
        "best_epoch": (
            int(np.argmin([row["val_loss"] for row in history])) + 1 if history else None
        ),
        "train_seconds_this_session": round(train_seconds, 2),
        "stopped_by_max_minutes": bool(time_box and time_box.stopped_epoch),
        "distribution": distribution.report(config.batch_size),
        "data": {
            "source": corpus.source,
            "chars": corpus.total_chars,
            "train_chars": len(corpus.train_ids),
            "unused_train_chars": corpus.unused_train_chars,
            "val_chars": len(corpus.val_ids),
            "vocabulary_size": corpus.vocabulary.size,
            "unseen_val_chars": corpus.unseen,
            "train_char_counts": counts,
        },
    }
    run.write_json("metrics.json", metrics)
    save_history_plot(history, run.path("plots", "loss.png"), title=f"{config.model}: loss")
    export_saved_model(generator, run.path("saved_model"))
    final = run.finish()

    notes = []
    if distribution.kind != "none":
        notes.append(
            f"{distribution.kind}: {distribution.replicas} replicas, global batch "
            f"{global_batch} = {config.batch_size} per replica"
        )
    if time_box and time_box.stopped_epoch:
        notes.append(
            f"--max-minutes {config.max_minutes}: stopped after epoch {time_box.stopped_epoch}"
        )
    if corpus.unused_train_chars:
        notes.append(
            f"--max-train-chars: {corpus.unused_train_chars} training characters left out"
        )
    if corpus.unseen:
        notes.append(
            f"validation characters missing from the training text, read as [UNK]: "
            f"{describe_chars(corpus.unseen)}"
        )
    mode = "stateful" if config.stateful else "stateless"
    summary = "\n".join(
        [
            f"{TASK_NAME}: {corpus.source}, {mode} {config.model}, validation part: {chars} "
            f"characters read as {reading}",
            metrics_table(metrics),
            *notes,
            f"samples (prompt {prompt!r}, seed {config.seed}):",
            samples_text(samples),
            f"run directory: {final}",
        ]
    )
    return ActionResult(summary=summary, path=final, metrics=metrics)


def load_run(run):
    """`(record, config, vocabulary, model)` of the finished run directory `run`."""
    record = open_run(run, TASK_NAME)
    config = CharRNNConfig(**record.settings)
    vocabulary = CharVocabulary.from_file(record.file("vocabulary.txt"))
    model = keras.saving.load_model(record.file("model.keras"))
    return record, config, vocabulary, model


def evaluate(run, data=None, output=None):
    """Scores a trained run on its validation part, or on the whole of another text.

    Args:
        run: the run directory.
        data: a text file or folder; None re-scores the run's validation part (the figures of
            metrics.json). Unseen characters follow the run's `unseen_chars` policy.
        output: a JSON file to write the figures to (optional).

    Returns:
        An `ActionResult` with the figures.
    """
    record, config, vocabulary, model = load_run(run)
    counts = read_json(record.file("metrics.json"))["data"]["train_char_counts"]
    if data is None:
        corpus = prepare_corpus(config, vocabulary=vocabulary)
        ids, unseen = corpus.val_ids, corpus.unseen
        source, split = corpus.source, "validation"
    else:
        text, source = load_corpus(data)
        ids, unseen = vocabulary.encode(text, policy=config.unseen_chars, source=source)
        split = "whole text"
    figures, chars, reading = score_text(config, model, ids, source=source)
    metrics = {
        "split": split,
        "source": source,
        "model": figures,
        "unigram_baseline": loss_figures(unigram_nats(counts, ids)),
        "chars_scored": chars,
        "reading": reading,
        "unseen_chars": unseen,
    }
    path = None
    if output:
        path = Path(output)
        write_json_atomic(path, metrics)
    summary = "\n".join(
        [
            f"{TASK_NAME}: {source}, {split}: {chars} characters read as {reading}",
            metrics_table(metrics),
        ]
        + ([f"unseen characters read as [UNK]: {describe_chars(unseen)}"] if unseen else [])
        + ([f"figures written to {path}"] if path else [])
    )
    return ActionResult(summary=summary, path=path, metrics=metrics)


def predict(run, data=None, output=None, prompt=None, num_chars=300, temperature=1.0,
            top_k=None, seed=0):
    """Generates text: the prompt and its continuation (`seqlab charrnn generate`).

    Args:
        run: the run directory.
        data: a text file holding the prompt (instead of `prompt`).
        output: a file to write the text to (optional).
        prompt: the prompt; without it and `data`, the run's sample prompt.
        num_chars: characters to generate.
        temperature: sampling temperature; 0 is greedy (argmax).
        top_k: optional: sample among the k most probable characters only.
        seed: the sampling seed (same seed, same text).

    Returns:
        An `ActionResult` whose summary is the text.

    Raises:
        UsageError: both a prompt and a prompt file, or a bad setting.
    """
    if prompt is not None and data is not None:
        raise UsageError("give the prompt either with --prompt or in a --data file, not both")
    if num_chars < 0:
        raise UsageError(f"num_chars must be at least 0. Received: num_chars={num_chars}")
    if temperature < 0:
        raise UsageError(
            f"temperature must be 0 (greedy) or positive. Received: temperature={temperature}"
        )
    if top_k is not None and top_k < 1:
        raise UsageError(f"top_k must be at least 1. Received: top_k={top_k}")
    record, config, vocabulary, model = load_run(run)
    if data is not None:
        prompt, _ = read_text(data)
    elif prompt is None:
        prompt = read_json(record.file("metrics.json"))["sample_prompt"]
    _, unseen = vocabulary.encode(prompt)
    generator = make_generator(config, model, vocabulary)
    text = generator.generate(prompt, num_chars, temperature=temperature, seed=seed, top_k=top_k)
    lines = [text]
    if unseen:
        lines.append(f"(prompt characters missing from the vocabulary, read as [UNK]: "
                     f"{describe_chars(unseen)})")
    path = None
    if output:
        path = Path(output)
        write_text_atomic(path, text)
        lines.append(f"(written to {path})")
    return ActionResult(summary="\n".join(lines), path=path)


def export(run, out=None):
    """Writes the run's SavedModel again, to `out` (default: `<run>/saved_model`)."""
    record, config, vocabulary, model = load_run(run)
    generator = make_generator(config, model, vocabulary)
    path = export_saved_model(generator, Path(out) if out else record.file("saved_model"))
    states = ", ".join(f"{n}: float32[None, {config.units}]" for n in generator.state_names)
    summary = (
        f"SavedModel written to {path}\n"
        "generate(prompt: string[None], num_chars: int32[None], temperature: float32[None], "
        "seed: int32[None]) -> {'text': string[None]}\n"
        f"serving_default(char_ids: int32[None, None], {states}) -> "
        f"{{'logits': float32[None, None, {vocabulary.size}], <the new states>}}"
    )
    return ActionResult(summary=summary, path=path)


TASK = Task(
    name=TASK_NAME,
    description=(
        "Train a character-level language model (embedding, stacked GRU or LSTM from seqlab's "
        "layers, dense logits) stateless on shuffled windows or --stateful on contiguous "
        "streams, and generate text from a prompt with temperature and top-k sampling. Scored "
        "in nats and bits per character on the last --val-fraction of the text. Without --data "
        "it trains on the source code of the standard library's email package."
    ),
    examples={
        "train": [
            "seqlab charrnn train",
            "seqlab charrnn train --data input.txt --epochs 20 --out runs/shakespeare",
            "seqlab charrnn train --data books/ --stateful --batch-size 32 --model lstm "
            "--layers 2 --units 512",
        ],
        "evaluate": [
            "seqlab charrnn evaluate --run runs/shakespeare",
            "seqlab charrnn evaluate --run runs/shakespeare --data other.txt --output eval.json",
        ],
        "predict": [
            'seqlab charrnn generate --run runs/shakespeare --prompt "ROMEO:" --num-chars 300 '
            "--temperature 0.8",
            "seqlab charrnn predict --run runs/shakespeare --data prompt.txt --top-k 5 --seed 7 "
            "--output sample.txt",
        ],
        "export": [
            "seqlab charrnn export --run runs/shakespeare --out serving/shakespeare/1",
        ],
    },
    config_class=CharRNNConfig,
    train=train,
    evaluate=evaluate,
    predict=predict,
    export=export,
    extra_arguments={
        "predict": [
            (["--prompt"], {"help": "the text to continue (default: the run's sample prompt)"}),
            (["--num-chars"], {"type": int, "metavar": "N",
                               "help": "characters to generate (default: 300)"}),
            (["--temperature"], {"type": float, "metavar": "T",
                                 "help": "sampling temperature; 0 is greedy (default: 1.0)"}),
            (["--top-k"], {"type": int, "metavar": "K",
                           "help": "sample among the K most probable characters only"}),
            (["--seed"], {"type": int,
                          "help": "sampling seed: the same seed gives the same text (default: 0)"}),
        ],
    },
    aliases={"predict": ["generate"]},
)
