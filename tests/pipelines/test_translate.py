"""Tests of pipelines/translate.py: tiny data made here, tiny models, one short CLI training."""

import gzip
import itertools
import json
import types

import keras
import numpy as np
import pytest
import tensorflow as tf

from seqlab import cli
from seqlab.data import datasets
from seqlab.data.translation import END_ID, START_ID, UNK_ID, Vocabulary, load_data, tokenize
from seqlab.models import Translator
from seqlab.pipelines.common import UsageError
from seqlab.pipelines.translate import (
    PIPELINE,
    EvaluateOptions,
    PredictOptions,
    TranslateConfig,
    text_translator,
    train,
)

ADJECTIVES = {"red": "rote", "small": "kleine", "old": "alte", "happy": "frohe"}
NOUNS = {"dog": "Hund", "man": "Mann", "cat": "Katze"}
VERBS = {"runs": "läuft", "sleeps": "schläft", "sings": "singt"}


def toy_pairs():
    """36 pairs of a word-for-word toy language: "The red dog runs." -> "Der rote Hund läuft."."""
    return [
        (f"The {a} {n} {v}.", f"Der {ADJECTIVES[a]} {NOUNS[n]} {VERBS[v]}.")
        for a, n, v in itertools.product(ADJECTIVES, NOUNS, VERBS)
    ]


def tiny_translator(kind):
    """An untrained model of `kind` and its text translator (vocabularies of 12 and 14 ids)."""
    config = TranslateConfig(model=kind, embedding_dim=8, units=8, layers=2, num_heads=2,
                             ff_dim=8, dropout=0.0, max_length=12)
    vocabularies = {"source_vocabulary": Vocabulary([f"s{i}" for i in range(8)]),
                    "target_vocabulary": Vocabulary([f"t{i}" for i in range(10)])}
    return text_translator(PIPELINE.model_for_run(config, vocabularies), vocabularies)


# Settings


def test_config_refuses_contradictory_or_bad_settings():
    with pytest.raises(ValueError, match="--src and --tgt go together"):
        TranslateConfig(src="a.en")
    with pytest.raises(ValueError, match="give either --data or --src/--tgt, not both"):
        TranslateConfig(src="a.en", tgt="a.de", data="pairs.tsv")
    with pytest.raises(ValueError, match="beam_width must be at least 1. Received: beam_width=0"):
        TranslateConfig(beam_width=0)
    with pytest.raises(ValueError, match="embedding_dim must be divisible by num_heads"):
        TranslateConfig(embedding_dim=10, num_heads=4)
    with pytest.raises(ValueError, match="tsv_columns must be two different 1-based column"):
        TranslateConfig(tsv_columns=[2, 2])
    with pytest.raises(ValueError, match="max_length must be at least 2. Received: max_length=1"):
        TranslateConfig(max_length=1)
    with pytest.raises(ValueError, match="dropout must lie in \\[0, 1\\). Received: dropout=1"):
        TranslateConfig(dropout=1)


# Text in, text out


def test_text_goes_through_the_vocabularies_and_empty_text_translates_to_empty_text():
    translator = tiny_translator("gru-attention")
    ids = translator.source_ids(tf.constant(["s1 s2", "", "unseen"])).numpy()
    assert ids.shape == (3, 2) and ids[1].tolist() == [0, 0] and ids[2, 0] == 1  # [UNK]
    assert translator.to_text(tf.constant([[5, 6, 3, 7]])).numpy().tolist() == [b"t1t2"]
    translations, scores = translator.decode_texts(tf.constant(["", "  ", "s1 s2"]), 2, 0.6)
    assert translations.shape == (3, 1) and scores.shape == (3, 1)
    assert translations.numpy()[:2, 0].tolist() == [b"", b""]
    greedy = translator.translate(["s1 s2", "s3"])
    assert greedy == translator.translate(["s1 s2", "s3"], beam_width=1, length_penalty=0.0)


