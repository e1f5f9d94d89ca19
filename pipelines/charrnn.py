"""Char-RNN text generation: a stacked GRU or LSTM that predicts the next character.

`train` reads a UTF-8 text file or folder (or, without `--data`, the source code of the
standard library's `email` package, which every Python installation has), splits it 90/10 in
text order, builds the character vocabulary on the training part and fits a
`seqlab.models.CharLanguageModel` (embedding -> stacked GRU/LSTM -> dense logits), either
stateless (shuffled windows, zero state per window) or `--stateful` (contiguous streams, the
state carried from batch to batch and reset at the start of every epoch). It reports the
validation loss in nats and bits per character and the perplexity, beside a unigram baseline,
and samples at temperatures 0.5, 1.0 and 1.5.

Generation never re-feeds the text (`CharLanguageModel.generate`: the prompt read once, then
one character per step with explicit states, the sampler's loop one `tf.while_loop`); this
module maps strings to ids and back (`TextGenerator`).

The run directory holds, besides the common files (pipelines/lifecycle.py): `vocabulary.txt`
(one character per line as a JSON string; line n is id n + 1), `plots/loss.png`, and
`saved_model/` with two signatures:

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
from seqlab.layers import reset_states
from seqlab.models.char_lm import (
    RECURRENT_LAYERS, CharLanguageModel, ResetStatesAtEpochStart, suppress_ids,
)
from seqlab.models.samplers import get_sampler
from seqlab.pipelines.common import (
    ActionResult, TrainConfig, UsageError, check_at_least, check_positive, check_rate,
    format_table, option, write_export_archive, write_text_atomic,
)
from seqlab.pipelines.lifecycle import Pipeline, write_figures

TASK_NAME = "charrnn"
SAMPLE_TEMPERATURES = (0.5, 1.0, 1.5)
# Padding and [UNK] are never generated.
NEVER_GENERATED = (PADDING_ID, UNKNOWN_ID)
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
    model: str = option("gru", "recurrent layer kind", tuple(RECURRENT_LAYERS))
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
        check_at_least(self, 1, "window", "units", "layers", "patience")
        check_at_least(self, 0, "embedding_dim", "sample_chars")
        check_at_least(self, 2, "max_train_chars")
        check_rate(self, "dropout", "val_fraction")
        check_positive(self, "val_fraction", "max_minutes")
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
    """A run's text, split and encoded, and what `train` adds to it.

    `vocabulary` is the training part's; `val_text` gives the default sample prompt;
    `unused_train_chars` are those `max_train_chars` leaves out; `unseen` counts the
    validation characters read as [UNK]; `datasets` and `time_box` (the `StopAfterMinutes`
    callback or None) are `train`'s.
    """

    source: str
    vocabulary: CharVocabulary
    train_ids: np.ndarray
    val_ids: np.ndarray
    val_text: str
    total_chars: int
    unused_train_chars: int
    unseen: dict
    datasets: tuple = None
    time_box: keras.callbacks.Callback = None


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
# Model and generation


def build_model(config, vocab_size):
    """The compiled, built `CharLanguageModel` of a config.

    Stateful, its batch size is fixed to `config.batch_size`. The loss is the mean cross-entropy
    in nats per character.
    """
    model = CharLanguageModel(
        vocab_size, kind=config.model, units=config.units, layers=config.layers,
        embedding_dim=config.embedding_dim, dropout=config.dropout, stateful=config.stateful,
        batch_size=config.batch_size if config.stateful else None, seed=config.seed,
    )
    model.compile(
        optimizer=keras.optimizers.Adam(config.learning_rate, clipnorm=config.clipnorm),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    model.build()
    return model


# The input signature of the SavedModel's `generate` (and of `TextGenerator.generate`'s graph).
GENERATE_SIGNATURE = [
    tf.TensorSpec([None], tf.string, name="prompt"),
    tf.TensorSpec([None], tf.int32, name="num_chars"),
    tf.TensorSpec([None], tf.float32, name="temperature"),
    tf.TensorSpec([None], tf.int32, name="seed"),
]


class TextGenerator:
    """Text in, text out: a `CharLanguageModel` with the vocabulary of its run.

    >>> TextGenerator(model, vocabulary).generate("ROMEO:", 100, temperature=0.8, seed=1)
    """

    def __init__(self, model, vocabulary):
        self.model, self.vocabulary = model, vocabulary
        self._compiled = {}  # generate_strings as a tf.function, per top_k

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
        ids = tf.cast(self.vocabulary.lookup(tf.strings.unicode_split(read, "UTF-8")), tf.int32)
        num_chars = tf.maximum(tf.cast(num_chars, tf.int32), 0)
        num_steps = tf.maximum(tf.reduce_max(num_chars), 0)
        sampler = get_sampler("random", temperature=temperature, top_k=top_k, seed=seed)
        tokens = self.model.generate(ids, num_steps, sampler, suppressed_ids=NEVER_GENERATED)
        kept = tf.RaggedTensor.from_tensor(tokens, lengths=tf.minimum(num_chars, num_steps))
        continuation = tf.strings.reduce_join(
            self.vocabulary.inverse(tf.cast(kept, tf.int64)), axis=-1
        )
        return prompt + continuation

    def generate(self, prompt, num_chars, temperature=1.0, seed=0, top_k=None):
        """`generate_strings` from Python, as one compiled graph: the prompt (a string or a
        list of them) followed by its continuation (a list for a list of prompts)."""
        prompts = [prompt] if isinstance(prompt, str) else list(prompt)
        if top_k not in self._compiled:
            self._compiled[top_k] = tf.function(
                lambda *inputs: self.generate_strings(*inputs, top_k=top_k),
                input_signature=GENERATE_SIGNATURE, autograph=False,
            )
        batch = len(prompts)
        texts = self._compiled[top_k](
            tf.constant(prompts, tf.string),
            tf.fill([batch], int(num_chars)),
            tf.fill([batch], float(temperature)),
            tf.fill([batch], int(seed)),
        )
        texts = [text.decode("utf-8") for text in texts.numpy()]
        return texts[0] if isinstance(prompt, str) else texts


def export_saved_model(generator, path):
    """Writes the SavedModel with the `generate` and `serving_default` signatures (see the
    module docstring), atomically."""
    model = generator.model

    def serve(char_ids, *states):
        logits, states = model.call_with_states(char_ids, list(states))
        return {"logits": suppress_ids(logits, NEVER_GENERATED),
                **dict(zip(model.state_names, states))}

    def generate(prompt, num_chars, temperature, seed):
        return {"text": generator.generate_strings(prompt, num_chars, temperature, seed)}

    archive = keras.export.ExportArchive()
    archive.track(model)
    archive.track(generator.vocabulary.lookup)
    archive.track(generator.vocabulary.inverse)
    archive.add_endpoint(
        "serving_default",
        serve,
        input_signature=[
            tf.TensorSpec([None, None], tf.int32, name="char_ids"),
            *(tf.TensorSpec([None, model.units], tf.float32, name=name)
              for name in model.state_names),
        ],
    )
    archive.add_endpoint("generate", generate, input_signature=GENERATE_SIGNATURE)
    return write_export_archive(archive, path)


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


def score_text(config, model, ids, counts, source=None):
    """The figures of the model (read as in training) and of the unigram baseline on `ids`.

    Stateless: windows of `window` characters, each from a zero state. Stateful: `batch_size`
    contiguous streams with the state carried across windows (reset before and after).
    """
    dataset = make_dataset(config, ids, training=False, source=source)
    reset_states(model)
    nats = model.evaluate(dataset, verbose=0, return_dict=True)["loss"]
    reset_states(model)
    if config.stateful:
        reading = (f"{config.batch_size} contiguous streams, state carried across windows of "
                   f"{config.window}")
    else:
        reading = f"windows of {config.window} characters, each from a zero state"
    return {
        "model": loss_figures(nats),
        "unigram_baseline": loss_figures(unigram_nats(counts, ids)),
        "chars_scored": scored_chars(config, len(ids)),
        "reading": reading,
    }


def metrics_table(metrics):
    rows = [
        [name, figures["nats_per_char"], figures["bits_per_char"], figures["perplexity"]]
        for name, figures in (
            ("model", metrics["model"]),
            ("unigram baseline", metrics["unigram_baseline"]),
        )
    ]
    return format_table(["validation", "nats/char", "bits/char", "perplexity"], rows)


# ---------------------------------------------------------------------------------------------
# The task


class CharRNNPipeline(Pipeline):
    """Char-RNN language modelling on the shared run lifecycle (pipelines/lifecycle.py)."""

    name = TASK_NAME
    config_class = CharRNNConfig
    model_class = CharLanguageModel
    description = (
        "Train a character-level language model (embedding, stacked GRU or LSTM from seqlab's "
        "layers, dense logits) stateless on shuffled windows or --stateful on contiguous "
        "streams, and generate text from a prompt with temperature and top-k sampling. Scored "
        "in nats and bits per character on the last --val-fraction of the text. Without --data "
        "it trains on the source code of the standard library's email package."
    )
    examples = {
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
        "export": ["seqlab charrnn export --run runs/shakespeare --out serving/shakespeare/1"],
    }
    extra_arguments = {
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
    }
    aliases = {"predict": ["generate"]}

    def prepare(self, config, distribution):
        corpus = prepare_corpus(config)
        batch_size = distribution.global_batch_size(config.batch_size)
        # Made here, not in `datasets`: a text too short for one batch fails before the run
        # directory is started.
        corpus.datasets = (
            make_dataset(config, corpus.train_ids, training=True, source=corpus.source,
                         batch_size=batch_size),
            make_dataset(config, corpus.val_ids, training=False,
                         source=f"{corpus.source} (validation part)", batch_size=batch_size),
        )
        return corpus

    def build_model(self, config, prepared):
        return build_model(config, prepared.vocabulary.size)

    def datasets(self, config, prepared, batch_size):
        return prepared.datasets

    def callbacks(self, config, prepared, monitor):
        callbacks = super().callbacks(config, prepared, monitor)
        if config.stateful:
            callbacks.append(ResetStatesAtEpochStart())
        if config.max_minutes:
            prepared.time_box = StopAfterMinutes(config.max_minutes)
            callbacks.append(prepared.time_box)
        return callbacks

    def score(self, config, model, prepared):
        counts = char_counts(prepared.train_ids, prepared.vocabulary)
        generator = TextGenerator(model, prepared.vocabulary)
        prompt = config.sample_prompt or (prepared.val_text.split("\n", 1)[0][:40]
                                          or EMPTY_PROMPT)
        samples = [
            {"temperature": t,
             "text": generator.generate(prompt, config.sample_chars, temperature=t,
                                        seed=config.seed)}
            for t in SAMPLE_TEMPERATURES
        ]
        time_box = prepared.time_box
        return {
            "split": "validation",
            **score_text(config, model, prepared.val_ids, counts),
            "samples": samples,
            "sample_prompt": prompt,
            "sample_seed": config.seed,
            "stopped_by_max_minutes": bool(time_box and time_box.stopped_epoch),
            "data": {
                "source": prepared.source,
                "chars": prepared.total_chars,
                "train_chars": len(prepared.train_ids),
                "unused_train_chars": prepared.unused_train_chars,
                "val_chars": len(prepared.val_ids),
                "vocabulary_size": prepared.vocabulary.size,
                "unseen_val_chars": prepared.unseen,
                "train_char_counts": counts,
            },
        }

    def artifacts(self, config, prepared):
        return {"vocabulary": prepared.vocabulary}

    def write_artifacts(self, run, artifacts):
        run.write_text("vocabulary.txt", artifacts["vocabulary"].to_text())

    def read_artifacts(self, path, config):
        return {"vocabulary": CharVocabulary.from_file(path / "vocabulary.txt")}

    def model_for_run(self, config, artifacts):
        return build_model(config, artifacts["vocabulary"].size)

    def export_model(self, model, config, artifacts, path):
        vocabulary = artifacts["vocabulary"]
        export_saved_model(TextGenerator(model, vocabulary), path)
        states = ", ".join(f"{name}: float32[None, {config.units}]" for name in model.state_names)
        return (
            "generate(prompt: string[None], num_chars: int32[None], temperature: float32[None], "
            "seed: int32[None]) -> {'text': string[None]}\n"
            f"serving_default(char_ids: int32[None, None], {states}) -> "
            f"{{'logits': float32[None, None, {vocabulary.size}], <the new states>}}"
        )

    def summary_lines(self, config, prepared, metrics):
        notes = []
        time_box = prepared.time_box
        if time_box and time_box.stopped_epoch:
            notes.append(
                f"--max-minutes {config.max_minutes}: stopped after epoch {time_box.stopped_epoch}"
            )
        if prepared.unused_train_chars:
            notes.append(
                f"--max-train-chars: {prepared.unused_train_chars} training characters left out"
            )
        if prepared.unseen:
            notes.append(f"validation characters missing from the training text, read as "
                         f"[UNK]: {describe_chars(prepared.unseen)}")
        mode = "stateful" if config.stateful else "stateless"
        return [
            f"{TASK_NAME}: {prepared.source}, {mode} {config.model}, validation part: "
            f"{metrics['chars_scored']} characters read as {metrics['reading']}",
            metrics_table(metrics),
            *notes,
            f"samples (prompt {metrics['sample_prompt']!r}, seed {config.seed}):",
            *(f"--- temperature {s['temperature']}:\n{s['text']}" for s in metrics["samples"]),
        ]

    def evaluate(self, run, data=None, output=None):
        """Scores a trained run on its validation part, or on the whole of another text.

        Args:
            run: the run directory.
            data: a text file or folder; None re-scores the run's validation part (the figures
                of metrics.json). Unseen characters follow the run's `unseen_chars` policy.
            output: a JSON file to write the figures to (optional).
        """
        loaded = self.load_run(run)
        config, vocabulary, model = loaded.config, loaded.artifacts["vocabulary"], loaded.model
        if data is None:
            corpus = prepare_corpus(config, vocabulary=vocabulary)
            ids, unseen = corpus.val_ids, corpus.unseen
            source, split = corpus.source, "validation"
        else:
            text, source = load_corpus(data)
            ids, unseen = vocabulary.encode(text, policy=config.unseen_chars, source=source)
            split = "whole text"
        model.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        counts = loaded.metrics["data"]["train_char_counts"]
        metrics = {"split": split, "source": source,
                   **score_text(config, model, ids, counts, source=source),
                   "unseen_chars": unseen}
        summary = [
            f"{TASK_NAME}: {source}, {split}: {metrics['chars_scored']} characters read as "
            f"{metrics['reading']}",
            metrics_table(metrics),
            *([f"unseen characters read as [UNK]: {describe_chars(unseen)}"] if unseen else []),
            *write_figures(output, metrics),
        ]
        return ActionResult(summary="\n".join(summary), path=output and Path(output),
                            metrics=metrics)

    def predict(self, run, data=None, output=None, prompt=None, num_chars=300, temperature=1.0,
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
        loaded = self.load_run(run)
        vocabulary = loaded.artifacts["vocabulary"]
        if data is not None:
            prompt, _ = read_text(data)
        elif prompt is None:
            prompt = loaded.metrics["sample_prompt"]
        _, unseen = vocabulary.encode(prompt)
        text = TextGenerator(loaded.model, vocabulary).generate(
            prompt, num_chars, temperature=temperature, seed=seed, top_k=top_k
        )
        lines = [text]
        if unseen:
            lines.append(f"(prompt characters missing from the vocabulary, read as [UNK]: "
                         f"{describe_chars(unseen)})")
        if output:
            write_text_atomic(Path(output), text)
            lines.append(f"(written to {output})")
        return ActionResult(summary="\n".join(lines), path=output and Path(output))


PIPELINE = CharRNNPipeline()
TASK = PIPELINE.task()
# The actions as functions, for use from Python: `train(CharRNNConfig(...))`.
train, evaluate, predict, export = TASK.train, TASK.evaluate, TASK.predict, TASK.export
