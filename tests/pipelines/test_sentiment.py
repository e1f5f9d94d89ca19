"""Tests of pipelines/sentiment.py on tiny made-up data (tiny models, few epochs)."""

import json

import keras
import numpy as np
import pandas as pd
import pytest
import tensorflow as tf

import cli
from data.classification import Examples, LabelledData
from data.errors import DataError
from pipelines.common import UsageError, make_config
from pipelines.sentiment import (
    SentimentConfig,
    build_classifier,
    evaluate,
    export,
    load_data,
    make_splits,
    predict,
    train,
)

KEYWORDS = {
    "good": ["great", "superb", "lovely", "brilliant"],
    "bad": ["awful", "dull", "poor", "boring"],
    "other": ["table", "chair", "window", "door"],
}
FILLER = ["the", "a", "film", "was", "really", "quite", "and", "it", "so", "very"]


def write_reviews(path, n_per_class=30, seed=0, labels=None):
    """A CSV whose class is told by one keyword among filler words (three classes)."""
    rng = np.random.default_rng(seed)
    rows = []
    for label in labels or KEYWORDS:
        for _ in range(n_per_class):
            words = list(rng.choice(FILLER, size=rng.integers(1, 7)))
            words.insert(rng.integers(0, len(words) + 1), rng.choice(KEYWORDS[label]))
            rows.append({"review": " ".join(words), "class": label})
    pd.DataFrame(rows).sample(frac=1, random_state=seed).to_csv(path, index=False)
    return path


def tiny_config(data, out, **overrides):
    settings = dict(
        data=str(data), out=str(out), text_column="review", label_column="class", model="gru",
        embedding_dim=8, units=8, dropout=0.0, token_dropout=0.0, epochs=3, batch_size=16,
        learning_rate=0.03, test_fraction=0.2, sequence_length=12,
    )
    settings.update(overrides)
    return SentimentConfig(**settings)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    folder = tmp_path_factory.mktemp("sentiment")
    data = write_reviews(folder / "reviews.csv")
    result = train(tiny_config(data, folder / "run"))
    return data, result


def test_train_writes_a_complete_run_directory(trained):
    _, result = trained
    run = result.path
    for name in ("config.json", "metrics.json", "history.csv", "model.keras", "vocabulary.txt",
                 "classes.json", "plots/loss.png", "plots/confusion.png",
                 "saved_model/saved_model.pb"):
        assert (run / name).is_file(), name
    assert not run.with_name(run.name + ".partial").exists()
    assert json.loads((run / "classes.json").read_text()) == ["bad", "good", "other"]
    vocabulary = (run / "vocabulary.txt").read_text().split("\n")
    assert vocabulary[:2] == ["", "[UNK]"] and "superb" in vocabulary
    model = keras.saving.load_model(run / "model.keras")
    assert model.get_layer("vectorizer").get_vocabulary() == vocabulary[:-1]


def test_metrics_hold_every_figure_and_beat_the_majority_class(trained):
    _, result = trained
    metrics = json.loads((result.path / "metrics.json").read_text())
    assert metrics["model"] == pytest.approx(result.metrics["model"])
    # 90 examples, 20 % stratified test split: 6 of each class.
    split = metrics["data"]["split"]
    assert split["method"] == "seeded stratified" and split["seed"] == 42
    assert split["class_counts"]["test"] == {"bad": 6, "good": 6, "other": 6}
    assert split["examples"] == {"train": 64, "val": 8, "test": 18}
    matrix = np.array(metrics["confusion_matrix"]["rows_true_columns_predicted"])
    assert matrix.shape == (3, 3) and matrix.sum(axis=1).tolist() == [6, 6, 6]
    assert metrics["model"]["accuracy"] == pytest.approx(np.trace(matrix) / 18)
    assert set(metrics["per_class"]["good"]) == {"precision", "recall", "f1", "support"}
    assert metrics["majority_class"]["accuracy"] == pytest.approx(1 / 3)
    assert metrics["model"]["accuracy"] >= 0.8 and metrics["model"]["macro_f1"] >= 0.8
    for text in ("majority class", "macro F1", "precision", "true \\ predicted"):
        assert text in result.summary