def test_the_runs_tokenizer_makes_the_ids_and_the_text():
    vocabulary = Vocabulary.build(tokenize(["A dog runs."]))
    model = Translator(len(vocabulary), len(vocabulary), embedding_dim=8, layers=1,
                       num_heads=2, ff_dim=8, max_length=12)
    translator = text_translator(model, {"source_vocabulary": vocabulary,
                                         "target_vocabulary": vocabulary})
    ids = translator.source_ids(tf.constant(["A dog runs.", "", "A cat"]))
    assert ids.dtype == tf.int32 and ids.shape == (3, 4) and ids.numpy()[2, 1] == UNK_ID
    assert ids.numpy()[1].tolist() == [0, 0, 0, 0]
    assert translator.source_ids(tf.constant(["", " "])).shape == (2, 1)
    output = tf.concat([ids[:1], [[END_ID]], ids[:1]], axis=1)
    assert translator.to_text(output).numpy().tolist() == [b"A dog runs."]
    # Detokenised with the space marks; cut at [END], [START] and padding left out.
    german = Vocabulary(["Ein", "▁Hund", ".", "▁x", "Ja"])
    model = Translator(len(german), len(german), embedding_dim=8, layers=1, num_heads=2,
                       ff_dim=8, max_length=12)
    translator = text_translator(model, {"source_vocabulary": german,
                                         "target_vocabulary": german})
    output = tf.constant([[4, 5, 6, END_ID, 7], [START_ID, 8, 0, 0, 0]])
    assert translator.to_text(output).numpy().tolist() == [b"Ein Hund.", b"Ja"]
    source_tokens, output_tokens, weights = translator.attention("Ein Hund.")
    assert source_tokens == ["Ein", "▁Hund", "."]
    assert weights.shape == (len(output_tokens), 3)


# The command line, end to end


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    folder = tmp_path_factory.mktemp("translate")
    pairs = toy_pairs()
    (folder / "pairs.tsv").write_text(
        "".join(f"{en}\t{de}\tattribution\n" for en, de in pairs), encoding="utf-8"
    )
    run = folder / "run"
    status = cli.main([
        "translate", "train", "--data", str(folder / "pairs.tsv"), "--out", str(run),
        "--epochs", "2", "--batch-size", "8", "--embedding-dim", "16", "--layers", "1",
        "--num-heads", "2", "--ff-dim", "16", "--learning-rate", "0.01", "--beam-width", "2",
        "--attention-plots", "1", "--val-fraction", "0.15", "--test-fraction", "0.15",
    ])
    assert status == 0
    return folder, run, pairs


def test_train_writes_a_complete_run_directory_with_bleu_and_chrf(trained, capsys):
    folder, run, _ = trained
    for name in ("config.json", "metrics.json", "history.csv", "model.keras",
                 "source_vocabulary.txt", "target_vocabulary.txt", "plots/loss.png",
                 "plots/attention_1.png", "saved_model/saved_model.pb"):
        assert (run / name).is_file(), name
    assert not (run / "checkpoints").exists()
    metrics = json.loads((run / "metrics.json").read_text())
    assert set(metrics) == {"test", "validation_loss", "epochs_run", "best_epoch",
                            "train_seconds_this_session", "distribution", "data", "training"}
    assert metrics["epochs_run"] == 2 and metrics["best_epoch"] in (1, 2)
    assert isinstance(keras.saving.load_model(run / "model.keras"), Translator)
    figures = metrics["test"]["test"]
    assert figures["sentences"] == 5
    for decoding in ("greedy", "beam"):
        assert 0 <= figures[decoding]["bleu"] <= 100 and 0 <= figures[decoding]["chrf"] <= 100
        assert figures[decoding]["bleu_signature"].startswith("nrefs:1|case:mixed|eff:no|tok:13a")
    assert figures["beam"]["beam_width"] == 2
    assert metrics["data"]["pairs"] == {"train": 26, "val": 5, "test": 5}
    assert "▁Hund" in (run / "target_vocabulary.txt").read_text(encoding="utf-8").splitlines()
    history = [line.split(",") for line in (run / "history.csv").read_text().splitlines()]
    loss = history[0].index("loss")
    assert len(history) == 3 and float(history[2][loss]) < float(history[1][loss])
    # The kept weights are the best epoch's (early stopping restores them).
    best_val_loss = float(history[metrics["best_epoch"]][history[0].index("val_loss")])
    assert metrics["validation_loss"] == pytest.approx(best_val_loss, rel=1e-4)


