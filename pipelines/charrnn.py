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
one character per step with explicit states, the sampler's loop one `tf.while_loop`);
`seqlab.models.char_lm.TextGenerator` maps strings to ids and back with the run's vocabulary.

The run directory holds, besides the common files (pipelines/lifecycle.py): `vocabulary.txt`
(one character per line as a JSON string; line n is id n + 1), `plots/loss.png`, and
`saved_model/` with two signatures:

- `generate(prompt: string[None], num_chars: int32[None], temperature: float32[None],
  seed: int32[None]) -> {"text": string[None]}`: prompt and continuation, the whole sampling
  loop in the graph (one value of each input per prompt; temperature 0 is greedy). Checked in
  the graph: vectors of one length, `num_chars` in `[0, MAX_NUM_CHARS]`, `temperature` finite
  and >= 0; an empty batch gives an empty batch.
- `serving_default(char_ids: int32[None, None], <layer>_h: float32[None, units] (and <layer>_c
  for LSTM) per layer) -> {"logits": float32[None, None, vocab], <the new states>}`: one step
  for servers that keep the state between requests; id 0 is padding (state carried over).
  Checked in the graph: ids in `[0, vocabulary size)`, states `[batch of char_ids, units]`.
"""

import dataclasses
from pathlib import Path

import keras
import tensorflow as tf

from seqlab.data.text import (
    PADDING_ID,
    UNKNOWN_ID,
    CharVocabulary,
    TextCorpus,
    describe_chars,
    describe_gutenberg_left_out,
    load_corpus,
    make_dataset,
    prepare_corpus,
    read_text,
)
from seqlab.models.char_lm import (
    EMPTY_PROMPT, GENERATE_SIGNATURE, MAX_PROMPT_CHARS, CharLanguageModel,
    ResetStatesAtEpochStart, TextGenerator, suppress_ids,
)
from seqlab.models.serving import dynamic_shape
from seqlab.pipelines.common import (
    ActionResult, UsageError, write_export_archive, write_text_atomic,
)
from seqlab.pipelines.configs.charrnn import CARD, TASK_NAME, CharRNNConfig, GenerateOptions
from seqlab.pipelines.lifecycle import Pipeline, evaluation_result
from seqlab.pipelines.metrics import char_counts, char_loss_table, score_char_model
from seqlab.pipelines.settings import make_config, recurrent_parameters

SAMPLE_TEMPERATURES = (0.5, 1.0, 1.5)


# ---------------------------------------------------------------------------------------------
# Data (read, split and batched by data/text.py)


@dataclasses.dataclass
class Prepared:
    """What `train`'s hooks share: the corpus (`data.text.prepare_corpus`) and its `(train,
    validation)` datasets."""

    corpus: TextCorpus
    datasets: tuple


def read_corpus(config, vocabulary=None, gutenberg=True):
    """The config's text, split and encoded (`data.text.prepare_corpus`, with `gutenberg`)."""
    return prepare_corpus(config.data, config.val_fraction, config.max_train_chars,
                          config.unseen_chars, vocabulary=vocabulary, gutenberg=gutenberg)


# ---------------------------------------------------------------------------------------------
# Model, generation and export


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


def sample_prompt(given, val_text, mid_line=False):
    """The prompt of the run's samples: `given` (`--sample-prompt`), else the validation text's
    first line that holds more than spaces, at most 40 characters; an empty one is read as
    `EMPTY_PROMPT`. `mid_line`: the validation text starts inside a line (the split falls at
    a character, not a line end), whose rest is no line: the next one is taken, where there is
    one ('hat could the belly answer?' was the prompt after the "W" of "What")."""
    if given is None:
        lines = val_text.split("\n")
        if mid_line and len(lines) > 1:
            lines = lines[1:]
        given = next((line for line in lines if line.strip()), "")[:40]
    return given or EMPTY_PROMPT


def text_generator(model, vocabulary):
    """The `TextGenerator` of a model and its `CharVocabulary` (padding and [UNK] never
    generated)."""
    return TextGenerator(model, vocabulary.lookup, vocabulary.inverse,
                         suppressed_ids=(PADDING_ID, UNKNOWN_ID))


def export_saved_model(generator, path):
    """Writes the SavedModel of a `TextGenerator` with the `generate` and `serving_default`
    signatures (see the module docstring), atomically."""
    model = generator.model

    size = model.vocabulary_size

    def serve(char_ids, *states):
        # The loaded signature checks no shapes itself: states of another batch would broadcast.
        ids_shape = dynamic_shape(char_ids)
        ranks = [tf.debugging.assert_equal(
            tf.size(ids_shape), 2, message="char_ids must be int32[batch, time] (rank 2)")]
        ranks += [
            tf.debugging.assert_equal(
                tf.size(dynamic_shape(state)), 2,
                message=f"{name} must be float32[batch of char_ids, {model.units}] (rank 2)")
            for name, state in zip(model.state_names, states)
        ]
        with tf.control_dependencies(ranks):
            checks = [
                tf.debugging.assert_greater_equal(
                    char_ids, 0, message=f"char_ids must lie in [0, vocabulary size {size})"),
                tf.debugging.assert_less(
                    char_ids, size, message=f"char_ids must lie in [0, vocabulary size {size})"),
                # One request's work is bounded as generate's prompts are.
                tf.debugging.assert_less_equal(
                    tf.cast(ids_shape[0], tf.int64) * tf.cast(ids_shape[1], tf.int64),
                    tf.constant(MAX_PROMPT_CHARS, tf.int64),
                    message=f"char_ids must hold at most MAX_PROMPT_CHARS={MAX_PROMPT_CHARS} "
                            "ids (batch x time) per request; send larger batches in parts"),
            ]
            for name, state in zip(model.state_names, states):
                checks.append(tf.debugging.assert_equal(
                    dynamic_shape(state), tf.stack([ids_shape[0], model.units]),
                    message=f"{name} must be float32[batch of char_ids, {model.units}]"))
                # A server feeds the states back: one NaN would make every later answer NaN.
                checks.append(tf.debugging.assert_all_finite(
                    state, message=f"{name} must hold finite values only"))
        with tf.control_dependencies(checks):
            char_ids = tf.identity(char_ids)
        # No step at all ([batch, 0]) is read as one step of padding, which keeps the states:
        # the recurrent loop cannot run zero steps. Its logits are sliced off again. The shape
        # is the checked ids' (`ids_shape[1]` ran beside the checks: char_ids of rank 1 failed
        # with "slice index 1 of dimension 0 out of bounds", naming no argument).
        steps = dynamic_shape(char_ids)[1]
        padded = tf.pad(char_ids, [[0, 0], [0, tf.cast(tf.equal(steps, 0), tf.int32)]])
        logits, states = model.call_with_states(padded, list(states))
        logits = logits[:, :steps]
        return {"logits": suppress_ids(logits, generator.suppressed_ids),
                **dict(zip(model.state_names, states))}

    def generate(prompt, num_chars, temperature, seed):
        return {"text": generator.serve_strings(prompt, num_chars, temperature, seed)}

    archive = keras.export.ExportArchive()
    archive.track(model)
    archive.track(generator.lookup)
    archive.track(generator.inverse)
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


# ---------------------------------------------------------------------------------------------
# The task


class CharRNNPipeline(Pipeline):
    """Char-RNN language modelling on the shared run lifecycle (pipelines/lifecycle.py)."""

    name = CARD.name
    config_class = CharRNNConfig
    model_class = CharLanguageModel
    model_files = vocabulary_files = ("vocabulary.txt",)
    description = CARD.description
    examples = CARD.examples
    predict_options = GenerateOptions
    aliases = CARD.aliases

    def prepare(self, config, distribution):
        corpus = read_corpus(config)
        batch_size = distribution.global_batch_size(config.batch_size)
        # Made here, not in `datasets`: a text too short for one batch fails before the run
        # directory is started.
        datasets = tuple(
            make_dataset(ids, config.window, batch_size, stateful=config.stateful,
                         shuffle=training, seed=config.seed, source=source)
            for ids, source, training in (
                (corpus.train_ids, f"{corpus.source} (training part)", True),
                (corpus.val_ids, f"{corpus.source} (validation part)", False),
            )
        )
        return Prepared(corpus, datasets)

    def least_parameters(self, config):
        return (recurrent_parameters(config.model, max(config.embedding_dim, 1), config.units,
                                     config.layers),
                f"--model {config.model} --units {config.units} --layers {config.layers}")

    def build_model(self, config, prepared):
        return build_model(config, prepared.corpus.vocabulary.size)

    def datasets(self, config, prepared, batch_size):
        return prepared.datasets

    def callbacks(self, config, prepared, monitor):
        callbacks = super().callbacks(config, prepared, monitor)
        if config.stateful:
            callbacks.append(ResetStatesAtEpochStart())
        return callbacks

    def score(self, config, model, prepared):
        corpus = prepared.corpus
        counts = char_counts(corpus.train_ids, corpus.vocabulary)
        generator = text_generator(model, corpus.vocabulary)
        prompt = sample_prompt(config.sample_prompt, corpus.val_text,
                               mid_line=not corpus.val_starts_a_line)
        samples = [
            {"temperature": t,
             "text": generator.generate(prompt, config.sample_chars, temperature=t,
                                        seed=config.seed)}
            for t in SAMPLE_TEMPERATURES
        ]
        return {
            "split": "validation",
            **score_char_model(model, corpus.val_ids, counts, config.window, config.batch_size,
                               config.stateful),
            "samples": samples,
            "sample_prompt": prompt,
            "sample_seed": config.seed,
            "data": {**corpus.report(), "train_char_counts": counts},
        }

    def artifacts(self, config, prepared):
        return {"vocabulary": prepared.corpus.vocabulary}

    def write_artifacts(self, run, artifacts):
        run.write_text("vocabulary.txt", artifacts["vocabulary"].to_text())

    def read_artifacts(self, path, config):
        return {"vocabulary": CharVocabulary.from_file(path / "vocabulary.txt")}

    def model_for_run(self, config, artifacts):
        return build_model(config, artifacts["vocabulary"].size)

    def export_model(self, model, config, artifacts, path):
        vocabulary = artifacts["vocabulary"]
        export_saved_model(text_generator(model, vocabulary), path)
        states = ", ".join(f"{name}: float32[None, {config.units}]" for name in model.state_names)
        return (
            "generate(prompt: string[None], num_chars: int32[None], temperature: float32[None], "
            "seed: int32[None]) -> {'text': string[None]}\n"
            f"serving_default(char_ids: int32[None, None], {states}) -> "
            f"{{'logits': float32[None, None, {vocabulary.size}], <the new states>}}"
        )

    def summary_lines(self, config, prepared, metrics):
        # A stop by --max-minutes is said in the lifecycle's `training:` line.
        notes, corpus = [], prepared.corpus
        if corpus.unused_train_chars:
            notes.append(
                f"--max-train-chars: {corpus.unused_train_chars} training characters left out"
            )
        if corpus.unseen:
            notes.append(f"validation characters missing from the training text, read as "
                         f"[UNK]: {describe_chars(corpus.unseen)}")
        if corpus.gutenberg_left_out:
            notes.append(describe_gutenberg_left_out(corpus.gutenberg_left_out))
        mode = "stateful" if config.stateful else "stateless"
        return [
            f"{TASK_NAME}: {corpus.source}, {mode} {config.model}, validation part: "
            f"{metrics['chars_scored']} characters read as {metrics['reading']}",
            char_loss_table(metrics),
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
        framed = {}  # the Project Gutenberg frames left out of another text
        if data is None:
            # Split as train split it: a run whose train left no Project Gutenberg frame out
            # (none in its text, or trained before they were left out, whose validation part
            # ended with the license) is read whole.
            data_figures = loaded.metrics.get("data")
            corpus = read_corpus(config, vocabulary=vocabulary, gutenberg=isinstance(
                data_figures, dict) and "gutenberg_left_out" in data_figures)
            ids, unseen = corpus.val_ids, corpus.unseen
            source, split = corpus.source, "validation"
        else:
            text, source = load_corpus(data, left_out=framed)
            ids, unseen = vocabulary.encode(text, policy=config.unseen_chars, source=source)
            split = "whole text"
        model.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        counts = loaded.figure(
            "data", "train_char_counts", kind=dict,
            check=lambda counts: all(isinstance(n, int) and not isinstance(n, bool) and n >= 0
                                     for n in counts.values()),
            expected="an object of character counts")
        metrics = {"split": split, "source": source,
                   **score_char_model(model, ids, counts, config.window, config.batch_size,
                                      config.stateful, source=source),
                   "unseen_chars": unseen,
                   **({"gutenberg_left_out": {str(file): count for file, count in framed.items()}}
                      if framed else {})}
        summary = [
            f"{TASK_NAME}: {source}, {split}: {metrics['chars_scored']} characters read as "
            f"{metrics['reading']}",
            char_loss_table(metrics, split),
            *([f"unseen characters read as [UNK]: {describe_chars(unseen)}"] if unseen else []),
            *([describe_gutenberg_left_out(framed)] if framed else []),
        ]
        return evaluation_result(summary, metrics, output)

    def predict(self, run, data=None, output=None, **options):
        """Generates text: the prompt and its continuation (`seqlab charrnn generate`).

        Args:
            run: the run directory.
            data: a text file holding the prompt (instead of `prompt`).
            output: a file to write the text to (optional).
            **options: the fields of `GenerateOptions` (prompt, num_chars, temperature, top_k,
                seed).

        Raises:
            UsageError: both a prompt and a prompt file, or a bad setting.
        """
        options = make_config(GenerateOptions, flag_values=options)
        prompt = options.prompt
        if prompt is not None and data is not None:
            raise UsageError("give the prompt either with --prompt or in a --data file, not both")
        if data is not None:
            prompt, _ = read_text(data)
        if prompt is not None:
            check_prompt_length(prompt, "--prompt" if data is None else str(data))
        loaded = self.load_run(run)
        vocabulary = loaded.artifacts["vocabulary"]
        if prompt is None:
            prompt = loaded.figure("sample_prompt", kind=str)
        _, unseen = vocabulary.encode(prompt)
        text = text_generator(loaded.model, vocabulary).generate(
            prompt, options.num_chars, temperature=options.temperature, seed=options.seed,
            top_k=options.top_k,
        )
        lines = [text]
        if unseen:
            lines.append(f"(prompt characters missing from the vocabulary, read as [UNK]: "
                         f"{describe_chars(unseen)})")
        if output:
            write_text_atomic(Path(output), text)
            lines.append(f"(written to {output})")
        return ActionResult(summary="\n".join(lines), path=output and Path(output))


def check_prompt_length(prompt, source):
    """The network reads a prompt one character per step before it samples (a million
    characters took about 50 s and 1.6 GB on 2 cores): as the SavedModel's `generate`, at most
    `MAX_PROMPT_CHARS`.

    Raises:
        UsageError: a longer prompt, naming `source` and its length.
    """
    if len(prompt) > MAX_PROMPT_CHARS:
        raise UsageError(
            f"{source}: the prompt has {len(prompt):,} characters; at most "
            f"MAX_PROMPT_CHARS={MAX_PROMPT_CHARS:,} are read, one network step each (give the "
            f"end of the text: the characters just before where generation should go on)")


PIPELINE = CharRNNPipeline()
TASK = PIPELINE.task()
# The actions as functions, for use from Python: `train(CharRNNConfig(...))`.
train, evaluate, predict, export = TASK.train, TASK.evaluate, TASK.predict, TASK.export
