"""Seq2seq translation: a GRU encoder-decoder with additive attention, or a Transformer.

`train` reads sentence pairs (aligned files, a folder of aligned split files, a TSV of pairs, or
without data the embedded English -> German smoke-test sample), builds a vocabulary of reversible
tokens per language on the training split (data/translation.py), and fits a
`seqlab.models.Translator` with teacher forcing (padding carries no loss). The test split is
scored with sacrebleu (BLEU with its signature, and chrF) on detokenised output against the raw
reference lines, greedy and beam. Text <-> ids is `TextTranslator`; decoding, the model's.

The run directory holds, besides the common files (pipelines/lifecycle.py):
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
    END_ID, PAD_ID, START_ID, VALIDATION_STEMS, Vocabulary, detokenize, encode_pairs,
    find_split_files, load_sample, make_dataset, read_aligned, read_lines, read_tsv_pairs,
    split_pairs, strip_after_end, token_text, tokenize,
)
from seqlab.models import BeamSampler, Translator
from seqlab.models.translator import KINDS as MODEL_KINDS
from seqlab.pipelines.common import (
    ActionResult, TrainConfig, UsageError, check_at_least, check_rate, check_split_fractions,
    format_table, option, pyplot, write_export_archive, write_text_atomic,
)
from seqlab.pipelines.lifecycle import Pipeline, write_figures

TASK_NAME = "translate"
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
    val_fraction: float = option(0.1, "share of pairs held out for validation when the data "
                                      "has no val split")
    test_fraction: float = option(0.1, "share of pairs held out for the test split when the "
                                       "data has no test split")
    epochs: int = option(40, "maximum number of epochs (early stopping may end sooner)")
    batch_size: int = option(64, "sentence pairs per batch (also per decoding batch)")
    model: str = option("transformer", "model kind", MODEL_KINDS)
    embedding_dim: int = option(128, "token embedding size (transformer: the model width)")
    units: int = option(128, "gru-attention: GRU units per direction and attention units")
    layers: int = option(2, "transformer: encoder layers and decoder layers")
    num_heads: int = option(4, "transformer: attention heads")
    ff_dim: int = option(256, "transformer: feed-forward width")
    dropout: float = option(0.1, "dropout rate")
    max_length: int = option(64, "most tokens of a training sentence (longer pairs are "
                                 "skipped and counted) and of an output")
    min_count: int = option(1, "tokens seen fewer times in the training split become [UNK]")
    max_vocabulary: int = option(32000, "most ids per language (most frequent tokens kept)")
    learning_rate: float = option(1e-3, "peak Adam learning rate (then cosine decay to a tenth "
                                        "of it)")
    warmup_steps: int = option(0, "batches of linear learning-rate warmup from 0")
    clipnorm: float | None = option(1.0, "gradient norm clipping of Adam")
    patience: int = option(5, "early-stopping patience in epochs (best weights restored)")
    beam_width: int = option(4, "beam width of the beam-search figures and of the SavedModel")
    length_penalty: float = option(0.6, "GNMT length penalty alpha of beam search")
    attention_plots: int = option(3, "validation sentences whose attention is plotted")

    def __post_init__(self):
        super().__post_init__()
        check_at_least(self, 1, "embedding_dim", "units", "layers", "num_heads", "ff_dim",
                       "min_count", "patience", "beam_width")
        check_at_least(self, 0, "warmup_steps", "attention_plots", "length_penalty")
        check_at_least(self, 2, "max_length")
        check_at_least(self, 5, "max_vocabulary")
        check_rate(self, "dropout")
        check_split_fractions(self)
        columns = self.tsv_columns
        if len(columns) != 2 or len(set(columns)) != 2 or min(columns) < 1:
            raise ValueError(
                "tsv_columns must be two different 1-based column numbers. Received: "
                f"tsv_columns={self.tsv_columns}"
            )
        _check_sources(self.data, self.src, self.tgt, ValueError)
        if self.model == "transformer" and self.embedding_dim % self.num_heads:
            raise ValueError(
                "embedding_dim must be divisible by num_heads for the transformer. Received: "
                f"embedding_dim={self.embedding_dim}, num_heads={self.num_heads}"
            )


def _check_sources(data, src, tgt, error):
    if (src is None) != (tgt is None):
        raise error("--src and --tgt go together: give both aligned files, or neither")
    if src is not None and data is not None:
        raise error("give either --data or --src/--tgt, not both")


# ---------------------------------------------------------------------------------------------
# Data


def read_pairs(config, data, src, tgt, split):
    """`({split name: SentencePairs}, source)` of aligned files, a split folder or a TSV.

    Aligned files and a TSV are one split, named `split`; a folder gives its split files (in
    the config's languages), `train.*` required when `split` is "train".
    """
    if src is not None:
        return {split: read_aligned(src, tgt)}, f"{src} + {tgt}"
    if Path(data).is_dir():
        if not (config.src_lang and config.tgt_lang):
            raise UsageError(
                f"--data {data} is a folder: name the languages of its aligned files with "
                "--src-lang and --tgt-lang (train.<src-lang>, train.<tgt-lang>, ...) when "
                "training, or score aligned files with --src and --tgt"
            )
        files = find_split_files(data, config.src_lang, config.tgt_lang,
                                 require_train=split == "train")
        return {name: read_aligned(*paths) for name, paths in files.items()}, str(data)
    return {split: read_tsv_pairs(data, tuple(config.tsv_columns))}, str(data)


@dataclasses.dataclass
class PreparedPairs:
    """The splits (`SentencePairs`; `tests` by name), what was read and how it was split;
    for `train` also the vocabularies, the `EncodedPairs`, the training batches per epoch and
    (after scoring) the test translations for the summary."""

    train: object
    val: object
    tests: dict
    source: str
    notes: list
    source_vocabulary: Vocabulary = None
    target_vocabulary: Vocabulary = None
    train_ids: object = None
    val_ids: object = None
    batches: int = 0
    examples: dict = None


def load_data(config):
    """The splits the config names (`--src/--tgt`, `--data`, or the sample), unencoded.

    Data without given splits is split at random (seeded) into train / val / test with
    `val_fraction` and `test_fraction`; a folder's missing val or test split is taken from its
    training pairs the same way.
    """
    if config.src is None and config.data is None:
        given = {"train": load_sample()}
        source = given["train"].name
    else:
        given, source = read_pairs(config, config.data, config.src, config.tgt, "train")
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
    return PreparedPairs(train=train, val=val, tests=tests, source=source, notes=notes)


def planned_batches(lengths, batch_size):
    """Batches per epoch of `make_dataset(..., bucket_width=TRAIN_BUCKET_WIDTH)`."""
    boundaries = np.arange(TRAIN_BUCKET_WIDTH + 1, int(lengths.max()) + 1, TRAIN_BUCKET_WIDTH)
    per_bucket = np.bincount(np.searchsorted(boundaries, lengths, side="right"))
    return int(np.sum(np.ceil(per_bucket / batch_size)))


# ---------------------------------------------------------------------------------------------
# Text in, text out


class TextTranslator:
    """Text in, text out around a `Translator` and the run's source and target `Vocabulary`s.

    TensorFlow ops throughout: the same methods run eagerly, in `tf.function` and in the
    exported SavedModel.
    """

    def __init__(self, model, source_vocabulary, target_vocabulary):
        self.model = model
        self.source_lookup = source_vocabulary.lookup_layer()
        self.target_tokens = target_vocabulary.lookup_layer(invert=True)
        self._functions = {}

    def source_ids(self, texts):
        """Padded source ids `[B, S]` (S at least 1) of a string tensor `[B]`."""
        ids = tf.cast(self.source_lookup(tokenize(texts)), tf.int32).to_tensor()
        return tf.pad(ids, [[0, 0], [0, tf.maximum(1 - tf.shape(ids)[1], 0)]])

    def to_text(self, token_ids):
        """Detokenised text `[B]` of output ids `[B, steps]` (cut at the first [END])."""
        return detokenize(strip_after_end(self.target_tokens(token_ids)))

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
        empty = tf.equal(source_ids[:, :1], PAD_ID)
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

    def translate(self, texts, beam_width=None, length_penalty=0.6, num_return=1,
                  batch_size=64):
        """Translations of a list of str (decoded in batches of similar length): str each, or
        with `num_return > 1` `[(translation, score), ...]` best first."""
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

    def export(self, path, beam_width, length_penalty):
        """Writes a SavedModel: `serving_default(text: string[None]) -> {"translation":
        string[None]}`, beam search with these settings (atomically, see common.py)."""
        translate = self.function(beam_width, length_penalty)  # the one `translate` uses

        def serve(text):
            return {"translation": translate(text)[0][:, 0]}

        archive = keras.export.ExportArchive()
        archive.track(self.model)
        # Called inside `translate`, the lookup layers are not seen by `add_endpoint`.
        archive.track(self.source_lookup.lookup_table)
        archive.track(self.target_tokens.lookup_table)
        archive.add_endpoint("serving_default", serve,
                             input_signature=[tf.TensorSpec([None], tf.string, name="text")])
        return write_export_archive(archive, Path(path))


# ---------------------------------------------------------------------------------------------
# Scoring, plots and export


def corpus_scores(hypotheses, references):
    """sacreBLEU's corpus BLEU and chrF (0-100, with details and signatures) of detokenised
    hypotheses (one str per sentence) against reference streams (sacrebleu's layout:
    `[[ref_1 of every sentence], [ref_2 of every sentence], ...]`)."""
    bleu, chrf = sacrebleu.BLEU(), sacrebleu.CHRF()
    bleu_score = bleu.corpus_score(hypotheses, references)
    chrf_score = chrf.corpus_score(hypotheses, references)
    return {"bleu": float(bleu_score.score), "bleu_details": str(bleu_score),
            "bleu_signature": str(bleu.get_signature()), "chrf": float(chrf_score.score),
            "chrf_signature": str(chrf.get_signature())}


def score_pairs(translator, pairs, beam_width, length_penalty, batch_size):
    """Greedy and beam-search figures of one set of pairs, and its translations."""
    figures, translations = {"sentences": len(pairs)}, {}
    for decoding, settings in (("greedy", {}), ("beam", {"beam_width": beam_width,
                                                         "length_penalty": length_penalty})):
        started = time.perf_counter()
        translations[decoding] = translator.translate(pairs.sources, batch_size=batch_size,
                                                      **settings)
        figures[decoding] = {**corpus_scores(translations[decoding], [pairs.targets]),
                             **settings, "seconds": round(time.perf_counter() - started, 2)}
    return figures, translations


def metrics_table(test_figures):
    rows = []
    for name, figures in test_figures.items():
        beam = figures["beam"]
        rows.append([name, "greedy", figures["greedy"]["bleu"], figures["greedy"]["chrf"]])
        rows.append([name, f"beam (width {beam['beam_width']}, alpha {beam['length_penalty']})",
                     beam["bleu"], beam["chrf"]])
    first = next(iter(test_figures.values()))
    return "\n".join([
        format_table(["test set", "decoding", "BLEU", "chrF"], rows),
        f"BLEU signature: {first['greedy']['bleu_signature']}",
        f"chrF signature: {first['greedy']['chrf_signature']}",
    ])


def attention_weights(model, source_ids, output_ids):
    """Attention of each output token over the source tokens, `[B, T, S]`.

    The model reads [START] + output (teacher forcing on its own output); row t is the
    attention when it predicted output token t (`Translator`'s `return_attention_scores`).
    """
    starts = tf.fill([tf.shape(output_ids)[0], 1], START_ID)
    target_in = tf.concat([starts, output_ids[:, :-1]], axis=1)
    _, weights = model([source_ids, target_in], return_attention_scores=True)
    return weights


def save_attention_plots(translator, pairs, count, folder):
    """Heatmaps of the greedy translation's attention for the first `count` pairs."""
    plt = pyplot()
    for index in range(min(count, len(pairs))):
        source_ids = translator.source_ids(tf.constant([pairs.sources[index]]))
        output_ids = translator.model.generate(source_ids)
        tokens = [t.decode("utf-8") for t in translator.target_tokens(output_ids)[0].numpy()]
        length = tokens.index("[END]") + 1 if "[END]" in tokens else len(tokens)
        weights = attention_weights(translator.model, source_ids, output_ids[:, :length])
        source_tokens = [token_text(t.decode("utf-8"))
                         for t in tokenize([pairs.sources[index]])[0].numpy()] or ["(empty)"]
        output_tokens = [token_text(t) for t in tokens[:length]]
        figure, axis = plt.subplots(
            figsize=(1.0 + 0.45 * len(source_tokens), 1.2 + 0.4 * len(output_tokens))
        )
        axis.imshow(weights[0].numpy()[:, : len(source_tokens)], cmap="viridis", vmin=0.0,
                    vmax=1.0, aspect="auto")
        axis.set_xticks(range(len(source_tokens)), source_tokens, rotation=60, ha="right")
        axis.set_yticks(range(len(output_tokens)), output_tokens)
        axis.set(xlabel="source", ylabel="output (greedy)")
        axis.set_title(f"attention, validation sentence {index + 1}", fontsize=9)
        figure.tight_layout()
        figure.savefig(Path(folder) / f"attention_{index + 1}.png", dpi=100)
        plt.close(figure)


# ---------------------------------------------------------------------------------------------
# The task


def _decoding_settings(config, beam_width, length_penalty):
    beam_width = config.beam_width if beam_width is None else beam_width
    length_penalty = config.length_penalty if length_penalty is None else length_penalty
    if beam_width < 1:
        raise UsageError(f"--beam-width must be at least 1. Received: {beam_width}")
    if length_penalty < 0:
        raise UsageError(f"--length-penalty must be >= 0. Received: {length_penalty}")
    return beam_width, length_penalty


_DECODING_ARGUMENTS = [
    (["--beam-width"], {"type": int, "metavar": "K",
                        "help": "beam width (default: the run's beam_width)"}),
    (["--length-penalty"], {"type": float, "metavar": "ALPHA",
                            "help": "GNMT length penalty alpha (default: the run's)"}),
]


class TranslatePipeline(Pipeline):
    """Translation on the shared run lifecycle (pipelines/lifecycle.py)."""

    name = TASK_NAME
    config_class = TranslateConfig
    model_class = Translator
    data_paths = ("data", "src", "tgt")
    description = (
        "Translate sentences with a GRU encoder-decoder with additive attention "
        "(--model gru-attention) or a Transformer (--model transformer) built from seqlab's "
        "layers, trained with teacher forcing on aligned files (--src/--tgt), a folder of "
        "aligned split files (--data DIR --src-lang en --tgt-lang de) or a TSV of pairs. "
        "Scored on the test split with sacreBLEU (BLEU with its signature, and chrF), greedy "
        "and beam search. Without data it trains on a small English -> German smoke-test "
        "sample shipped with seqlab."
    )
    examples = {
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
    }
    extra_arguments = {
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
    }

    def prepare(self, config, distribution):
        prepared = load_data(config)
        if len(prepared.val) == 0:
            raise DataError("no validation pairs: set --val-fraction above 0",
                            path=prepared.source)
        prepared.source_vocabulary, prepared.target_vocabulary = (
            Vocabulary.build(tokenize(texts), config.min_count, config.max_vocabulary)
            for texts in (prepared.train.sources, prepared.train.targets)
        )
        lookups = (prepared.source_vocabulary.lookup_layer(),
                   prepared.target_vocabulary.lookup_layer())
        prepared.train_ids = encode_pairs(prepared.train, *lookups, config.max_length)
        prepared.val_ids = encode_pairs(prepared.val, *lookups, config.max_length)
        if prepared.train_ids.skipped == len(prepared.train):
            raise DataError(
                f"every training pair is longer than max_length={config.max_length} tokens",
                path=prepared.source,
            )
        lengths = np.maximum(prepared.train_ids.source_ids.row_lengths().numpy(),
                             prepared.train_ids.target_ids.row_lengths().numpy() + 1)
        prepared.batches = planned_batches(
            lengths, distribution.global_batch_size(config.batch_size)
        )
        return prepared

    def model_for_run(self, config, artifacts):
        return Translator(
            len(artifacts["source_vocabulary"]), len(artifacts["target_vocabulary"]),
            kind=config.model, embedding_dim=config.embedding_dim, units=config.units,
            layers=config.layers, num_heads=config.num_heads, ff_dim=config.ff_dim,
            dropout=config.dropout, max_length=config.max_length, start_token_id=START_ID,
            end_token_id=END_ID, seed=config.seed,
        )

    def build_model(self, config, prepared):
        model = self.model_for_run(config, self.artifacts(config, prepared))
        total_steps = prepared.batches * config.epochs
        # Linear warmup to `learning_rate` over `warmup_steps`, then cosine decay to 10 %.
        warmup = min(config.warmup_steps, max(total_steps - 1, 0))
        schedule = keras.optimizers.schedules.CosineDecay(
            initial_learning_rate=0.0 if warmup else config.learning_rate,
            decay_steps=max(total_steps - warmup, 1), alpha=0.1,
            warmup_target=config.learning_rate if warmup else None, warmup_steps=warmup,
        )
        model.compile(
            optimizer=keras.optimizers.Adam(schedule, clipnorm=config.clipnorm),
            # ignore_class: padded target positions carry no loss; the mean is over real tokens.
            loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True,
                                                            ignore_class=PAD_ID),
        )
        return model

    def datasets(self, config, prepared, batch_size):
        train_ids, val_ids = prepared.train_ids, prepared.val_ids
        # Bucketing hides the number of batches from Keras; it is known, and asserted.
        train = make_dataset(
            train_ids.source_ids, train_ids.target_ids, batch_size,
            shuffle_seed=config.seed, bucket_width=TRAIN_BUCKET_WIDTH,
        ).apply(tf.data.experimental.assert_cardinality(prepared.batches))
        return train, make_dataset(val_ids.source_ids, val_ids.target_ids, batch_size)

    def score(self, config, model, prepared):
        translator = TextTranslator(model, prepared.source_vocabulary,
                                    prepared.target_vocabulary)
        test_figures, prepared.examples = {}, {}
        for name, pairs in prepared.tests.items():
            test_figures[name], prepared.examples[name] = score_pairs(
                translator, pairs, config.beam_width, config.length_penalty, config.batch_size
            )
        val_set = make_dataset(prepared.val_ids.source_ids, prepared.val_ids.target_ids,
                               config.batch_size)
        return {
            "test": test_figures,
            # Of the weights kept (early stopping restores the best epoch's).
            "validation_loss": float(model.evaluate(val_set, verbose=0)),
            "data": {
                "source": prepared.source,
                "pairs": {"train": len(prepared.train), "val": len(prepared.val),
                          **{name: len(pairs) for name, pairs in prepared.tests.items()}},
                "skipped_longer_than_max_length": {"train": prepared.train_ids.skipped,
                                                   "val": prepared.val_ids.skipped},
                "splits": prepared.notes,
                "vocabulary": {"source": len(prepared.source_vocabulary),
                               "target": len(prepared.target_vocabulary)},
            },
        }

    def artifacts(self, config, prepared):
        return {"source_vocabulary": prepared.source_vocabulary,
                "target_vocabulary": prepared.target_vocabulary}

    def write_artifacts(self, run, artifacts):
        for name, vocabulary in artifacts.items():
            vocabulary.save(run.path(f"{name}.txt"))

    def read_artifacts(self, path, config):
        return {name: Vocabulary.load(path / f"{name}.txt")
                for name in ("source_vocabulary", "target_vocabulary")}

    def save_plots(self, run, config, prepared, model, metrics, history):
        translator = TextTranslator(model, prepared.source_vocabulary,
                                    prepared.target_vocabulary)
        save_attention_plots(translator, prepared.val, config.attention_plots, run.path("plots"))

    def export_model(self, model, config, artifacts, path):
        TextTranslator(model, **artifacts).export(path, config.beam_width,
                                                  config.length_penalty)
        return (
            "serving_default(text: string[None]) -> {'translation': string[None]} "
            f"(beam search, width {config.beam_width}, length penalty {config.length_penalty})"
        )

    def summary_lines(self, config, prepared, metrics):
        data, first_test = metrics["data"], next(iter(prepared.tests))
        skipped = data["skipped_longer_than_max_length"]
        examples, pairs = prepared.examples[first_test], prepared.tests[first_test]
        lines = [f"{TASK_NAME}: {prepared.source}, {config.model}, {len(prepared.train)} "
                 f"training pairs, vocabularies {data['vocabulary']['source']} / "
                 f"{data['vocabulary']['target']}, {metrics['epochs_run']} epochs "
                 f"({metrics['train_seconds_this_session']:.0f} s)",
                 metrics_table(metrics["test"]), *prepared.notes]
        if skipped["train"] or skipped["val"]:
            lines.append(f"left out (longer than max_length={config.max_length} tokens): "
                         f"{skipped['train']} training and {skipped['val']} validation pairs")
        lines.append(f"examples ({first_test}):")
        for index in range(min(3, len(pairs))):
            lines += [f"  source:    {pairs.sources[index]}",
                      f"  reference: {pairs.targets[index]}",
                      f"  greedy:    {examples['greedy'][index]}",
                      f"  beam:      {examples['beam'][index]}"]
        return lines

    def _load(self, run, beam_width, length_penalty):
        loaded = self.load_run(run)
        settings = _decoding_settings(loaded.config, beam_width, length_penalty)
        return loaded, TextTranslator(loaded.model, **loaded.artifacts), settings

    def evaluate(self, run, data=None, output=None, src=None, tgt=None, beam_width=None,
                 length_penalty=None):
        """Scores a run with sacreBLEU, greedy and beam (`beam_width`, `length_penalty`: default
        the run's), on aligned files `src` / `tgt`, a TSV of pairs (the run's `tsv_columns`), a
        folder's `test*` files (the run's languages), or by default the run's test split(s);
        the figures also go to the JSON file `output` when given."""
        loaded, translator, (beam_width, length_penalty) = self._load(run, beam_width,
                                                                      length_penalty)
        config = loaded.config
        _check_sources(data, src, tgt, UsageError)
        if src is None and data is None:
            tests = load_data(config).tests
        else:
            given, _ = read_pairs(config, data, src, tgt, "test")
            tests = {name: pairs for name, pairs in given.items() if name.startswith("test")}
            if not tests:
                raise DataError(f"no aligned test*.{config.src_lang} / test*.{config.tgt_lang} "
                                "files", path=data)
        figures = {
            name: score_pairs(translator, pairs, beam_width, length_penalty,
                              config.batch_size)[0]
            for name, pairs in tests.items()
        }
        source = src or data or "the run's test split"
        summary = [f"{TASK_NAME}: {source}", metrics_table(figures),
                   *write_figures(output, {"test": figures})]
        return ActionResult(summary="\n".join(summary), path=output and Path(output),
                            metrics={"test": figures})

    def predict(self, run, data=None, output=None, texts=(), input=None, beam_width=None,
                length_penalty=None, n_best=1):
        """Translates `texts` and the lines of the UTF-8 file `input` (or `data`, every task's
        flag), with beam search (default: the run's settings); `n_best` > 1 prints that many
        hypotheses per sentence with their scores. `output`: also write them there."""
        loaded, translator, (beam_width, length_penalty) = self._load(run, beam_width,
                                                                      length_penalty)
        if input is not None and data is not None:
            raise UsageError("give the sentences file with --input (or --data), not both")
        if not 1 <= n_best <= beam_width:
            raise UsageError(f"--n-best must lie between 1 and --beam-width={beam_width}. "
                             f"Received: {n_best}")
        input = input if input is not None else data
        sentences = list(texts or []) + (read_lines(input) if input is not None else [])
        if not sentences:
            raise UsageError('nothing to translate: give sentences ("A man is riding a bike.") '
                             "or --input FILE")
        results = translator.translate(
            sentences, beam_width=beam_width, length_penalty=length_penalty, num_return=n_best,
            batch_size=loaded.config.batch_size,
        )
        lines = results if n_best == 1 else [
            f"{index + 1}\t{rank + 1}\t{score:.4f}\t{translation}"
            for index, hypotheses in enumerate(results)
            for rank, (translation, score) in enumerate(hypotheses)
        ]
        path = Path(output) if output else None
        if path:
            write_text_atomic(path, "".join(line + "\n" for line in lines))
        return ActionResult(summary="\n".join(lines + ([f"written to {path}"] if path else [])),
                            path=path)


PIPELINE = TranslatePipeline()
TASK = PIPELINE.task()
# The actions as functions, for use from Python: `train(TranslateConfig(...))`.
train, evaluate, predict, export = TASK.train, TASK.evaluate, TASK.predict, TASK.export
