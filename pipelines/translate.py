"""Seq2seq translation: a GRU encoder-decoder with additive attention, or a Transformer.

`train` reads and splits sentence pairs (aligned files, a folder of aligned split files, a TSV
of pairs, or without data the embedded English -> German smoke-test sample), builds a vocabulary
of reversible tokens per language on the training split (all in data/translation.py), and fits
a `seqlab.models.Translator` with teacher forcing (padding carries no loss). The test split is
scored with sacrebleu (BLEU with its signature, and chrF) on detokenised output against the raw
reference lines, greedy and beam (pipelines/metrics.py). Text in, text out (decoding, attention
plot data, the SavedModel) is `seqlab.models.translator.TextTranslator`.

The run directory holds, besides the common files (pipelines/lifecycle.py):
`source_vocabulary.txt` and `target_vocabulary.txt` (one token per line; ids 0-3 are padding,
[UNK], [START], [END] and are not written), `plots/loss.png`, `plots/attention_<n>.png` (the
attention of a few validation sentences), and `saved_model/` with `serving_default(text:
string[None]) -> {"translation": string[None]}`: tokenising, beam search (the run's
`beam_width` and `length_penalty`) and detokenising all inside the graph.
"""

import dataclasses
from pathlib import Path

import keras
import numpy as np

from seqlab.data.datasets import resolve_path
from seqlab.data.embeddings import PretrainedEmbeddings, pretrained_embeddings
from seqlab.data.translation import (
    END_ID, PAD_ID, START_ID, PreparedPairs, Vocabulary, detokenize, left_out_line, load_data,
    read_sources, read_test_pairs, token_text, tokenize, within_max_length,
)
from seqlab.models import Translator
from seqlab.models.translator import MAX_INPUT_TOKENS, TextTranslator
from seqlab.pipelines.common import (
    ActionResult, UsageError, overlap_line, plural, pyplot, save_figure, write_export_archive,
    write_text_atomic,
)
from seqlab.pipelines.configs.translate import (
    CARD,
    TASK_NAME,
    EvaluateOptions,
    PredictOptions,
    TranslateConfig,
    check_sources,
)
from seqlab.pipelines.lifecycle import Pipeline, evaluation_result
from seqlab.pipelines.metrics import (
    translation_examples, translation_figures, translation_table,
)
from seqlab.pipelines.settings import fill_in_setting, make_config



def _reading(config, data):
    """The arguments of data/translation.py's readers for `data` (`--data` or a file given to
    evaluate) in the run's settings; a folder needs the languages of its files."""
    folder = data is not None and resolve_path(data).is_dir()  # a name may stand for a folder
    if folder and not (config.src_lang and config.tgt_lang):
        raise UsageError(
            f"--data {data} is a folder: name the languages of its aligned files with "
            "--src-lang and --tgt-lang (train.<src-lang>, train.<tgt-lang>, ...) when "
            "training, or score aligned files with --src and --tgt"
        )
    return {"languages": (config.src_lang, config.tgt_lang), "columns": config.tsv_columns}


def _load_data(config):
    """The run's splits, unencoded (`data.translation.load_data`)."""
    return load_data(config.data, config.src, config.tgt, val_fraction=config.val_fraction,
                     test_fraction=config.test_fraction, seed=config.seed,
                     **_reading(config, config.data))


@dataclasses.dataclass
class PreparedTranslation:
    """What `train` works from: the encoded pairs and, once scored, the test sets' translations
    (`{test set name: {"greedy": [str], "beam": [str]}}`) that the summary shows."""

    pairs: PreparedPairs
    examples: dict = dataclasses.field(default_factory=dict)
    embeddings: PretrainedEmbeddings | None = None
    max_length_source: str = "--max-length"


# `default_max_length`'s bounds: short sentences keep room to grow in an output, and the
# longest pair of a corpus of documents does not make every attention matrix huge.
MIN_DEFAULT_LENGTH, MAX_DEFAULT_LENGTH = 64, 256