def test_exported_saved_model_matches_the_model_in_process(trained, tmp_path):
    _, result = trained
    exported = export(result.path, out=tmp_path / "serving" / "1")
    assert "float32[None, 3]" in exported.summary and "bad, good, other" in exported.summary
    model = keras.saving.load_model(result.path / "model.keras")
    texts = ["a superb film", "so dull", "the chair", "", "zzz qqq", "great " * 40]
    expected = model.predict(tf.constant(texts), verbose=0)
    assert np.all(np.isfinite(expected))  # an empty text and unknown words are defined too

    serving = tf.saved_model.load(str(exported.path)).signatures["serving_default"]
    _, inputs = serving.structured_input_signature
    assert list(inputs) == ["text"] and inputs["text"].shape.as_list() == [None]
    assert inputs["text"].dtype == tf.string
    outputs = serving(text=tf.constant(texts))
    assert outputs["probabilities"].dtype == tf.float32
    assert outputs["probabilities"].shape == (len(texts), 3)
    np.testing.assert_allclose(outputs["probabilities"].numpy(), expected, atol=1e-6)
    classes = np.array(["bad", "good", "other"])
    assert outputs["label"].numpy().astype(str).tolist() == classes[
        np.argmax(expected, axis=-1)].tolist()


def test_padding_does_not_change_the_trained_model(trained):
    _, result = trained
    model = keras.saving.load_model(result.path / "model.keras")
    ids = model.get_layer("vectorizer")(tf.constant(["really a superb film"])).numpy()
    length = int((ids[0] != 0).sum())
    classifier = model.get_layer("classifier")
    predictions = [
        classifier(np.pad(ids[:, :length], [(0, 0), (0, padding)]), training=False).numpy()
        for padding in (0, 1, 12)
    ]
    for other in predictions[1:]:
        np.testing.assert_allclose(other, predictions[0], atol=1e-6, rtol=0)


def test_evaluate_reproduces_the_test_metrics_and_scores_other_files(trained, tmp_path):
    _, result = trained
    again = evaluate(result.path)
    assert again.metrics["model"] == pytest.approx(result.metrics["model"], abs=1e-9)
    other = write_reviews(tmp_path / "other.csv", n_per_class=4, seed=5, labels=["good", "bad"])
    scored = evaluate(result.path, data=other, output=tmp_path / "eval.json")
    assert scored.metrics["examples"] == 8 and scored.metrics["split"] == "every example"
    assert json.loads((tmp_path / "eval.json").read_text())["per_class"]["other"]["support"] == 0


def test_evaluate_refuses_a_label_the_model_does_not_know(trained, tmp_path):
    _, result = trained
    path = tmp_path / "new.csv"
    path.write_text("review,class\nsuperb,good\nso-so,mixed\n")
    with pytest.raises(DataError, match=r"new\.csv, line 3: unknown label 'mixed'; the model's "
                                        r"classes are: bad, good, other \(unknown labels: "
                                        r"'mixed', on 1 of 2 examples\)"):
        evaluate(result.path, data=path)


def test_predict_texts_and_an_input_file(trained, tmp_path):
    _, result = trained
    lines = tmp_path / "in.txt"
    lines.write_text("the table\n\nbrilliant\n")
    outcome = predict(result.path, texts=["a lovely film", "awful"], input_file=lines,
                      output=tmp_path / "out.csv")
    table = pd.read_csv(tmp_path / "out.csv", keep_default_na=False)
    assert table["text"].tolist() == ["a lovely film", "awful", "the table", "", "brilliant"]
    assert list(table.columns) == ["label", "probability", "p_bad", "p_good", "p_other", "text"]
    probabilities = table[["p_bad", "p_good", "p_other"]].to_numpy()
    np.testing.assert_allclose(probabilities.sum(axis=1), 1, atol=1e-5)
    np.testing.assert_allclose(table["probability"], probabilities.max(axis=1))
    assert table["label"].tolist()[:3] == ["good", "bad", "other"]
    assert "a lovely film" in outcome.summary and "probability" in outcome.summary
    with pytest.raises(UsageError, match="nothing to classify"):
        predict(result.path)


@pytest.mark.parametrize("kind, pooling", [("gru", "last"), ("lstm", "max"), ("bilstm", "last"),
                                           ("bilstm", "mean"), ("transformer", "mean")])
