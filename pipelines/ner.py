"""Named-entity tagging: CoNLL files in, BIO tags per token out, scored by entity F1.

`train` reads CoNLL files (a `--data` directory with train / dev / test files, explicit files, or
the smoke-test sample shipped in `data/samples/ner_sample.conll`), converts their tags to BIO,
builds word and character vocabularies on the training split, and fits a
`seqlab.models.SequenceTagger`:

    word embedding (+) character encoder (BiLSTM or CNN over each word's characters)
      -> BiLSTM (seqlab's LSTM) -> per-token softmax, or (`--crf`) potentials -> CRF

with padding masked from the embedding on, so that padded positions carry no loss. Test-split
figures are entity-level precision, recall and F1, overall (micro) and per type, from seqeval in
strict IOB2 mode; the conlleval-compatible figures (seqeval's default mode, which reads an I-X
after O as the start of an entity, as conlleval does) are reported beside them.

The run directory holds, besides the common files (pipelines/lifecycle.py): `vocabulary.json`
(words, characters and tags, id = index), `test_predictions.conll` (token, gold tag, predicted
tag: the input of conlleval), `plots/loss.png`, and `saved_model/` with
`serving_default(tokens: string[None, None]) -> {"tags": string[None, None]}` (rows padded with
empty strings; the tag at padding is the empty string; lookups inside the graph).
"""

import dataclasses
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf

from seqlab.data.conll import (
    SAMPLE_PATH,
    SCHEMES,
    Sentence,
    TaggingVocabulary,
    encode_sentences,
    find_split_files,
    looks_like_conll,
    make_tagging_dataset,
    read_conll,
    read_token_lines,
)
from seqlab.data.errors import DataError
from seqlab.layers.char_encoder import CHAR_ENCODERS
from seqlab.models.tagger import SequenceTagger, bio_transition_constraints
from seqlab.pipelines.common import (
    ActionResult,
    TrainConfig,
    UsageError,
    check_at_least,
    check_rate,
    check_split_fractions,
    format_table,
    option,
    read_json,
    write_export_archive,
    write_text_atomic,
)
from seqlab.pipelines.lifecycle import Pipeline, write_figures

TASK_NAME = "ner"
INPUT_FORMATS = ("auto", "conll", "lines")
SPLITS = ("train", "validation", "test")
# Sentences shown on the terminal when predictions go to a file.
_SENTENCES_SHOWN = 5