def test_saved_model_beam_search_equals_the_python_path(trained):
    _, run, pairs = trained
    loaded = PIPELINE.load_run(run)
    config = loaded.config
    translator = text_translator(loaded.model, loaded.artifacts)
    texts = [pairs[0][0], "The happy cat sings.", "", "A word it has never seen!"]
    expected = translator.translate(texts, beam_width=config.beam_width,
                                    length_penalty=config.length_penalty)
    serve = tf.saved_model.load(str(run / "saved_model")).signatures["serving_default"]
    output = serve(text=tf.constant(texts))["translation"].numpy()
    assert [t.decode("utf-8") for t in output] == expected
    assert expected[2] == ""


def test_predict_evaluate_and_export_from_the_command_line(trained, capsys):
    folder, run, pairs = trained
    (folder / "input.txt").write_text("The red dog runs.\n\nThe old man sleeps.\n",
                                      encoding="utf-8")
    capsys.readouterr()
    assert cli.main(["translate", "predict", "--run", str(run), "A man is riding a bike.",
                     "--input", str(folder / "input.txt"), "--output",
                     str(folder / "out.txt"), "--beam-width", "2", "--n-best", "2"]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert [line.split("\t")[:2] for line in printed[:8]] == [
        [str(i), str(r)] for i in range(1, 5) for r in (1, 2)
    ]
    assert len((folder / "out.txt").read_text(encoding="utf-8").splitlines()) == 8

    # A TSV of pairs (the training file's format) is translated by its source column, not
    # whole (the reference after the tab was read as part of the sentence).
    tsv = folder / "three.tsv"
    tsv.write_text("".join(f"{en}\t{de}\n" for en, de in pairs[:3]), encoding="utf-8")
    assert cli.main(["translate", "predict", "--run", str(run), "--data", str(tsv),
                     "--beam-width", "1"]) == 0
    from_tsv = capsys.readouterr().out
    assert cli.main(["translate", "predict", "--run", str(run), *(en for en, _ in pairs[:3]),
                     "--beam-width", "1"]) == 0
    assert from_tsv == capsys.readouterr().out and len(from_tsv.splitlines()) == 3

    (folder / "test.en").write_text("".join(en + "\n" for en, _ in pairs[:4]), encoding="utf-8")
    (folder / "test.de").write_text("".join(de + "\n" for _, de in pairs[:4]), encoding="utf-8")
    assert cli.main(["translate", "evaluate", "--run", str(run), "--src",
                     str(folder / "test.en"), "--tgt", str(folder / "test.de"), "--output",
                     str(folder / "figures.json")]) == 0
    assert "BLEU signature: nrefs:1|case:mixed" in capsys.readouterr().out
    figures = json.loads((folder / "figures.json").read_text())["test"]["test"]
    assert figures["sentences"] == 4 and figures["beam"]["beam_width"] == 2

    assert cli.main(["translate", "export", "--run", str(run), "--out",
                     str(folder / "serving")]) == 0
    assert (folder / "serving" / "saved_model.pb").is_file()


def test_misaligned_files_are_reported_by_the_command_line(tmp_path, capsys):
    (tmp_path / "a.en").write_text("One.\nTwo.\n", encoding="utf-8")
    (tmp_path / "a.de").write_text("Eins.\n", encoding="utf-8")
    status = cli.main(["translate", "train", "--src", str(tmp_path / "a.en"), "--tgt",
                       str(tmp_path / "a.de"), "--out", str(tmp_path / "run")])
    assert status == 2
    error = capsys.readouterr().err
    assert f"{tmp_path / 'a.en'}, line 2: the aligned files have different line counts" in error
    status = cli.main(["translate", "train", "--data", str(tmp_path), "--out",
                       str(tmp_path.with_name(tmp_path.name + "-run"))])
    assert status == 2
    assert "is a folder: name the languages" in capsys.readouterr().err


def test_tsv_columns_without_a_tsv_are_refused(tmp_path, capsys):
    # They were ignored: --src/--tgt with --tsv-columns 2 1 trained en -> de all the same.
    (tmp_path / "a.en").write_text("One.\nTwo.\n", encoding="utf-8")
    (tmp_path / "a.de").write_text("Eins.\nZwei.\n", encoding="utf-8")
    run = tmp_path / "run"
    status = cli.main(["translate", "train", "--src", str(tmp_path / "a.en"), "--tgt",
                       str(tmp_path / "a.de"), "--tsv-columns", "2", "1", "--out", str(run)])
    assert status == 2
    assert ("--tsv-columns 2 1 is read only with a TSV --data (the columns of its source and "
            "target sentences), not with aligned --src/--tgt files") in capsys.readouterr().err
    assert not run.exists() and not (tmp_path / "run.partial").exists()
    status = cli.main(["translate", "train", "--data", str(tmp_path), "--src-lang", "en",
                       "--tgt-lang", "de", "--tsv-columns", "2", "1", "--out",
                       str(tmp_path.with_name(tmp_path.name + "-run"))])
    assert status == 2
    assert f"not with the folder {tmp_path}" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.de", "a.en"]


def test_tsv_columns_without_a_tsv_are_refused_before_tensorflow_loads_as_the_user_gave_them(
        tmp_path, monkeypatch, capsys):
    # A config file's `tsv_columns = [2, 1]` was named `--tsv-columns 2 1`, once TensorFlow had
    # loaded; a registered folder's name is judged by what it holds, not downloaded.
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(cli, "quiet_tensorflow", lambda debug=False: pytest.fail("loaded"))
    monkeypatch.setattr(datasets, "download", lambda name: pytest.fail("downloaded"))
    (tmp_path / "a.en").write_text("One.\nTwo.\n", encoding="utf-8")
    (tmp_path / "a.de").write_text("Eins.\nZwei.\n", encoding="utf-8")
    (tmp_path / "c.toml").write_text("tsv_columns = [2, 1]\n")
    assert cli.main(["translate", "train", "--src", "a.en", "--tgt", "a.de", "--config",
                     "c.toml"]) == 2
    assert capsys.readouterr().err == (
        "seqlab translate train: error: tsv_columns = [2, 1] in c.toml is read only with a TSV "
        "--data (the columns of its source and target sentences), not with aligned --src/--tgt "
        "files (each holds one language): to swap the direction, swap --src and --tgt (or "
        "--src-lang and --tgt-lang)\n")
    assert cli.main(["translate", "train", "--data", "multi30k", "--src-lang", "en",
                     "--tgt-lang", "de", "--tsv-columns", "2", "1"]) == 2
    assert "--tsv-columns 2 1 is read only with a TSV --data (the columns of its source and " \
        "target sentences), not with the folder multi30k" in capsys.readouterr().err


def test_decoding_options_are_checked_and_default_to_the_run():
    config = TranslateConfig(beam_width=4, length_penalty=0.6)
    assert PredictOptions().settings(config) == (4, 0.6)
    assert EvaluateOptions(beam_width=2, length_penalty=0.0).settings(config) == (2, 0.0)
    with pytest.raises(ValueError, match="beam_width must be at least 1. Received: beam_width=0"):
        PredictOptions(beam_width=0)
    with pytest.raises(ValueError, match="length_penalty must be at least 0"):
        EvaluateOptions(length_penalty=-0.5)


# Pretrained word vectors of the source language (--embeddings)


def write_pairs_and_vectors(folder):
    """The toy pairs as a TSV, and a gzip GloVe file (dimension 8, lower-cased words, values
    multiples of 1/32, exact in float32) of some source words; returns the vectors."""
    (folder / "pairs.tsv").write_text("".join(f"{en}\t{de}\n" for en, de in toy_pairs()),
                                      encoding="utf-8")
    rng = np.random.default_rng(0)
    vectors = {word: np.float32(rng.integers(-64, 64, 8) / 32)
               for word in ["the", "red", "dog", ".", "unseen"]}
    with gzip.open(folder / "vectors.txt.gz", "wt", encoding="utf-8") as handle:
        handle.writelines(f"{w} {' '.join(map(str, v))}\n" for w, v in vectors.items())
    return vectors


def test_frozen_source_vectors_in_the_encoder_and_the_exported_model(tmp_path):
    vectors = write_pairs_and_vectors(tmp_path)
    config = TranslateConfig(
        data=str(tmp_path / "pairs.tsv"), out=str(tmp_path / "run"), model="gru-attention",
        embedding_dim=None, units=8, epochs=1, batch_size=8, beam_width=2, attention_plots=0,
        embeddings=str(tmp_path / "vectors.txt.gz"), freeze_embeddings=True,
    )

    class SourceEmbeddingAtTrainBegin(keras.callbacks.Callback):
        def on_train_begin(self, logs=None):
            self.matrix = self.model.source_embedding.embeddings.numpy().copy()

    begin = SourceEmbeddingAtTrainBegin()
    result = train(config, callbacks=[begin])
    run = result.path
    loaded = PIPELINE.load_run(run)
    assert loaded.config.embedding_dim == 8  # the vectors' dimension
    tokens = loaded.artifacts["source_vocabulary"].tokens
    matrix = loaded.model.source_embedding.embeddings.numpy()
    np.testing.assert_array_equal(matrix, begin.matrix)  # frozen: bit-identical
    np.testing.assert_array_equal(matrix[0], np.zeros(8))
    # "The" finds "the" (case fallback), "▁red" finds "red" (no space mark).
    for token, word in (("The", "the"), ("▁red", "red"), ("▁dog", "dog"), (".", ".")):
        np.testing.assert_array_equal(matrix[tokens.index(token)], vectors[word])

    # Coverage by hand: every training source is "The <adjective> <noun> <verb>." (5 tokens);
    # "The" and "." are in the file, and "▁red", "▁dog" in the pairs that hold them.
    train_sources = load_data(config.data, val_fraction=config.val_fraction,
                              test_fraction=config.test_fraction, seed=config.seed).train.sources
    found = sum(2 + ("red" in en) + ("dog" in en) for en in train_sources)
    report = result.metrics["embeddings"]
    assert report["training_tokens"] == {"tokens": 5 * len(train_sources), "found": found,
                                         "share": found / (5 * len(train_sources))}
    assert report["vocabulary"]["found"] == 4 and report["found_by_case_fallback"] == 1
    assert report["vocabulary"]["words"] == len(tokens) - 4

    texts = ["The red dog runs.", "The happy cat sings."]
    expected = text_translator(loaded.model, loaded.artifacts).translate(
        texts, beam_width=2, length_penalty=config.length_penalty)
    serve = tf.saved_model.load(str(run / "saved_model")).signatures["serving_default"]
    assert [t.decode("utf-8") for t in serve(text=tf.constant(texts))["translation"].numpy()] \
        == expected


def test_a_transformer_width_from_the_vectors_that_the_heads_do_not_divide_is_refused(
        tmp_path):
    write_pairs_and_vectors(tmp_path)
    config = TranslateConfig(data=str(tmp_path / "pairs.tsv"), out=str(tmp_path / "run"),
                             model="transformer", num_heads=3,
                             embeddings=str(tmp_path / "vectors.txt.gz"))
    with pytest.raises(UsageError, match=r"embedding_dim must be divisible by num_heads for "
                                         r"the transformer. Received: embedding_dim=8, "
                                         r"num_heads=3 \(embedding_dim=8: the dimension of "):
        train(config)
    assert not (tmp_path / "run").exists() and not (tmp_path / "run.partial").exists()


def test_the_default_max_length_holds_the_longest_training_pair():
    # A fixed 64 left out the long pairs of a corpus of joined sentences (19 % of them) and cut
    # every test translation at 63 tokens.
    from seqlab.pipelines.translate import default_max_length

    def SentencePairs(sources, targets):  # noqa: N802 - the two fields it reads
        return types.SimpleNamespace(sources=sources, targets=targets)

    short = SentencePairs(["A dog runs ."], ["Ein Hund rennt ."])
    assert default_max_length(short) == (64, "the longest training pair has 6 tokens (with "
                                             "[START] and [END]), at least 64")
    words = " ".join(["word"] * 99)
    long = SentencePairs(["A dog runs .", words], ["Ein Hund .", words + " !"])
    value = default_max_length(long)[0]
    assert value == 102  # 100 target tokens, [START] and [END]
    # It had been 101, from which `generate` chooses at most 99 tokens (the decoder reads
    # [START] and every chosen token, [END] included): the longest target could not come out.
    model = Translator(6, 6, max_length=value, embedding_dim=4, num_heads=1, ff_dim=4,
                       layers=1)
    model.generate(np.full([1, 3], 5), max_length=1)  # builds it
    bias = model.output_projection.bias
    bias.assign(tf.tensor_scatter_nd_update(bias, [[END_ID]], [-1e4]))  # [END] only at the end
    tokens = model.generate(np.full([1, 3], 5), max_length=10**6)
    assert tokens.shape == (1, 100 + 1)  # 100 tokens at most, then [END]
    longest = SentencePairs([" ".join(["w"] * 300)], ["x"])
    value, why = default_max_length(longest)
    assert value == 256 and "capped at 256: longer pairs are left out" in why


def test_the_first_line_says_how_many_training_pairs_were_trained_on(tmp_path, capsys):
    # It counted every pair read (315), those left out for length only on a later line.
    # The toy pairs themselves, not `trained` (of which it read only its pairs, toy_pairs()):
    # run alone, the test trained that run too.
    pairs = toy_pairs()
    long = [(f"{en} {en} {en}", f"{de} {de} {de}") for en, de in pairs[:8]]
    (tmp_path / "pairs.tsv").write_text(
        "".join(f"{en}\t{de}\n" for en, de in pairs + long), encoding="utf-8")
    capsys.readouterr()
    assert cli.main([
        "translate", "train", "--data", str(tmp_path / "pairs.tsv"), "--out", str(tmp_path / "r"),
        "--epochs", "1", "--batch-size", "8", "--embedding-dim", "8", "--layers", "1",
        "--num-heads", "2", "--ff-dim", "8", "--max-length", "8", "--attention-plots", "0",
        "--val-fraction", "0.15", "--test-fraction", "0.15"]) == 0
    metrics = json.loads((tmp_path / "r" / "metrics.json").read_text())["data"]
    skipped = metrics["skipped_longer_than_max_length"]["train"]
    assert skipped > 0
    first = capsys.readouterr().out.splitlines()
    summary = next(line for line in first if line.startswith("translate: "))
    assert (f"{metrics['pairs']['train']} training pairs "
            f"({metrics['pairs']['train'] - skipped} trained on)") in summary


def test_pairs_with_an_empty_side_are_left_out_and_said_in_train_and_evaluate(trained, tmp_path,
                                                                             capsys):
    # Europarl's aligned files have many empty lines: each was refused in turn ("empty line;
    # every line must hold a sentence"); such pairs are left out, counted and named.
    _, run, pairs = trained
    lines = [pair if k % 5 else ("", pair[1]) for k, pair in enumerate(pairs)]
    (tmp_path / "pairs.tsv").write_text("".join(f"{en}\t{de}\n" for en, de in lines) + "\n",
                                        encoding="utf-8")
    capsys.readouterr()
    assert cli.main([
        "translate", "train", "--data", str(tmp_path / "pairs.tsv"), "--out", str(tmp_path / "r"),
        "--epochs", "1", "--batch-size", "8", "--embedding-dim", "8", "--layers", "1",
        "--num-heads", "2", "--ff-dim", "8", "--attention-plots", "0"]) == 0
    data = json.loads((tmp_path / "r" / "metrics.json").read_text())["data"]
    report = {"file": str(tmp_path / "pairs.tsv"), "count": 9, "first": [1, 6, 11, 16, 21]}
    assert data["left_out_empty_side"] == {"train": report}
    assert sum(data["pairs"].values()) == 36 - 8
    assert (f"left out (a side empty): 9 pairs of {tmp_path / 'pairs.tsv'}, lines 1, 6, 11, 16, "
            "21 and 4 more") in capsys.readouterr().out.splitlines()

    (tmp_path / "test.en").write_text("".join(en + "\n" for en, _ in pairs[:4]) + "\n",
                                      encoding="utf-8")
    (tmp_path / "test.de").write_text("".join(de + "\n" for _, de in pairs[:3]) + "\n\n",
                                      encoding="utf-8")
    assert cli.main(["translate", "evaluate", "--run", str(run), "--src",
                     str(tmp_path / "test.en"), "--tgt", str(tmp_path / "test.de"), "--output",
                     str(tmp_path / "figures.json")]) == 0
    assert (f"left out (a side empty): 2 pairs of {tmp_path / 'test.en'} + "
            f"{tmp_path / 'test.de'}, lines 4, 5") in capsys.readouterr().out.splitlines()
    figures = json.loads((tmp_path / "figures.json").read_text())
    assert figures["test"]["test"]["sentences"] == 3
    assert figures["left_out_empty_side"]["test"]["count"] == 2
