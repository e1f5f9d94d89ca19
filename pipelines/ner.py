"""Named-entity tagging: CoNLL files in, BIO tags per token out, scored by entity F1.

`train` reads CoNLL files (a `--data` directory with train / dev / test files, explicit files, or
the smoke-test sample shipped in `data/samples/ner_sample.conll`), converts their tags to BIO
(an invalid sequence, such as an I-X that continues no X entity, read as conlleval and seqeval
read it, and counted; `--strict-tags` refuses it), builds word and character vocabularies on the
training split, and fits a
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

import collections
import dataclasses
import math
import sys
import time
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf

from seqlab.data.conll import (
    MAX_SENTENCE_TOKENS,
    OUTSIDE,
    Sentence,
    TaggingSplits,
    TOKEN_EDGE_CHARACTERS,
    TaggingVocabulary,
    conll_text,
    encode_sentences,
    load_splits,
    make_tagging_dataset,
    normalize_word,
    read_conll,
    read_sentences_to_tag,
    split_files,
    to_bio,
)
from seqlab.data.embeddings import PretrainedEmbeddings, pretrained_embeddings
from seqlab.models.serving import checked_rank, checked_utf8, dynamic_shape
from seqlab.models.tagger import SequenceTagger, bio_transition_constraints
from seqlab.pipelines.common import (
    ActionResult,
    UsageError,
    overlap_line,
    plural,
    read_json,
    write_export_archive,
    write_text_atomic,
)
from seqlab.pipelines.configs.ner import CARD, TASK_NAME, NerConfig, PredictOptions
from seqlab.pipelines.lifecycle import Pipeline, evaluation_result
from seqlab.pipelines.metrics import entity_scores, entity_scores_table
from seqlab.pipelines.settings import fill_in_setting, make_config, recurrent_parameters

SPLITS = ("train", "validation", "test")
# Sentences, and at most how many of their lines (one a token), shown on the terminal when
# predictions go to a file.
_SENTENCES_SHOWN = 5
_LINES_SHOWN = 100
# A shown token longer than this is cut (a token of 100,000 characters filled the terminal).
_TOKEN_SHOWN = 60
# `predict` tags a file in chunks of this many sentences, saying how far it got every
# `_PROGRESS_SECONDS` on stderr: a file of a million lines encoded at once held 3 GB and ran
# for minutes without a word.
PREDICT_CHUNK = 10_000
_PROGRESS_SECONDS = 10.0


# ---------------------------------------------------------------------------------------------
# Data


def _read_options(config):
    """`read_conll`'s settings of a config: columns, scheme (None: detect) and strictness."""
    return {"token_column": config.token_column, "tag_column": config.tag_column,
            "scheme": None if config.scheme == "auto" else config.scheme,
            "strict": config.strict_tags}


def invalid_tag_lines(files):
    """Summary lines for the files (`TaggingSplits.files` entries) with invalid tags: how many
    were read as conlleval reads them, and the first of them."""
    lines = []
    for file in files:
        report = file["invalid_tags"]
        if report["count"]:
            more = report["count"] - len(report["first"])
            plural = report["count"] != 1
            lines.append(
                f"{file['file']}: {report['count']} invalid tag{'s' * plural} read as conlleval "
                f"and seqeval read {'them' if plural else 'it'} (an I-X that continues no X "
                f"entity starts one; --strict-tags refuses {'them' if plural else 'it'}): "
                f"{'; '.join(report['first'])}" + (f" and {more} more" if more > 0 else "")
            )
    return lines


