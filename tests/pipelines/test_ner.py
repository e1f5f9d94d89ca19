"""Tests of pipelines/ner.py on tiny CoNLL files written here (tiny models, 1-2 epochs)."""

import contextlib
import io
import json

import keras
import numpy as np
import pytest
import tensorflow as tf

from seqlab import cli
from seqlab.data.conll import Sentence, TaggingVocabulary, encode_sentences, make_tagging_dataset
from seqlab.models import SequenceTagger
from seqlab.pipelines.metrics import entity_scores
from seqlab.pipelines.ner import (
    NerConfig,
    build_model,
    fit_inputs,
    predict_tags,
    read_splits,
    train,
)

PEOPLE = ["Alice", "Bob", "Carol Smith", "Dmitri", "Eve Jones"]
PLACES = ["Paris", "Rome", "New York", "Oslo", "Cape Town"]
COMPANIES = ["Acme Corp", "Globex", "Initech"]
TEMPLATES = [
    "{PER} lives in {LOC} .",
    "{PER} works for {ORG} in {LOC} .",
    "{ORG} hired {PER} .",
    "we met {PER} near {LOC} today",
    "nothing happened here .",
]


def tiny_sentences(count, seed):
    """Tagged template sentences: (tokens, BIO tags) pairs."""
    rng = np.random.default_rng(seed)
    fillers = {"PER": PEOPLE, "LOC": PLACES, "ORG": COMPANIES}
    sentences = []
    for _ in range(count):
        tokens, tags = [], []
        for piece in TEMPLATES[rng.integers(len(TEMPLATES))].split():
            if piece.startswith("{"):
                kind = piece[1:-1]
                words = fillers[kind][rng.integers(len(fillers[kind]))].split()
                tokens += words
                tags += [f"B-{kind}"] + [f"I-{kind}"] * (len(words) - 1)
            else:
                tokens.append(piece)
                tags.append("O")
        sentences.append((tokens, tags))
    return sentences


def write_conll(path, sentences):
    path.write_text(
        "\n\n".join("\n".join(f"{t}\t{g}" for t, g in zip(*s)) for s in sentences) + "\n",
        encoding="utf-8",
    )
    return path


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ner_data")
    write_conll(folder / "train.conll", tiny_sentences(48, seed=0))
    write_conll(folder / "dev.conll", tiny_sentences(12, seed=1))
    write_conll(folder / "test.conll", tiny_sentences(12, seed=2))
    return folder


TINY_FLAGS = ["--epochs", "1", "--units", "8", "--word-dim", "8", "--char-dim", "8",
              "--char-units", "4", "--batch-size", "16", "--learning-rate", "0.02",
              "--min-count", "1"]