def default_max_length(train):
    """`(max_length, why)` from the training pairs: the most tokens of a source, or of a target
    with its [START] and [END], within `MIN_DEFAULT_LENGTH` and `MAX_DEFAULT_LENGTH`. So no
    training pair is left out, and `generate` (at most `max_length - 2` tokens, as the decoder
    reads [START] and each token it chose, the last [END] included) can produce every
    training target."""
    longest = max([len(tokens) for tokens in tokenize(train.sources)]
                  + [len(tokens) + 2 for tokens in tokenize(train.targets)], default=0)
    chosen = min(max(longest, MIN_DEFAULT_LENGTH), MAX_DEFAULT_LENGTH)
    if longest > MAX_DEFAULT_LENGTH:
        why = (f"the longest training pair has {longest} tokens (with [START] and [END]); "
               f"capped at {MAX_DEFAULT_LENGTH}: longer pairs are left out, --max-length "
               "keeps them")
    else:
        why = (f"the longest training pair has {longest} tokens (with [START] and [END])"
               + (f", at least {MIN_DEFAULT_LENGTH}" if longest < MIN_DEFAULT_LENGTH else ""))
    return chosen, why


def read_embeddings(config, pairs):
    """The `PretrainedEmbeddings` of `--embeddings` for the source vocabulary of the encoded
    `pairs` (None without): a token is looked up without its space mark ("▁dog" as "dog"), as
    it is, then in other case. Coverage is counted on the training sources; an unset
    `--embedding-dim` becomes the vectors' dimension."""
    if config.embeddings is None:
        return None
    vocabulary = pairs.source_vocabulary.tokens
    counts = np.bincount(pairs.train_ids.source_ids.flat_values.numpy(),
                         minlength=len(vocabulary))
    embeddings = pretrained_embeddings(
        config.embeddings, [token_text(token) for token in vocabulary], counts,
        first_word_id=len(Vocabulary.RESERVED), dimension=config.embedding_dim,
        setting="--embedding-dim",
    )
    if config.embedding_dim is None:
        fill_in_setting(config, "embedding_dim", embeddings.dimension,
                        f"the dimension of {embeddings.path}")
    return embeddings


# ---------------------------------------------------------------------------------------------
# Text in, text out, and the attention plots


def text_translator(model, artifacts):
    """The `TextTranslator` of a run's model and its vocabularies (`artifacts`), with the
    tokenizer that made them."""
    return TextTranslator(model, artifacts["source_vocabulary"].tokens,
                          artifacts["target_vocabulary"].tokens, tokenize, detokenize)


def save_attention_plots(translator, pairs, count, folder):
    """Heatmaps of the greedy translation's attention for the first `count` pairs."""
    plt = pyplot()
    for index in range(min(count, len(pairs))):
        source_tokens, output_tokens, weights = translator.attention(pairs.sources[index])
        source_tokens = [token_text(t) for t in source_tokens] or ["(empty)"]
        output_tokens = [token_text(t) for t in output_tokens]
        figure, axis = plt.subplots(
            figsize=(1.8 + 0.45 * len(source_tokens), 1.2 + 0.4 * len(output_tokens))
        )
        image = axis.imshow(weights[:, : len(source_tokens)], cmap="viridis", vmin=0.0,
                            vmax=1.0, aspect="auto")
        figure.colorbar(image, ax=axis, label="attention weight")
        axis.set_xticks(range(len(source_tokens)), source_tokens, rotation=60, ha="right")
        axis.set_yticks(range(len(output_tokens)), output_tokens)
        axis.set(xlabel="source", ylabel="output (greedy)")
        axis.set_title(f"attention, validation sentence {index + 1}", fontsize=9)
        figure.tight_layout()
        save_figure(figure, Path(folder) / f"attention_{index + 1}.png")


# ---------------------------------------------------------------------------------------------
# The task