def read_splits(config):
    """The train / validation / test sentences of a config's files (`data.conll.load_splits`).

    Raises:
        DataError: unreadable files, or too few training sentences to hold splits out.
    """
    return load_splits(
        split_files(config.data, config.validation_data, config.test_data),
        config.val_fraction, config.test_fraction, config.seed, **_read_options(config),
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
    embeddings: PretrainedEmbeddings | None = None
    max_word_chars_source: str = "--max-word-chars"
    words_cut: int = 0  # training words longer than max_word_chars


# `default_max_word_chars`: the share of training words whose characters are all kept, and
# the bounds (a URL of 300 characters would make every word's character steps 300 long).
WORD_CHARS_KEPT_SHARE, MIN_WORD_CHARS, MAX_WORD_CHARS = 0.999, 20, 64


def default_max_word_chars(lengths):
    """`(max_word_chars, why)` from the training words' lengths in characters: the length
    `WORD_CHARS_KEPT_SHARE` of them have at most, within `MIN_WORD_CHARS` and
    `MAX_WORD_CHARS`. A fixed 20 had cut words whose type shows at their end."""
    if lengths.size == 0:
        return MIN_WORD_CHARS, f"no training words: {MIN_WORD_CHARS}"
    covered = int(np.ceil(np.quantile(lengths, WORD_CHARS_KEPT_SHARE)))
    chosen = min(max(covered, MIN_WORD_CHARS), MAX_WORD_CHARS)
    return chosen, (f"99.9 % of the training words have at most {covered} characters"
                    + (f", at least {MIN_WORD_CHARS}" if covered < MIN_WORD_CHARS else
                       f", at most {MAX_WORD_CHARS}" if covered > MAX_WORD_CHARS else ""))


# ---------------------------------------------------------------------------------------------
# Model


def read_embeddings(config, vocabulary, encoded_train):
    """The `PretrainedEmbeddings` of `--embeddings` for the (lower-cased) word vocabulary, None
    without; a word is looked up as it is, then in other case (a cased file's "Paris" serves
    "paris"). Coverage is counted on the training tokens `encoded_train`; an unset `--word-dim`
    becomes the vectors' dimension."""
    if config.embeddings is None:
        return None
    counts = np.bincount(encoded_train.word_ids, minlength=len(vocabulary.words))
    embeddings = pretrained_embeddings(config.embeddings, vocabulary.words, counts,
                                       first_word_id=2, dimension=config.word_dim,
                                       setting="--word-dim", case_fallback=True)
    if config.word_dim is None:
        fill_in_setting(config, "word_dim", embeddings.dimension,
                        f"the dimension of {embeddings.path}")
    return embeddings


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


def sentences_also_in(sentences, reference):
    """How many of `sentences` have the tokens of a sentence of `reference` (a test sentence
    seen in training makes the test figures overstate how the tagger reads new text)."""
    seen = {tuple(sentence.tokens) for sentence in reference}
    return sum(tuple(sentence.tokens) in seen for sentence in sentences)


def predict_tags(model, vocabulary, sentences, batch_size=64, decode_function=None):
    """The predicted BIO tags of `sentences`, one list per sentence (padding never included);
    `decode_function`: the model's `make_decode_function()` to reuse."""
    encoded = encode_sentences([dataclasses.replace(s, tags=None) for s in sentences], vocabulary)
    tag_ids = model.predict_tag_ids(make_tagging_dataset(encoded, batch_size), decode_function)
    return [[vocabulary.tags[i] for i in row] for row in tag_ids]


def repair_bio(tags):
    """`tags` as valid BIO: an I-X that continues no X entity (after O, after another type, or
    at the start) becomes B-X, as conlleval reads it; valid tags are unchanged. What `predict`
    and the SavedModel output (a softmax decoder may predict such an I-X; the CRF with its
    default constraints never does)."""
    return to_bio(list(tags), "bio")


def repair_bio_graph(tags):
    """`repair_bio` of each row of a string tensor `[batch, time]`, inside a graph."""
    previous = tf.pad(tags[:, :-1], [[0, 0], [1, 0]], constant_values=OUTSIDE)
    # I-X continues the token before when that token is B-X or I-X.
    continued = tf.equal(tf.strings.regex_replace(previous, "^B-", "I-"), tags)
    starts = tf.strings.regex_full_match(tags, "I-.+") & tf.logical_not(continued)
    return tf.where(starts, tf.strings.regex_replace(tags, "^I-", "B-"), tags)


def count_entities(rows):
    """The entities of BIO tag rows (each B-X, and each I-X that continues no X, starts one)."""
    return sum(tag.startswith("B-") for row in rows for tag in repair_bio(row))


def learning_notes(metrics, predicted_entities, train_sentences, sample, data=None):
    """Plain words for figures that show the model learned nothing (no entity predicted, or
    none right; types never found), and, on the shipped sample, that it is a smoke test.
    `data`: the run's --data (a data set it already reads is not suggested)."""
    epochs = metrics.get("epochs_run")
    # The name, or a path to its files (its cache folder, a copy of it named so).
    reads_wnut17 = data is not None and "wnut17" in Path(str(data)).name.lower()
    more = ("your own CoNLL files" if reads_wnut17 else
            "a data set such as --data wnut17, or your own CoNLL files")
    too_few = (f"{train_sentences} training sentences"
               + (f" and {plural(epochs, 'epoch')}" if epochs else "")
               + f" are too few to learn from: train on more data ({more}) or longer "
               "(--epochs, --patience)")
    notes = []
    if metrics["support"] == 0:
        pass  # no gold entity: the table says that its figures are not defined
    elif predicted_entities == 0:
        notes.append("the model predicts no entity on the test split (every token O), so "
                     f"every figure is 0; {too_few}")
    elif metrics["f1"] == 0:
        notes.append(f"none of the {predicted_entities} entities the model predicts on the test "
                     f"split matches a test entity, so every figure is 0; {too_few}")
    else:
        missed = [kind for kind, row in metrics["per_type"].items()
                  if row["support"] and row["f1"] == 0]
        if missed:
            notes.append(f"never found correctly on the test split (F1 0): {', '.join(missed)}; "
                         "more examples of these types, or more epochs, may help")
    if metrics.get("validation", {}).get("support") == 0:
        notes.append("the validation split holds no entity, so it has no F1 (history.csv has "
                     "no val_f1): the epoch with the lowest validation loss was kept")
    if sample:
        notes.append("the shipped sample is a smoke test that the pipeline runs: its template "
                     "sentences are too few and too alike to measure a model; train on a real "
                     "data set (--data wnut17) for figures that mean something")
    return notes


# ---------------------------------------------------------------------------------------------
# Early stopping


class EntityF1EarlyStopping(keras.callbacks.Callback):
    """Scores the validation entity F1 every epoch, stops when learning stalls, keeps the best.

    Adds `val_f1` (strict IOB2) to every epoch's logs (callbacks after it see it; none where
    the validation split has no entity, whose F1 is undefined: the loss alone decides). Training
    stops when for `patience` epochs neither the F1 nor the validation loss has improved, and
    the weights of the epoch with the best F1 (`best_epoch`; of equal F1s, the lower validation
    loss) are restored. The F1 chooses the epoch because it is the figure the run reports, and
    the loss does not track it well (with nearly every token O, the loss keeps improving on O
    tokens while the entity F1 stalls, or the reverse). The loss keeps training going while the
    F1 cannot show progress yet: a tagger first predicts O nearly everywhere, with an F1 of 0 or
    of a few lucky guesses, for a number of epochs that depends on the data's size.

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
        self._decode_function = self._decode_model = None

    def on_train_begin(self, logs=None):
        self.best_f1, self.best_loss, self.best_weights, self.wait = -1.0, np.inf, None, 0
        self.best_epoch, self.best_epoch_loss = None, np.inf

    def decode_function_of(self, model):
        """The decoding `tf.function` of `model`: the one traced for the epochs' scores where
        `model` is the model trained (a trace costs about a second), else a new one."""
        if self._decode_function is None or self._decode_model is not model:
            self._decode_function, self._decode_model = model.make_decode_function(), model
        return self._decode_function

    def on_epoch_end(self, epoch, logs=None):
        logs = {} if logs is None else logs
        predicted = predict_tags(self.model, self.vocabulary, self.sentences,
                                 decode_function=self.decode_function_of(self.model))
        f1 = entity_scores(self.gold, predicted)["f1"]
        # A validation split without entities has no F1 (0 / 0): none is logged (a 0 read as
        # a model that found nothing), and the loss alone decides, which epoch's weights are
        # kept too (the first epoch's were, always).
        undefined = math.isnan(f1)
        if not undefined:
            logs["val_f1"] = f1
        loss = logs.get("val_loss", np.inf)
        self.wait += 1
        lower_loss = loss < self.best_loss
        if lower_loss:
            self.best_loss, self.wait = loss, 0
        # An F1 equal to the best's (0 while the tagger still predicts O everywhere) goes to
        # the lower loss: the first epoch's weights were kept through every tie.
        better = f1 > self.best_f1 or (f1 == self.best_f1 and loss < self.best_epoch_loss)
        if lower_loss if undefined else better:
            self.best_f1, self.best_weights, self.wait = f1, self.model.get_weights(), 0
            self.best_epoch, self.best_epoch_loss = epoch + 1, loss
        if self.wait >= self.patience:
            self.model.stop_training = True

    def on_train_end(self, logs=None):
        if self.best_weights is not None:
            self.model.set_weights(self.best_weights)


# ---------------------------------------------------------------------------------------------
# Export

# The most words one sentence of the exported `serving_default` may have is the readers'
# `MAX_SENTENCE_TOKENS` (data/conll.py). The most words (rows x the longest row, padding
# included: the matrix the tagger reads) one request may hold: the character encoder keeps
# about 20 KB per word at the default sizes, so a request stays within about a GB. Larger
# batches are refused; send them in parts.
MAX_REQUEST_TOKENS = 50_000


def word_characters(tokens, max_word_chars):
    """The first `max_word_chars` characters of each of `tokens` (strings, any shape), ragged.

    Those characters lie within a token's first 4 x `max_word_chars` bytes (a UTF-8 character
    takes at most 4; an invalid byte is read as one), so the token is cut there before it is
    split: splitting whole tokens made one string per character first, and a request of one
    100 MB word took 4.5 GB. A character cut in two by the byte bound lies past the ones kept.
    """
    head = tf.strings.substr(tokens, 0, 4 * max_word_chars, unit="BYTE")
    return tf.strings.unicode_split(head, "UTF-8")[..., :max_word_chars]


# The characters predict's readers strip from a token's edges (`data.conll._clean`), as RE2
# reads them.
_EDGE_CLASS = "[" + "".join(f"\\x{{{ord(c):04X}}}" for c in TOKEN_EDGE_CHARACTERS) + "]"
TOKEN_EDGES = f"^{_EDGE_CLASS}+|{_EDGE_CLASS}+$"


def export_saved_model(model, vocabulary, path):
    """Writes a SavedModel whose `serving_default` tags tokenised sentences.

    `serving_default(tokens: string[None, None]) -> {"tags": string[None, None]}`: rows are
    padded with empty strings and get the empty tag there (as does a token of only white space
    or invisible characters, which predict's readers drop; such characters at a token's edges
    are stripped, as they strip them); the tags are valid BIO
    (`repair_bio_graph`: an I-X that continues nothing is B-X); an empty batch (shape `[0, n]` or
    `[n, 0]`) gets an empty result of its shape. Words are lower-cased and looked up,
    words split into characters and looked up, inside the graph, with the run's vocabularies.
    A row of more than `MAX_SENTENCE_TOKENS` words, a request of more than
    `MAX_REQUEST_TOKENS` (rows x words), or a token that is not UTF-8 (as predict refuses such a
    file) is refused (`InvalidArgumentError`) before any work.
    """
    word_lookup, char_lookup = vocabulary.lookup_layers()
    tag_names = tf.constant(vocabulary.tags)
    decode_function = model.make_decode_function()
    max_word_chars = vocabulary.max_word_chars

    def tag(tokens):
        # As predict's readers clean them: white space of every kind and invisible characters
        # (U+FEFF, zero-width ones, the word joiner) at a token's edges are not the word (looked
        # up with them, "\u200bMunich" was an unknown word, and its neighbours' tags changed).
        tokens = tf.strings.regex_replace(tokens, TOKEN_EDGES, "")
        real = tf.not_equal(tokens, "")
        token_ids = tf.cast(word_lookup(tf.strings.lower(tokens, encoding="utf-8")), tf.int32)
        char_ids = tf.cast(char_lookup(word_characters(tokens, max_word_chars)),
                           tf.int32).to_tensor(0)
        tags = repair_bio_graph(tf.gather(tag_names, decode_function(token_ids, char_ids)))
        return tf.where(real, tags, "")

    def serve(tokens):
        # Checked in the graph: the loaded signature checks no shapes itself.
        tokens = checked_utf8(
            checked_rank(tokens, "tokens", "a matrix [batch, words] of strings", 2), "tokens")
        # Bounded before any lookup: the work and memory of a request grow with rows x words.
        shape = dynamic_shape(tokens)
        # A row's words are its strings but the padding "" (an empty batch has none).
        words = tf.reduce_sum(tf.cast(tf.not_equal(tokens, ""), tf.int32), axis=1)
        bounded = [
            tf.debugging.assert_less_equal(
                tf.reduce_max(tf.concat([words, [0]], axis=0)), MAX_SENTENCE_TOKENS,
                message=f"tokens must have at most MAX_SENTENCE_TOKENS={MAX_SENTENCE_TOKENS} "
                        "words per row, padding \"\" not counted (split the text into "
                        "sentences)"),
            tf.debugging.assert_less_equal(
                tf.cast(shape[0], tf.int64) * tf.cast(shape[1], tf.int64),
                tf.constant(MAX_REQUEST_TOKENS, tf.int64),
                message=f"tokens must hold at most MAX_REQUEST_TOKENS={MAX_REQUEST_TOKENS} words "
                        "in all (rows x words, padding included; send fewer rows per request)"),
        ]
        with tf.control_dependencies(bounded):
            tokens = tf.identity(tokens)
        # An empty batch ([0, n] or [n, 0]) gets an empty result of its shape.
        tags = tf.cond(tf.size(tokens) > 0, lambda: tag(tokens),
                       lambda: tf.fill(tf.shape(tokens), ""))
        return {"tags": tags}

    archive = keras.export.ExportArchive()
    archive.track(model)
    archive.track(word_lookup)
    archive.track(char_lookup)
    archive.add_endpoint(
        "serving_default", serve,
        input_signature=[tf.TensorSpec([None, None], tf.string, name="tokens")],
    )
    return write_export_archive(archive, Path(path))


# ---------------------------------------------------------------------------------------------
# The task


class NerPipeline(Pipeline):
    """Named-entity tagging on the shared run lifecycle (pipelines/lifecycle.py)."""

    name = CARD.name
    config_class = NerConfig
    model_class = SequenceTagger
    model_files = vocabulary_files = ("vocabulary.json",)
    data_paths = ("data", "validation_data", "test_data")
    renamed_settings = {"min_freq": "min_count"}
    monitor_metric, monitor_mode = "f1", "max"
    description = CARD.description
    examples = CARD.examples
    predict_options = PredictOptions

    def prepare(self, config, distribution):
        splits = read_splits(config)
        lengths = np.array([len(token) for s in splits.train for token in s.tokens])
        if config.max_word_chars is None:
            value, chars_source = default_max_word_chars(lengths)
            fill_in_setting(config, "max_word_chars", value, chars_source)
        else:
            chars_source = "--max-word-chars"
        cut = int(np.sum(lengths > config.max_word_chars))
        if cut:
            chars_source += (f"; {cut:,} of the {lengths.size:,} training words are longer and "
                             "cut to it")
        vocabulary = TaggingVocabulary.build(splits.train, config.min_count,
                                             config.max_word_chars)
        if len(vocabulary.words) == 2:  # padding and [UNK] only: no word reached --min-count
            counts = collections.Counter(normalize_word(token) for sentence in splits.train
                                         for token in sentence.tokens)
            word, count = counts.most_common(1)[0]
            raise UsageError(f"--min-count {config.min_count} leaves no word in the vocabulary: "
                             f"the most frequent training word, {word!r}, occurs {count:,} "
                             f"times; expected --min-count at most {count:,}")
        encoded = {
            split: encode_sentences(getattr(splits, split), vocabulary,
                                    path=splits.sources[split])
            for split in SPLITS
        }
        return PreparedTagging(splits, vocabulary, encoded,
                               embeddings=read_embeddings(config, vocabulary, encoded["train"]),
                               max_word_chars_source=chars_source, words_cut=cut)

    def least_parameters(self, config):
        characters = (2 * recurrent_parameters("lstm", config.char_dim, config.char_units, 1)
                      if config.char_encoder == "lstm" else 0)
        words_in = (config.word_dim or 1) + config.char_units * (
            2 if config.char_encoder == "lstm" else 1)
        return (characters + recurrent_parameters("lstm", words_in, config.units, 1, True),
                f"--units {config.units} --char-units {config.char_units}")

    def build_model(self, config, prepared):
        model = build_model(config, prepared.vocabulary)
        if prepared.embeddings is not None:
            # Before fit: a resumed run's BackupAndRestore then puts its own weights over them.
            prepared.embeddings.copy_into(model.word_embedding, config.freeze_embeddings)
        return model

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
        decode_function = prepared.early_stopping.decode_function_of(model)
        # Kept for test_predictions.conll, which the artifacts hook writes.
        prepared.test_predicted = predict_tags(model, vocabulary, splits.test,
                                               decode_function=decode_function)
        metrics = entity_scores([s.tags for s in splits.test], prepared.test_predicted)
        validation_scores = entity_scores(
            [s.tags for s in splits.validation],
            predict_tags(model, vocabulary, splits.validation, decode_function=decode_function),
        )
        metrics.update(
            split="test",
            decoder="crf" if config.crf else "softmax",
            validation={k: validation_scores[k] for k in ("precision", "recall", "f1", "support")},
            best_epoch=prepared.early_stopping.best_epoch,
            data={
                "sources": splits.sources,
                "sentences": {split: len(getattr(splits, split)) for split in SPLITS},
                "also_in_training": {split: sentences_also_in(getattr(splits, split),
                                                              splits.train)
                                     for split in ("validation", "test")},
                "files": splits.files,
                "invalid_tags": sum(f["invalid_tags"]["count"] for f in splits.files),
                "vocabulary": {"words": len(vocabulary.words), "chars": len(vocabulary.chars),
                               "tags": vocabulary.tags},
                "unknown_word_rate_test": float(np.mean(prepared.encoded["test"].word_ids == 1)),
                "max_word_chars": config.max_word_chars,
                "training_words_cut_to_max_word_chars": prepared.words_cut,
            },
        )
        if prepared.embeddings is not None:
            metrics["embeddings"] = prepared.embeddings.report(config.freeze_embeddings)
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
        splits, overlap = prepared.splits, metrics["data"]["also_in_training"]
        return [
            f"{TASK_NAME}: BiLSTM-{metrics['decoder']} with {config.char_encoder} character "
            f"encoder; test split: {splits.sources['test']}"
            # A held-out split's source counts its sentences already.
            + ("" if "test" in splits.held_out else f", {len(splits.test)} sentences"),
            *([prepared.embeddings.summary_line(config.freeze_embeddings)]
              if prepared.embeddings is not None else []),
            entity_scores_table(metrics),
            *invalid_tag_lines(splits.files),
            *([overlap_line(overlap["test"], len(splits.test), overlap["validation"],
                            len(splits.validation), "sentences")] if overlap["test"] else []),
            f"max_word_chars {config.max_word_chars}: {prepared.max_word_chars_source}",
            *learning_notes(metrics, count_entities(prepared.test_predicted),
                            len(splits.train), config.data is None, config.data),
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
        on a CoNLL file read with the run's columns, scheme and `strict_tags` settings; writes
        the figures as JSON to `output` if given. The files' invalid tags (read as conlleval
        reads them) are counted in the summary and the figures (`invalid_tags`).

        Raises:
            DataError: an unreadable file, or a tag the model was not trained on.
        """
        loaded = self.load_run(run)
        config, vocabulary = loaded.config, loaded.artifacts["vocabulary"]
        if data is None:
            splits = read_splits(config)
            sentences, source, files = splits.test, splits.sources["test"], splits.files
        else:
            conll = read_conll(data, **_read_options(config))
            sentences, source = conll.sentences, conll.describe()
            files = [{"file": conll.path, "invalid_tags": conll.invalid_tags_report()}]
            for sentence in sentences:
                vocabulary.tag_ids(sentence, path=data)
        metrics = entity_scores(
            [s.tags for s in sentences], predict_tags(loaded.model, vocabulary, sentences)
        )
        metrics.update(
            source=source,
            invalid_tags={f["file"]: f["invalid_tags"] for f in files},
        )
        # A --data file's account and a held-out split's name count the sentences already; a
        # test file's name does not.
        named_only = data is None and source in {f["file"] for f in files}
        counted = f", {len(sentences)} sentences" if named_only else ""
        summary = [f"{TASK_NAME}: {source}{counted}",
                   entity_scores_table(metrics), *invalid_tag_lines(files)]
        return evaluation_result(summary, metrics, output)

    def predict(self, run, data=None, output=None, **options):
        """Tags a sentence, or the sentences of a file.

        Args:
            run: the run directory.
            data: a file to tag, as `input` (give one of the two).
            output: a CoNLL file (token TAB tag) to write; the default for file input is
                `<run>/predictions.conll`, and a sentence is only printed.
            **options: the fields of `PredictOptions`: `sentence` (words, each split again at
                whitespace), `input` (a file: CoNLL, the run's token column, or one sentence per
                line, as `input_format` says; "auto" looks for tabs, `-DOCSTART-` or blank-line
                separated blocks).
        """
        options = make_config(PredictOptions, flag_values=options)
        input, input_format = options.input, options.input_format
        tokens = " ".join(options.sentence).split()
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
            sentences = read_sentences_to_tag(
                source_file, input_format, loaded.config.token_column
            ).sentences
        else:
            # As a file's sentence is (data/conll.py): a longer one ran unbounded.
            if len(tokens) > MAX_SENTENCE_TOKENS:
                raise UsageError(
                    f"the sentence has {len(tokens):,} words, more than MAX_SENTENCE_TOKENS="
                    f"{MAX_SENTENCE_TOKENS}; split it, or give a file (--input) with one "
                    "sentence per line")
            sentences = [Sentence(tokens, None, [1] * len(tokens))]
        tags = tag_in_chunks(loaded.model, loaded.artifacts["vocabulary"], sentences)
        path = Path(output) if output else (
            loaded.file("predictions.conll") if source_file else None
        )
        if path is not None:
            write_text_atomic(path, conll_text(sentences, tags))
        shown = sentences if path is None else sentences[:_SENTENCES_SHOWN]
        lines = conll_text(shown, tags).rstrip("\n").split("\n")
        if path is not None:  # the file holds them whole; printed alone, they are the output
            lines = [_shortened(line) for line in lines]
        if path is not None and len(lines) > _LINES_SHOWN:
            lines = lines[:_LINES_SHOWN] + [f"... ({sum(map(len, tags)):,} tokens in all)"]
        if len(shown) < len(sentences):
            lines.append(f"... ({len(sentences)} sentences in all)")
        if path is not None:
            lines.append(f"written to {path}")
        return ActionResult(summary="\n".join(lines), path=path)