def run_cli(argv):
    """`(exit status, stdout, stderr)` of `seqlab argv`."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = cli.main(argv)
    return status, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def crf_run(data_dir, tmp_path_factory):
    """A CRF tagger trained through the command line on the data directory."""
    out = tmp_path_factory.mktemp("ner_runs") / "crf"
    status, stdout, stderr = run_cli(
        ["ner", "train", "--data", str(data_dir), "--out", str(out), "--crf", *TINY_FLAGS]
    )
    assert status == 0, stderr
    return out, stdout


@pytest.fixture(scope="module")
def softmax_run(tmp_path_factory):
    """A softmax tagger with a CNN character encoder, trained on the embedded sample."""
    out = tmp_path_factory.mktemp("ner_runs") / "softmax"
    config = NerConfig(out=str(out), epochs=1, units=8, word_dim=8, char_dim=8, char_units=4,
                       char_encoder="cnn", batch_size=32, learning_rate=0.02)
    return train(config)


def test_cli_train_reports_entity_scores_and_writes_the_run(crf_run):
    out, stdout = crf_run
    assert "overall (micro)" in stdout and "conlleval-compatible" in stdout
    metrics = json.loads((out / "metrics.json").read_text())
    assert 0 <= metrics["f1"] <= 1 and metrics["decoder"] == "crf"
    assert metrics["epochs_run"] == 1 and metrics["best_epoch"] == 1
    assert set(metrics["per_type"]) == {"LOC", "ORG", "PER"}
    assert metrics["support"] == sum(row["support"] for row in metrics["per_type"].values())
    assert metrics["data"]["sentences"] == {"train": 48, "validation": 12, "test": 12}
    assert set(metrics["conlleval"]) == {"precision", "recall", "f1"}
    for name in ("config.json", "history.csv", "model.keras", "vocabulary.json",
                 "test_predictions.conll", "plots/loss.png", "saved_model/saved_model.pb"):
        assert (out / name).is_file(), name
    vocabulary = json.loads((out / "vocabulary.json").read_text())
    assert vocabulary["words"][:2] == ["[PAD]", "[UNK]"] and "alice" in vocabulary["words"]
    assert vocabulary["tags"] == ["O", "B-LOC", "I-LOC", "B-ORG", "I-ORG", "B-PER", "I-PER"]
    first_line = (out / "test_predictions.conll").read_text().splitlines()[0].split("\t")
    assert len(first_line) == 3


def test_the_embedded_sample_is_the_default(softmax_run):
    metrics = softmax_run.metrics
    assert "ner_sample.conll" in metrics["data"]["sources"]["test"]
    assert metrics["data"]["sentences"] == {"train": 256, "validation": 32, "test": 32}
    assert set(metrics["per_type"]) == {"LOC", "MISC", "ORG", "PER"}
    assert metrics["decoder"] == "softmax"


def serve_and_compare(run_dir):
    """The SavedModel's tags equal the in-process model's, padding rows with ""."""
    rows = [["Alice", "lives", "in", "New", "York", "."], ["Globex", "hired", "Zoë"],
            ["nothing"]]
    width = max(map(len, rows))
    padded = tf.constant([row + [""] * (width - len(row)) for row in rows])
    serving = tf.saved_model.load(str(run_dir / "saved_model")).signatures["serving_default"]
    assert serving.structured_input_signature[1]["tokens"].shape.as_list() == [None, None]
    served = serving(tokens=padded)["tags"].numpy().astype(str)

    model = keras.saving.load_model(run_dir / "model.keras")
    assert isinstance(model, SequenceTagger)
    vocabulary = TaggingVocabulary.from_dict(json.loads((run_dir / "vocabulary.json").read_text()))
    expected = predict_tags(model, vocabulary, [Sentence(row, None, []) for row in rows])
    for row, tags, served_row in zip(rows, expected, served):
        assert list(served_row[: len(row)]) == tags
        assert all(tag == "" for tag in served_row[len(row):])


def test_saved_model_matches_the_in_process_crf_model(crf_run):
    serve_and_compare(crf_run[0])


def test_saved_model_matches_the_in_process_softmax_model(softmax_run):
    serve_and_compare(softmax_run.path)


def test_cli_predict_prints_token_tag_pairs(crf_run, tmp_path):
    out = crf_run[0]
    status, stdout, _ = run_cli(["ner", "predict", "--run", str(out), "Einstein was born in Ulm"])
    assert status == 0
    pairs = [line.split("\t") for line in stdout.strip().splitlines()]
    tags = json.loads((out / "vocabulary.json").read_text())["tags"]
    assert [p[0] for p in pairs] == ["Einstein", "was", "born", "in", "Ulm"]
    assert all(p[1] in tags for p in pairs)

    lines = tmp_path / "sentences.txt"
    lines.write_text("Alice lives in Oslo .\nBob works for Globex\n", encoding="utf-8")
    status, stdout, _ = run_cli(["ner", "predict", "--run", str(out), "--input", str(lines),
                                 "--output", str(tmp_path / "tagged.conll")])
    assert status == 0 and "written to" in stdout
    blocks = (tmp_path / "tagged.conll").read_text().strip().split("\n\n")
    assert [len(b.splitlines()) for b in blocks] == [5, 4]

    status, _, stderr = run_cli(["ner", "predict", "--run", str(out)])
    assert status == 2 and "give either a sentence" in stderr


def test_cli_evaluate_rescoring_and_an_unknown_tag(crf_run, tmp_path):
    out = crf_run[0]
    status, stdout, _ = run_cli(["ner", "evaluate", "--run", str(out), "--output",
                                 str(tmp_path / "eval.json")])
    assert status == 0 and "overall (micro)" in stdout
    figures = json.loads((tmp_path / "eval.json").read_text())
    assert figures["f1"] == pytest.approx(json.loads((out / "metrics.json").read_text())["f1"])

    other = write_conll(tmp_path / "other.conll", [(["Ulm", "rocks"], ["B-CITY", "O"])])
    status, _, stderr = run_cli(["ner", "evaluate", "--run", str(out), "--data", str(other)])
    assert status == 2
    assert f"{other}, line 1: unknown tag 'B-CITY'" in stderr


def test_cli_reports_invalid_tags_by_line_and_repairs_them(data_dir, tmp_path):
    broken = tmp_path / "broken"
    broken.mkdir()
    invalid = [(["x", "Rome"], ["O", "I-LOC"])]
    write_conll(broken / "train.conll", tiny_sentences(20, seed=0) + invalid)
    status, _, stderr = run_cli(["ner", "train", "--data", str(broken), "--out",
                                 str(tmp_path / "run"), *TINY_FLAGS])
    assert status == 2
    assert "train.conll, line" in stderr and "I-LOC after O" in stderr
    splits = read_splits(NerConfig(data=str(broken), repair=True))
    assert splits.files[0]["repairs"][0].endswith("I-LOC after O read as B-LOC")
    status, _, stderr = run_cli(["ner", "train", "--dropout", "1.5"])
    assert status == 2 and "dropout=1.5" in stderr
    # One naming scheme across tasks: --min-count, as translate has it (0.1.0: --min-freq).
    with pytest.raises(SystemExit) as exit_info, contextlib.redirect_stderr(io.StringIO()) as err:
        cli.main(["ner", "train", "--min-freq", "1"])
    assert exit_info.value.code == 2 and "unrecognized arguments: --min-freq" in err.getvalue()


def test_read_splits_uses_the_config_files_fractions_seed_and_columns(data_dir, tmp_path):
    config = NerConfig(data=str(data_dir / "train.conll"), seed=3,
                       test_data=str(data_dir / "test.conll"))
    splits = read_splits(config)
    assert (len(splits.train), len(splits.validation), len(splits.test)) == (43, 5, 12)
    assert splits.sources["validation"].endswith("(seed 3)")
    sentences = tiny_sentences(10, seed=5)
    swapped = write_conll(tmp_path / "swapped.conll",
                          [(tags, tokens) for tokens, tags in sentences])
    columns = read_splits(NerConfig(data=str(swapped), token_column=1, tag_column=0))
    assert sorted(s.tokens for s in columns.train + columns.validation + columns.test) == \
        sorted(tokens for tokens, _ in sentences)


@pytest.mark.parametrize("crf", [False, True])
def test_padding_changes_neither_loss_nor_metrics(crf):
    sentences = [Sentence(t, g, list(range(len(t)))) for t, g in tiny_sentences(8, seed=4)]
    vocabulary = TaggingVocabulary.build(sentences)
    config = NerConfig(units=4, word_dim=4, char_dim=4, char_units=2, crf=crf, dropout=0.0)
    model = build_model(config, vocabulary)
    token_ids, char_ids, tag_ids = next(iter(
        make_tagging_dataset(encode_sentences(sentences, vocabulary), batch_size=8)
    ))

    def pad(x, steps, chars=0):
        widths = [(0, 0), (0, steps)] + ([(0, chars)] if x.ndim == 3 else [])
        return np.pad(x.numpy(), widths)

    loss = model.evaluate([token_ids, char_ids], tag_ids, verbose=0)
    padded = [pad(token_ids, 5), pad(char_ids, 5, 3)]
    padded_loss = model.evaluate(padded, pad(tag_ids, 5), verbose=0)
    assert padded_loss == pytest.approx(loss, abs=1e-5)
    if not crf:  # the masked mean over real tokens, not the padded ones
        probabilities = model([token_ids, char_ids]).numpy()
        real = token_ids.numpy() != 0
        gold = np.take_along_axis(probabilities, tag_ids.numpy()[..., None], -1)[..., 0]
        assert loss == pytest.approx(-np.mean(np.log(gold[real])), rel=1e-4)

    gold_tags = [s.tags for s in sentences]
    decode_function = model.make_decode_function()
    predicted = predict_tags(model, vocabulary, sentences, batch_size=8,
                             decode_function=decode_function)
    one_by_one = predict_tags(model, vocabulary, sentences, batch_size=1,
                              decode_function=decode_function)
    assert predicted == one_by_one
    assert entity_scores(gold_tags, predicted) == entity_scores(gold_tags, one_by_one)
    assert model.use_crf == crf
    if crf:  # the BIO constraints hold even for an untrained model
        for tags in predicted:
            for previous, tag in zip(["O"] + tags, tags):
                assert not tag.startswith("I-") or previous[2:] == tag[2:]


def test_fit_inputs_pairs_features_with_tags():
    sentences = [Sentence(["a", "b"], ["O", "B-X"], [1, 2])]
    vocabulary = TaggingVocabulary.build(sentences)
    (features, tags), = fit_inputs(
        make_tagging_dataset(encode_sentences(sentences, vocabulary), batch_size=1)
    ).take(1)
    assert [f.shape.as_list() for f in features] == [[1, 2], [1, 2, 1]]
    assert tags.numpy().tolist() == [[0, 1]]


def test_early_stopping_waits_while_f1_or_loss_improve_and_restores_the_best_f1(monkeypatch):
    import seqlab.pipelines.ner as ner

    f1_by_epoch = [0.02, 0.0, 0.0, 0.4, 0.5, 0.45, 0.3, 0.3]
    loss_by_epoch = [9.0, 8.0, 7.0, 6.0, 6.5, 6.2, 6.9, 5.0]
    scores = iter(f1_by_epoch)
    monkeypatch.setattr(ner, "predict_tags", lambda *args, **kwargs: None)
    monkeypatch.setattr(ner, "entity_scores", lambda *args: {"f1": next(scores)})
    model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)])
    model.stop_training = False  # as fit sets it
    callback = ner.EntityF1EarlyStopping(vocabulary=None, sentences=[], patience=2)
    callback.set_model(model)
    callback._decode_function = "unused"
    callback.on_train_begin()
    logged = []
    for epoch, loss in enumerate(loss_by_epoch):
        model.layers[0].kernel.assign([[float(epoch)]])
        logs = {"val_loss": loss}
        callback.on_epoch_end(epoch, logs)
        logged.append(logs["val_f1"])
        if model.stop_training:
            break
    # The falling loss carries training through the F1 of 0 after a lucky first epoch; after
    # the best F1 (epoch 4) neither figure improves for two epochs.
    assert logged == f1_by_epoch[:7] and epoch == 6
    callback.on_train_end()
    assert model.layers[0].kernel.numpy()[0, 0] == 4.0 and callback.best_epoch == 5