@dataclasses.dataclass
class NerConfig(TrainConfig):
    """Every setting of a tagging run; the defaults suit the embedded sample and WNUT-17."""

    data: str | None = option(None, "directory of CoNLL files (names with train / valid or "
                              "dev / test), or the training file (default: the smoke-test "
                              "sample shipped with seqlab)")
    validation_data: str | None = option(None, "validation CoNLL file (default: the --data "
                                         "directory's, else --val-fraction of the training "
                                         "sentences)")
    test_data: str | None = option(None, "test CoNLL file (default: the --data directory's, "
                                   "else --test-fraction of the training sentences)")
    epochs: int = option(
        40, "maximum number of epochs (early stopping on validation F1 usually ends sooner)"
    )
    batch_size: int = option(32, "sentences per batch")
    token_column: int = option(0, "column of the tokens (0-based; negative counts from the end)")
    tag_column: int = option(-1, "column of the tags (default: -1, the last)")
    scheme: str = option(
        "auto", "tag scheme of the files, converted to BIO (default: auto, detected)",
        ("auto",) + SCHEMES,
    )
    repair: bool = option(False, "repair invalid tag sequences (an I-X that continues no X "
                          "entity becomes B-X, as conlleval reads it) instead of refusing the file")
    min_count: int = option(2, "minimum count of a training word to get its own id")
    max_word_chars: int = option(20, "characters of each word the character encoder sees")
    word_dim: int = option(100, "word embedding size")
    char_encoder: str = option("lstm", "character encoder: BiLSTM or CNN", CHAR_ENCODERS)
    char_dim: int = option(25, "character embedding size")
    char_units: int = option(25, "character BiLSTM units per direction, or CNN filters")
    char_kernel: int = option(3, "CNN kernel width in characters")
    units: int = option(100, "units per direction of the word BiLSTM")
    dropout: float = option(0.5, "dropout rate before and after the word BiLSTM")
    crf: bool = option(False, "decode with a CRF trained on the sentence log-likelihood "
                       "(default: softmax)")
    crf_constraints: bool = option(True, "with --crf, forbid the transitions that make invalid "
                                   "BIO (O -> I-X, B-X or I-X -> I-Y, a sentence starting with "
                                   "I-X), so every decoded sequence is valid")
    learning_rate: float = option(1e-3, "Adam learning rate")
    clipnorm: float | None = option(5.0, "gradient norm clipping of Adam")
    patience: int = option(
        5, "epochs without a better validation entity F1 or loss before stopping; the weights "
        "of the epoch with the best F1 are restored"
    )
    val_fraction: float = option(0.1, "share of training sentences held out for validation "
                                 "when there is no such file")
    test_fraction: float = option(0.1, "share of training sentences held out for test when "
                                  "there is no such file")

    def __post_init__(self):
        super().__post_init__()
        check_at_least(self, 1, "min_count", "max_word_chars", "word_dim", "char_dim",
                       "char_units", "char_kernel", "units", "patience")
        check_rate(self, "dropout")
        check_split_fractions(self, validation_may_be_zero=False)


# ---------------------------------------------------------------------------------------------
# Data


@dataclasses.dataclass
class TaggingSplits:
    """Train / validation / test sentences (`data.conll.Sentence` lists), per split the file it
    was read from or how it was held out (`sources`), and per file read its description and
    repairs (`files`)."""

    train: list
    validation: list
    test: list
    sources: dict
    files: list


def _read_tagged(config, path):
    return read_conll(path, token_column=config.token_column, tag_column=config.tag_column,
                      scheme=None if config.scheme == "auto" else config.scheme,
                      repair=config.repair)


def split_files(config):
    """`{split: path}` of the files a config names (train always; validation, test if found)."""
    if config.data is None:
        files = {"train": str(SAMPLE_PATH)}
    elif Path(config.data).is_dir():
        files = find_split_files(config.data)
    else:
        files = {"train": config.data}
    if config.validation_data is not None:
        files["validation"] = config.validation_data
    if config.test_data is not None:
        files["test"] = config.test_data
    return files


def load_splits(config):
    """Reads the config's files; splits without a file are held out from the training file.

    The held-out sentences are drawn with the run's seed (test first, then validation from the
    rest), so evaluate sees the same test split as train.

    Raises:
        DataError: unreadable files, or too few training sentences to hold splits out.
    """
    files = split_files(config)
    read = {split: _read_tagged(config, path) for split, path in files.items()}
    sentences = {split: conll.sentences for split, conll in read.items()}
    sources = {split: conll.path for split, conll in read.items()}
    missing = [split for split in ("test", "validation") if split not in read]
    if missing:
        train = sentences["train"]
        order = np.random.default_rng(config.seed).permutation(len(train))
        fractions = {"test": config.test_fraction, "validation": config.val_fraction}
        counts = {split: max(1, round(fractions[split] * len(train))) for split in missing}
        if sum(counts.values()) >= len(train):
            raise DataError(
                f"{len(train)} sentences are too few to hold out "
                + " and ".join(f"{counts[s]} {s}" for s in missing)
                + " sentences; give --validation-data / --test-data files",
                path=files["train"],
            )
        start = 0
        for split in missing:
            chosen = order[start:start + counts[split]]
            sentences[split] = [train[i] for i in sorted(chosen)]
            sources[split] = (
                f"{counts[split]} sentences held out from {files['train']} (seed {config.seed})"
            )
            start += counts[split]
        kept = sorted(order[start:])
        sentences["train"] = [train[i] for i in kept]
        sources["train"] = f"{files['train']} ({len(kept)} of {len(train)} sentences)"
    return TaggingSplits(
        sentences["train"], sentences["validation"], sentences["test"], sources,
        [{"file": c.path, "read": c.describe(), "documents": c.documents,
          "repairs": c.repairs, "invisible_characters_removed_on_lines": c.invisible_lines}
         for c in read.values()],
    )