def tag_in_chunks(model, vocabulary, sentences):
    """`repair_bio` of `predict_tags` of `sentences`, `PREDICT_CHUNK` sentences at a time (the
    encoded ids of one chunk in memory at once), with a progress line on stderr every
    `_PROGRESS_SECONDS` while more chunks remain."""
    decode_function = model.make_decode_function()
    tags, said = [], time.monotonic()
    for start in range(0, len(sentences), PREDICT_CHUNK):
        chunk = sentences[start:start + PREDICT_CHUNK]
        tags += [repair_bio(row) for row in
                 predict_tags(model, vocabulary, chunk, decode_function=decode_function)]
        if len(tags) < len(sentences) and time.monotonic() - said >= _PROGRESS_SECONDS:
            print(f"tagged {len(tags):,} of {len(sentences):,} sentences", file=sys.stderr,
                  flush=True)
            said = time.monotonic()
    return tags


def _shortened(line):
    """A CoNLL line for the terminal, its token cut to `_TOKEN_SHOWN` characters."""
    token, tab, rest = line.partition("\t")
    if len(token) <= _TOKEN_SHOWN:
        return line
    return f"{token[:_TOKEN_SHOWN]}...({len(token):,} characters){tab}{rest}"


PIPELINE = NerPipeline()
TASK = PIPELINE.task()
# The actions as functions, for use from Python: `train(NerConfig(...))`.
train, evaluate, predict, export = TASK.train, TASK.evaluate, TASK.predict, TASK.export