def test_padding_and_empty_texts_give_defined_unchanged_predictions(kind, pooling):
    config = SentimentConfig(model=kind, pooling=pooling, embedding_dim=8, units=4,
                             num_heads=2, ff_dim=8, layers=2, sequence_length=16)
    classifier = build_classifier(config, vocabulary_size=30, n_classes=3)
    ids = np.array([[5, 9, 2, 17, 3]])
    predictions = [
        classifier(np.pad(ids, [(0, 0), (0, padding)]), training=False).numpy()
        for padding in (0, 1, 6, 11)
    ]
    for other in predictions[1:]:
        np.testing.assert_allclose(other, predictions[0], atol=1e-6, rtol=0)
    different = classifier(np.array([[8, 8, 1, 0, 0]]), training=False).numpy()
    assert np.abs(different - predictions[0]).max() > 1e-6  # the check above is not vacuous
    # An empty text is all padding (id 0); a text of unknown words is all [UNK] (id 1).
    outputs = classifier(np.array([[0, 0, 0, 0], [1, 1, 1, 0]]), training=False).numpy()
    assert np.all(np.isfinite(outputs))
    np.testing.assert_allclose(outputs.sum(axis=1), 1, atol=1e-6)


def test_given_test_split_is_used_as_such_and_validation_comes_from_training():
    def examples(labels):
        return Examples(texts=[f"t{i}" for i in range(len(labels))], labels=labels,
                        origins=[("f", i) for i in range(len(labels))], source="f")

    data = LabelledData(train=examples(["a"] * 10 + ["b"] * 10),
                        test=examples(["a", "b", "b"]), layout="class folders")
    splits, report = make_splits(SentimentConfig(val_fraction=0.2), data)
    assert report["method"] == "given" and report["test_fraction"] is None
    assert report["examples"] == {"train": 16, "val": 4, "test": 3}
    assert report["class_counts"]["val"] == {"a": 2, "b": 2}


def test_test_data_file_is_the_given_test_split(tmp_path):
    train_file = write_reviews(tmp_path / "train.csv", n_per_class=10, labels=["good", "bad"])
    test_file = write_reviews(tmp_path / "test.csv", n_per_class=3, seed=1, labels=["good", "bad"])
    config = tiny_config(train_file, tmp_path / "run", test_data=str(test_file), val_fraction=0.1)
    splits, report = make_splits(config, load_data(config))
    assert report["method"] == "given" and report["examples"] == {"train": 18, "val": 2, "test": 6}
    assert splits["test"].source == str(test_file)
    with pytest.raises(UsageError, match="--test-data needs --data"):
        load_data(SentimentConfig(test_data=str(test_file)))


def test_config_refuses_settings_that_cannot_work():
    with pytest.raises(UsageError, match="the transformer model has no last state"):
        make_config(SentimentConfig, flag_values={"model": "transformer", "pooling": "last"})
    with pytest.raises(UsageError, match="model must be one of gru, lstm, bilstm, transformer"):
        make_config(SentimentConfig, flag_values={"model": "cnn"})


def test_command_line_trains_on_the_embedded_sample_then_predicts(tmp_path, capsys):
    out = tmp_path / "run"
    status = cli.main(["sentiment", "train", "--out", str(out), "--model", "transformer",
                       "--epochs", "1", "--embedding-dim", "8", "--num-heads", "2",
                       "--ff-dim", "8", "--sequence-length", "16", "--monitor", "accuracy"])
    printed = capsys.readouterr().out
    assert status == 0, printed
    metrics = json.loads((out / "metrics.json").read_text())
    assert "smoke-test sample" in metrics["data"]["source"]
    assert metrics["examples"] == 15
    assert metrics["best_epoch"] == 1 and metrics["epochs_run"] == 1
    assert 0 <= metrics["model"]["accuracy"] <= 1
    assert "model (transformer)" in printed and "smoke test" in printed

    status = cli.main(["sentiment", "predict", "--run", str(out), "what a lovely evening",
                       "the soup was cold"])
    printed = capsys.readouterr().out
    assert status == 0 and "what a lovely evening" in printed
    assert printed.count("positive") + printed.count("negative") >= 2

    bad = tmp_path / "bad.csv"
    bad.write_text("text,label\nonly,one\nclass,one\n")
    status = cli.main(["sentiment", "train", "--data", str(bad), "--out", str(tmp_path / "b")])
    assert status == 2
    assert "the label column 'label' has one class ('one')" in capsys.readouterr().err