def fit_inputs(dataset):
    """`((token_ids, char_ids), tag_ids)` batches for Keras from `make_tagging_dataset`'s."""
    return dataset.map(lambda words, chars, tags: ((words, chars), tags))


@dataclasses.dataclass
class PreparedTagging:
    """What `train` works from: the sentences, the vocabulary and the encoded splits."""

    splits: TaggingSplits
    vocabulary: TaggingVocabulary
    encoded: dict


# ---------------------------------------------------------------------------------------------
# Model


def build_model(config, vocabulary):
    """The compiled `SequenceTagger` of a config: softmax, or CRF with BIO constraints."""
    forbidden, forbidden_starts = (
        bio_transition_constraints(vocabulary.tags) if config.crf and config.crf_constraints
        else (None, None)
    )
    model = SequenceTagger(
        word_vocabulary_size=len(vocabulary.words), char_vocabulary_size=len(vocabulary.chars),
        num_tags=len(vocabulary.tags), word_dim=config.word_dim, char_dim=config.char_dim,
        char_units=config.char_units, char_encoder_kind=config.char_encoder,
        char_kernel_size=config.char_kernel, units=config.units, dropout=config.dropout,
        use_crf=config.crf, forbidden_transitions=forbidden,
        forbidden_start_tags=forbidden_starts, seed=config.seed,
        name=f"bilstm_{'crf' if config.crf else 'softmax'}_tagger",
    )
    model.compile(keras.optimizers.Adam(config.learning_rate, clipnorm=config.clipnorm))
    return model


def make_tag_decoder(model):
    """`model.decode` traced once: `(token_ids, char_ids) -> tag ids int32 [batch, time]`."""
    return tf.function(
        lambda token_ids, char_ids: model.decode((token_ids, char_ids)),
        input_signature=[
            tf.TensorSpec([None, None], tf.int32), tf.TensorSpec([None, None, None], tf.int32)
        ],
    )


def predict_tags(model, vocabulary, sentences, batch_size=64, decoder=None):
    """The predicted BIO tags of `sentences`, one list per sentence (padding never included)."""
    decoder = decoder or make_tag_decoder(model)
    encoded = encode_sentences(
        [dataclasses.replace(s, tags=None) for s in sentences], vocabulary
    )
    tags = []
    for token_ids, char_ids, _ in make_tagging_dataset(encoded, batch_size):
        tag_ids = decoder(token_ids, char_ids).numpy()
        lengths = np.sum(token_ids.numpy() != 0, axis=1)
        tags += [[vocabulary.tags[i] for i in row[:n]] for row, n in zip(tag_ids, lengths)]
    return tags


# ---------------------------------------------------------------------------------------------
# Scoring