class TranslatePipeline(Pipeline):
    """Translation on the shared run lifecycle (pipelines/lifecycle.py)."""

    name = CARD.name
    config_class = TranslateConfig
    model_class = Translator
    data_paths = ("data", "src", "tgt")
    model_files = vocabulary_files = ("source_vocabulary.txt", "target_vocabulary.txt")
    description = CARD.description
    examples = CARD.examples
    evaluate_options = EvaluateOptions
    predict_options = PredictOptions

    def prepare(self, config, distribution):
        data = _load_data(config)
        if config.max_length is None:
            value, length_source = default_max_length(data.train)
            fill_in_setting(config, "max_length", value, length_source)
        else:
            length_source = "--max-length"
        pairs = data.encode(
            config.min_count, config.max_vocabulary, config.max_length,
            distribution.global_batch_size(config.batch_size), max_test_tokens=MAX_INPUT_TOKENS,
        )
        return PreparedTranslation(pairs, embeddings=read_embeddings(config, pairs),
                                   max_length_source=length_source)

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
        if prepared.embeddings is not None:
            # Before fit: a resumed run's BackupAndRestore then puts its own weights over them.
            prepared.embeddings.copy_into(model.source_embedding, config.freeze_embeddings)
        total_steps = prepared.pairs.batches * config.epochs
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
        return prepared.pairs.datasets(batch_size, config.seed)

    def score(self, config, model, prepared):
        pairs = prepared.pairs
        translator = text_translator(model, self.artifacts(config, prepared))
        test_figures = {}
        for name, test_pairs in pairs.tests.items():
            test_figures[name], prepared.examples[name] = translation_figures(
                translator.translate, test_pairs, config.beam_width, config.length_penalty,
                config.batch_size,
            )
        return {
            "test": test_figures,
            # Of the weights kept (early stopping restores the best epoch's).
            "validation_loss": float(
                model.evaluate(pairs.val_dataset(config.batch_size), verbose=0)
            ),
            "data": pairs.report(),
            **({"embeddings": prepared.embeddings.report(config.freeze_embeddings)}
               if prepared.embeddings is not None else {}),
        }

    def artifacts(self, config, prepared):
        return {"source_vocabulary": prepared.pairs.source_vocabulary,
                "target_vocabulary": prepared.pairs.target_vocabulary}

    def write_artifacts(self, run, artifacts):
        for name, vocabulary in artifacts.items():
            run.write_text(f"{name}.txt", vocabulary.to_text())  # atomically

    def read_artifacts(self, path, config):
        return {name: Vocabulary.load(path / f"{name}.txt")
                for name in ("source_vocabulary", "target_vocabulary")}

    def save_plots(self, run, config, prepared, model, metrics, history):
        translator = text_translator(model, self.artifacts(config, prepared))
        save_attention_plots(translator, prepared.pairs.val, config.attention_plots,
                             run.path("plots"))

    def export_model(self, model, config, artifacts, path):
        archive = text_translator(model, artifacts).export_archive(config.beam_width,
                                                                   config.length_penalty)
        write_export_archive(archive, Path(path))
        return (
            "serving_default(text: string[None]) -> {'translation': string[None]} "
            f"(beam search, width {config.beam_width}, length penalty {config.length_penalty})"
        )

    def summary_lines(self, config, prepared, metrics):
        data, first_test = metrics["data"], next(iter(prepared.pairs.tests))
        skipped = data["skipped_longer_than_max_length"]
        trained = data["pairs"]["train"] - skipped["train"]
        lines = [f"{TASK_NAME}: {data['source']}, {config.model}, {data['pairs']['train']} "
                 f"training pairs" + (f" ({trained} trained on)" if skipped["train"] else "")
                 + f", vocabularies {data['vocabulary']['source']} / "
                 f"{data['vocabulary']['target']}, "
                 f"{plural(metrics['epochs_run'], 'epoch')} "
                 f"({metrics['train_seconds_this_session']:.0f} s)",
                 *([prepared.embeddings.summary_line(config.freeze_embeddings)]
                   if prepared.embeddings is not None else []),
                 translation_table(metrics["test"]), *data["splits"],
                 f"max_length {config.max_length}: {prepared.max_length_source}"]
        lines += [left_out_line(report)
                  for report in data.get("left_out_empty_side", {}).values()]
        if skipped["train"] or skipped["val"]:
            lines.append(f"left out (longer than max_length={config.max_length} tokens): "
                         f"{skipped['train']} training and {skipped['val']} validation pairs")
        overlap, pairs = data["also_in_training"], data["pairs"]
        for name in prepared.pairs.tests:
            if overlap[name]:
                val = overlap["val"] if name == first_test else 0
                lines.append(overlap_line(overlap[name], pairs[name], val, pairs["val"],
                                          "sources", test_name=name))
        if skipped.get("test"):
            lines.append(f"left out of the test split (sources longer than {MAX_INPUT_TOKENS} "
                         f"tokens, the most the model translates): {skipped['test']} pairs")
        return [*lines, f"examples ({first_test}):",
                *translation_examples(prepared.pairs.tests[first_test],
                                      prepared.examples[first_test])]

    def _load(self, run, options):
        loaded = self.load_run(run)
        settings = options.settings(loaded.config)
        return loaded, text_translator(loaded.model, loaded.artifacts), settings

    def evaluate(self, run, data=None, output=None, **options):
        """Scores a run with sacreBLEU, greedy and beam (`EvaluateOptions`: beam_width,
        length_penalty, default the run's), on aligned files `src` / `tgt`, a TSV of pairs (the
        run's `tsv_columns`), a folder's `test*` files (the run's languages), or by default the
        run's test split(s); the figures also go to the JSON file `output` when given."""
        options = make_config(EvaluateOptions, flag_values=options)
        src, tgt = options.src, options.tgt
        loaded, translator, (beam_width, length_penalty) = self._load(run, options)
        config = loaded.config
        check_sources(data, src, tgt, UsageError)
        if src is None and data is None:
            tests = _load_data(config).tests
        else:
            tests = read_test_pairs(data, src, tgt, **_reading(config, data))
        empty = {name: report for name, pairs in tests.items()
                 if (report := pairs.empty_report()) is not None}
        figures, skipped = {}, 0
        for name, pairs in tests.items():
            pairs, left_out = within_max_length(pairs, MAX_INPUT_TOKENS)
            skipped += left_out
            figures[name] = translation_figures(translator.translate, pairs, beam_width,
                                                length_penalty, config.batch_size)[0]
        source = src or data or "the run's test split"
        summary = [f"{TASK_NAME}: {source}", translation_table(figures),
                   *map(left_out_line, empty.values())]
        if skipped:
            summary.append(f"left out (sources longer than {MAX_INPUT_TOKENS} tokens, the most "
                           f"the model translates): {skipped} pairs")
        return evaluation_result(summary, {"test": figures,
                                           **({"left_out_empty_side": empty} if empty else {})},
                                 output)

    def predict(self, run, data=None, output=None, **options):
        """Translates `texts` and the lines of the UTF-8 file `input` (or `data`, every task's
        flag; a TSV of pairs: its source column, the run's `tsv_columns`), with beam search
        (`PredictOptions`; default: the run's settings); `n_best` > 1 prints that many
        hypotheses per sentence with their scores. `output`: also write them there."""
        options = make_config(PredictOptions, flag_values=options)
        texts, input, n_best = options.texts, options.input, options.n_best
        loaded, translator, (beam_width, length_penalty) = self._load(run, options)
        if input is not None and data is not None:
            raise UsageError("give the sentences file with --input (or --data), not both")
        if not 1 <= n_best <= beam_width:
            raise UsageError(f"--n-best must lie between 1 and --beam-width={beam_width}. "
                             f"Received: {n_best}")
        input = input if input is not None else data
        sentences = list(texts or []) + (
            [] if input is None else read_sources(input, loaded.config.tsv_columns[0]))
        if not sentences:
            raise UsageError('nothing to translate: give sentences ("A man is riding a bike.") '
                             "or --input FILE")
        lengths = tokenize(sentences).row_lengths().numpy()
        too_long = next((index for index, length in enumerate(lengths)
                         if length > MAX_INPUT_TOKENS), None)
        if too_long is not None:
            where = (f"sentence {too_long + 1}" if too_long < len(texts or [])
                     else f"{input}: line {too_long - len(texts or []) + 1}")
            raise UsageError(f"{where} has {lengths[too_long]} tokens; the model translates at "
                             f"most {MAX_INPUT_TOKENS} (as its SavedModel): split it into "
                             "sentences")
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