def entity_scores(gold, predicted):
    """Entity-level precision, recall and F1 of BIO tag sequences (seqeval).

    Returns:
        A dict: `precision`, `recall`, `f1` and `support` (gold entities) overall (micro
        average, strict IOB2: an entity counts only if its predicted B-/I- tags are a valid
        chunk of the right type and extent), `per_type` (the same per entity type),
        `macro_f1`, `conlleval` (overall figures in seqeval's default mode, which matches
        conlleval: an I-X after O or another type starts an entity), and `sentences`, `tokens`.
    """
    from seqeval.metrics import classification_report, f1_score, precision_score, recall_score
    from seqeval.scheme import IOB2

    report = classification_report(
        gold, predicted, mode="strict", scheme=IOB2, output_dict=True, zero_division=0
    )
    summary_rows = {"micro avg", "macro avg", "weighted avg"}

    def figures(row):
        return {
            "precision": float(row["precision"]), "recall": float(row["recall"]),
            "f1": float(row["f1-score"]), "support": int(row["support"]),
        }

    scores = figures(report["micro avg"])
    scores.update(
        macro_f1=float(report["macro avg"]["f1-score"]),
        per_type={kind: figures(row) for kind, row in sorted(report.items())
                  if kind not in summary_rows},
        conlleval={
            "precision": float(precision_score(gold, predicted, zero_division=0)),
            "recall": float(recall_score(gold, predicted, zero_division=0)),
            "f1": float(f1_score(gold, predicted, zero_division=0)),
        },
        sentences=len(gold),
        tokens=sum(len(tags) for tags in gold),
    )
    return scores


def scores_table(scores):
    """The terminal table of `entity_scores`: one row per type, then the overall row."""
    rows = [[kind, row["precision"], row["recall"], row["f1"], row["support"]]
            for kind, row in scores["per_type"].items()]
    rows.append(["overall (micro)", scores["precision"], scores["recall"], scores["f1"],
                 scores["support"]])
    table = format_table(["entity type", "precision", "recall", "F1", "support"], rows)
    conlleval = scores["conlleval"]
    return (
        f"{table}\nseqeval strict IOB2; conlleval-compatible (seqeval default mode): precision "
        f"{conlleval['precision']:.4f}, recall {conlleval['recall']:.4f}, F1 {conlleval['f1']:.4f}"
    )


def conll_text(sentences, *tag_columns):
    """CoNLL text: token and the given tag columns, tab-separated, a blank line per sentence."""
    blocks = []
    for index, sentence in enumerate(sentences):
        blocks.append("\n".join(
            "\t".join([token, *(column[index][i] for column in tag_columns)])
            for i, token in enumerate(sentence.tokens)
        ))
    return "\n\n".join(blocks) + "\n"


class EntityF1EarlyStopping(keras.callbacks.Callback):
    """Scores the validation entity F1 every epoch, stops when learning stalls, keeps the best.

    Adds `val_f1` (strict IOB2) to every epoch's logs (callbacks after it see it). Training
    stops when for `patience` epochs neither the F1 nor the validation loss has improved, and
    the weights of the epoch with the best F1 (`best_epoch`) are restored. The F1 chooses the
    epoch because it is the figure the run reports, and the loss does not track it well (with
    nearly every token O, the loss keeps improving on O tokens while the entity F1 stalls, or
    the reverse). The loss keeps training going while the F1 cannot show progress yet: a tagger
    first predicts O nearly everywhere, with an F1 of 0 or of a few lucky guesses, for a number
    of epochs that depends on the data's size.

    Args:
        vocabulary: the run's `TaggingVocabulary`.
        sentences: the validation sentences (with tags).
        patience: epochs without a better F1 or loss before training stops.
    """

    def __init__(self, vocabulary, sentences, patience):
        super().__init__()
        self.vocabulary = vocabulary
        self.sentences = sentences
        self.gold = [s.tags for s in sentences]
        self.patience = patience
        self._decoder = None

    def on_train_begin(self, logs=None):
        self.best_f1, self.best_loss, self.best_weights, self.wait = -1.0, np.inf, None, 0
        self.best_epoch = None

    def on_epoch_end(self, epoch, logs=None):
        logs = {} if logs is None else logs
        if self._decoder is None:
            self._decoder = make_tag_decoder(self.model)
        predicted = predict_tags(self.model, self.vocabulary, self.sentences,
                                 decoder=self._decoder)
        f1 = logs["val_f1"] = entity_scores(self.gold, predicted)["f1"]
        loss = logs.get("val_loss", np.inf)
        self.wait += 1
        if loss < self.best_loss:
            self.best_loss, self.wait = loss, 0
        if f1 > self.best_f1:
            self.best_f1, self.best_weights, self.wait = f1, self.model.get_weights(), 0
            self.best_epoch = epoch + 1
        if self.wait >= self.patience:
            self.model.stop_training = True

    def on_train_end(self, logs=None):
        if self.best_weights is not None:
            self.model.set_weights(self.best_weights)


# ---------------------------------------------------------------------------------------------
# Export


def export_saved_model(model, vocabulary, path):
    """Writes a SavedModel whose `serving_default` tags tokenised sentences.

    `serving_default(tokens: string[None, None]) -> {"tags": string[None, None]}`: rows are
    padded with empty strings and get the empty tag there. Words are lower-cased and looked up,
    words split into characters and looked up, inside the graph, with the run's vocabularies.
    """
    word_lookup = keras.layers.StringLookup(
        vocabulary=vocabulary.words[2:], mask_token="", num_oov_indices=1, name="word_lookup"
    )
    char_lookup = keras.layers.StringLookup(
        vocabulary=vocabulary.chars[2:], mask_token="", num_oov_indices=1, name="char_lookup"
    )
    for lookup in (word_lookup, char_lookup):
        lookup.build((None,))
    tag_names = tf.constant(vocabulary.tags)
    decoder = make_tag_decoder(model)
    max_word_chars = vocabulary.max_word_chars

    def serve(tokens):
        real = tf.not_equal(tokens, "")
        token_ids = tf.cast(word_lookup(tf.strings.lower(tokens, encoding="utf-8")), tf.int32)
        chars = tf.strings.unicode_split(tokens, "UTF-8")[:, :, :max_word_chars]
        char_ids = tf.cast(char_lookup(chars), tf.int32).to_tensor(0)
        tags = tf.gather(tag_names, decoder(token_ids, char_ids))
        return {"tags": tf.where(real, tags, "")}

    archive = keras.export.ExportArchive()
    archive.track(model)
    archive.track(word_lookup)
    archive.track(char_lookup)
    archive.add_endpoint(
        "serving_default", serve,
        input_signature=[tf.TensorSpec([None, None], tf.string, name="tokens")],
    )
    return write_export_archive(archive, Path(path))


def read_prediction_input(path, input_format, token_column):
    """Sentences of a file to tag: CoNLL (token column only) or one sentence per line."""
    if input_format == "auto":
        input_format = "conll" if looks_like_conll(path) else "lines"
    if input_format == "conll":
        return read_conll(path, token_column=token_column, tag_column=None)
    return read_token_lines(path)


# ---------------------------------------------------------------------------------------------
# The task


class NerPipeline(Pipeline):
    """Named-entity tagging on the shared run lifecycle (pipelines/lifecycle.py)."""

    name = TASK_NAME
    config_class = NerConfig
    model_class = SequenceTagger
    data_paths = ("data", "validation_data", "test_data")
    renamed_settings = {"min_freq": "min_count"}
    monitor_metric, monitor_mode = "f1", "max"
    description = (
        "Tag named entities in tokenised text with a BiLSTM over word embeddings and "
        "character features (BiLSTM or CNN over characters), decoded per token (softmax) or "
        "by a CRF (--crf). Reads CoNLL column files (BIO, IOB1 or IOBES, converted to BIO) and "
        "scores entity-level precision, recall and F1 per type (seqeval, strict IOB2). Without "
        "--data it trains on a small smoke-test sample shipped with seqlab."
    )
    examples = {
        "train": [
            "seqlab ner train",
            "seqlab ner train --data ../shared/data/wnut17 --repair --crf --out runs/wnut-crf",
            "seqlab ner train --data train.conll --validation-data dev.conll --test-data "
            "test.conll --scheme iob1 --char-encoder cnn",
        ],
        "evaluate": [
            "seqlab ner evaluate --run runs/wnut-crf",
            "seqlab ner evaluate --run runs/wnut-crf --data other.conll --output eval.json",
        ],
        "predict": [
            'seqlab ner predict --run runs/wnut-crf "Einstein was born in Ulm"',
            "seqlab ner predict --run runs/wnut-crf --input tweets.txt --output tagged.conll",
        ],
        "export": ["seqlab ner export --run runs/wnut-crf --out serving/ner/1"],
    }
    extra_arguments = {
        "predict": [
            (("text",), {"nargs": "*", "metavar": "TEXT",
                         "help": "a sentence to tag, split at whitespace"}),
            (("--input",), {"metavar": "FILE",
                            "help": "a file to tag: CoNLL, or one sentence per line"}),
            (("--input-format",), {"choices": INPUT_FORMATS,
                                   "help": "format of --input (default: auto)"}),
        ],
    }

    def prepare(self, config, distribution):
        splits = load_splits(config)
        vocabulary = TaggingVocabulary.build(splits.train, config.min_count,
                                             config.max_word_chars)
        encoded = {
            split: encode_sentences(getattr(splits, split), vocabulary,
                                    path=splits.sources[split])
            for split in SPLITS
        }
        return PreparedTagging(splits, vocabulary, encoded)

    def build_model(self, config, prepared):
        return build_model(config, prepared.vocabulary)

    def datasets(self, config, prepared, batch_size):
        return (
            fit_inputs(make_tagging_dataset(prepared.encoded["train"], batch_size,
                                            shuffle=True, seed=config.seed)),
            fit_inputs(make_tagging_dataset(prepared.encoded["validation"], batch_size)),
        )

    def callbacks(self, config, prepared, monitor):
        # Kept for the best epoch, which the scoring reports.
        prepared.early_stopping = EntityF1EarlyStopping(
            prepared.vocabulary, prepared.splits.validation, config.patience
        )
        return [prepared.early_stopping]

    def score(self, config, model, prepared):
        splits, vocabulary = prepared.splits, prepared.vocabulary
        decoder = make_tag_decoder(model)
        # Kept for test_predictions.conll, which the artifacts hook writes.
        prepared.test_predicted = predict_tags(model, vocabulary, splits.test, decoder=decoder)
        metrics = entity_scores([s.tags for s in splits.test], prepared.test_predicted)
        validation_scores = entity_scores(
            [s.tags for s in splits.validation],
            predict_tags(model, vocabulary, splits.validation, decoder=decoder),
        )
        metrics.update(
            split="test",
            decoder="crf" if config.crf else "softmax",
            validation={k: validation_scores[k] for k in ("precision", "recall", "f1", "support")},
            best_epoch=prepared.early_stopping.best_epoch,
            data={
                "sources": splits.sources,
                "sentences": {split: len(getattr(splits, split)) for split in SPLITS},
                "files": splits.files,
                "vocabulary": {"words": len(vocabulary.words), "chars": len(vocabulary.chars),
                               "tags": vocabulary.tags},
                "unknown_word_rate_test": float(np.mean(prepared.encoded["test"].word_ids == 1)),
            },
        )
        return metrics

    def artifacts(self, config, prepared):
        test = prepared.splits.test
        return {
            "vocabulary": prepared.vocabulary,
            "test_predictions": conll_text(test, [s.tags for s in test], prepared.test_predicted),
        }

    def write_artifacts(self, run, artifacts):
        run.write_json("vocabulary.json", artifacts["vocabulary"].to_dict())
        run.write_text("test_predictions.conll", artifacts["test_predictions"])

    def read_artifacts(self, path, config):
        # test_predictions.conll is a report for conlleval; a finished run needs no part of it.
        return {"vocabulary": TaggingVocabulary.from_dict(read_json(path / "vocabulary.json"))}

    def summary_lines(self, config, prepared, metrics):
        splits = prepared.splits
        repairs = sum(len(f["repairs"]) for f in splits.files)
        return [
            f"{TASK_NAME}: BiLSTM-{metrics['decoder']} with {config.char_encoder} character "
            f"encoder; test split: {splits.sources['test']}, {len(splits.test)} sentences",
            scores_table(metrics),
            *([f"{repairs} invalid tags repaired (listed in metrics.json)"] if repairs else []),
        ]

    def model_for_run(self, config, artifacts):
        return build_model(config, artifacts["vocabulary"])

    def export_model(self, model, config, artifacts, path):
        vocabulary = artifacts["vocabulary"]
        export_saved_model(model, vocabulary, path)
        return (
            "serving_default(tokens: string[None, None]) -> {'tags': string[None, None]} "
            f"(rows padded with empty strings; tags: {', '.join(vocabulary.tags)})"
        )

    def evaluate(self, run, data=None, output=None):
        """Scores a trained run on its test split (`data` None: the figures of metrics.json), or
        on a CoNLL file read with the run's columns, scheme and repair settings; writes the
        figures as JSON to `output` if given.

        Raises:
            DataError: an unreadable file, or a tag the model was not trained on.
        """
        loaded = self.load_run(run)
        config, vocabulary = loaded.config, loaded.artifacts["vocabulary"]
        if data is None:
            splits = load_splits(config)
            sentences, source = splits.test, splits.sources["test"]
        else:
            conll = _read_tagged(config, data)
            sentences, source = conll.sentences, conll.describe()
            for sentence in sentences:
                vocabulary.tag_ids(sentence, path=data)
        metrics = entity_scores(
            [s.tags for s in sentences], predict_tags(loaded.model, vocabulary, sentences)
        )
        metrics.update(source=source)
        summary = [f"{TASK_NAME}: {source}, {len(sentences)} sentences", scores_table(metrics),
                   *write_figures(output, metrics)]
        return ActionResult(summary="\n".join(summary), path=output and Path(output),
                            metrics=metrics)

    def predict(self, run, data=None, output=None, text=None, input=None, input_format="auto"):
        """Tags whitespace-tokenised text, or the sentences of a file.

        Args:
            run: the run directory.
            data, input: a file to tag (the same option; give one): CoNLL (the run's token
                column is read) or one sentence per line, chosen by `input_format` ("auto"
                looks for tabs, `-DOCSTART-` or blank-line separated blocks).
            output: a CoNLL file (token TAB tag) to write; the default for file input is
                `<run>/predictions.conll`, and text input is only printed.
            text: a sentence, or a list of strings joined with spaces, tokenised at whitespace.
        """
        if isinstance(text, (list, tuple)):
            text = " ".join(text)
        tokens = text.split() if text else []
        if data is not None and input is not None:
            raise UsageError("give the file to tag with --input or --data, not both")
        source_file = input if input is not None else data
        if (source_file is None) == (not tokens):
            raise UsageError(
                'give either a sentence (predict --run DIR "Einstein was born in Ulm") or a '
                "file (--input FILE)"
            )
        loaded = self.load_run(run)
        if source_file is not None:
            sentences = read_prediction_input(
                source_file, input_format, loaded.config.token_column
            ).sentences
        else:
            sentences = [Sentence(tokens, None, [1] * len(tokens))]
        tags = predict_tags(loaded.model, loaded.artifacts["vocabulary"], sentences)
        path = Path(output) if output else (
            loaded.file("predictions.conll") if source_file else None
        )
        if path is not None:
            write_text_atomic(path, conll_text(sentences, tags))
        shown = sentences if path is None else sentences[:_SENTENCES_SHOWN]
        lines = [conll_text(shown, tags).rstrip("\n")]
        if len(shown) < len(sentences):
            lines.append(f"... ({len(sentences)} sentences in all)")
        if path is not None:
            lines.append(f"written to {path}")
        return ActionResult(summary="\n".join(lines), path=path)


PIPELINE = NerPipeline()
TASK = PIPELINE.task()
# The actions as functions, for use from Python: `train(NerConfig(...))`.
train, evaluate, predict, export = TASK.train, TASK.evaluate, TASK.predict, TASK.export
