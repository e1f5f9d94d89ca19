"""Tests of pipelines/sentiment.py on tiny made-up data (tiny models, few epochs)."""

import json
import shutil
from pathlib import Path

import keras
import numpy as np
import pandas as pd
import pytest
import tensorflow as tf

from seqlab import cli
from seqlab.data.classification import make_splits
from seqlab.data.errors import DataError
from seqlab.models import AutoTextClassifier, TextClassifier, TextClassifierEnsemble
from seqlab.pipelines.common import UsageError
from seqlab.pipelines.sentiment import (
    PIPELINE,
    SentimentConfig,
    evaluate,
    export,
    load_data,
    predict,
    settle_length_and_pooling,
    train,
)
from seqlab.pipelines.settings import make_config
from tests.layers.test_fused_kernel import stand_in_gpu

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
    if overrides.get("model") == "ngrams":  # it refuses the settings it does not read
        for name in ("embedding_dim", "units", "dropout", "token_dropout", "sequence_length"):
            del settings[name]
    if overrides.get("model") == "transformer":  # its width is embedding_dim
        del settings["units"]
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
    assert isinstance(model, TextClassifier) and model.kind == "gru"
    assert model.vectorizer.get_vocabulary() == vocabulary[:-1]


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
    texts = ["a superb film", "so dull", "the chair", "", "zzz qqq", "great " * 40,
             "superb&#39;s<br />a<b and c>d &amp; &#x1F600; &eacute;t&eacute;"]
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


def test_a_run_exported_where_a_gpu_is_traces_no_cudnn_kernel(trained, tmp_path, monkeypatch):
    # Traced on a GPU, Keras's fused kernel (cuDNN's op) would be in the SavedModel, and a
    # CPU cannot serve it; the export traces seqlab's own loops instead.
    _, result = trained
    calls = stand_in_gpu(monkeypatch)
    model = keras.saving.load_model(result.path / "model.keras")
    model.predict(tf.constant(["a superb film"]), verbose=0)
    assert calls  # in process, the GRU runs the kernel
    calls.clear()
    exported = export(result.path, out=tmp_path / "serving")
    assert calls == []
    serving = tf.saved_model.load(str(exported.path)).signatures["serving_default"]
    assert serving(text=tf.constant(["a superb film"]))["probabilities"].shape == (1, 3)


def test_padding_does_not_change_the_trained_model(trained):
    _, result = trained
    model = keras.saving.load_model(result.path / "model.keras")
    ids = model.vectorizer(tf.constant(["really a superb film"])).numpy()
    length = int((ids[0] != 0).sum())
    # The same classifier, taking token ids.
    classifier = TextClassifier.from_config({**model.get_config(), "vocabulary": None})
    classifier.set_weights(model.get_weights())
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
    outcome = predict(result.path, texts=["a lovely film", "awful"], input=lines,
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
    # The input file is not overwritten by its own predictions.
    with pytest.raises(UsageError, match=r"--output .*in\.txt would overwrite the data"):
        predict(result.path, input=lines, output=lines)
    assert lines.read_text() == "the table\n\nbrilliant\n"


def test_ngrams_run_exports_and_predicts_raw_strings(tmp_path):
    data = write_reviews(tmp_path / "reviews.csv")
    result = train(tiny_config(data, tmp_path / "run", model="ngrams", epochs=10,
                               learning_rate=0.1))
    assert "model (ngrams)" in result.summary and result.metrics["model"]["accuracy"] >= 0.8
    vocabulary = (result.path / "vocabulary.txt").read_text().split("\n")
    assert vocabulary[0] == "[UNK]" and "superb" in vocabulary
    assert any(" " in token for token in vocabulary)  # bigrams
    texts = ["a superb film", "so dull", "the chair", "", "zzz qqq"]
    model = keras.saving.load_model(result.path / "model.keras")
    expected = model.predict(tf.constant(texts), verbose=0)
    assert np.all(np.isfinite(expected))
    serving = tf.saved_model.load(str(result.path / "saved_model")).signatures["serving_default"]
    outputs = serving(text=tf.constant(texts))
    np.testing.assert_allclose(outputs["probabilities"].numpy(), expected, atol=1e-6)
    assert outputs["label"].numpy().astype(str).tolist()[:3] == ["good", "bad", "other"]
    again = evaluate(result.path)
    assert again.metrics["model"] == pytest.approx(result.metrics["model"], abs=1e-9)


def test_a_vocabulary_cap_is_the_most_frequent_tokens_and_says_what_it_leaves_out(trained,
                                                                                   tmp_path):
    # The cap (20,000 by default) had left tokens out without a word: only "vocabulary N".
    data, full = trained
    distinct = full.metrics["data"]["vocabulary_size"]
    assert full.metrics["data"]["vocabulary_left_out"] == 0
    result = train(tiny_config(data, tmp_path / "run", vocabulary_size=10, epochs=1))
    vocabulary = (result.path / "vocabulary.txt").read_text().splitlines()
    kept = (full.path / "vocabulary.txt").read_text().splitlines()[:10]
    assert vocabulary == kept  # the most frequent, as Keras's own cap keeps them
    assert result.metrics["data"]["vocabulary_left_out"] == distinct - 10
    # The 10 entries hold padding and [UNK]: 8 tokens of the distinct - 2 (it said "the 10 most
    # frequent of the `distinct`").
    assert (f"vocabulary: the 8 most frequent of the {distinct - 2:,} distinct training tokens "
            f"(10 entries with padding and [UNK]); the other {distinct - 10:,} read as [UNK]") \
        in result.summary
    # The header counts the texts' tokens too ("vocabulary 10 tokens" counted the two).
    assert ", vocabulary 8 tokens\n" in result.summary
    assert f", vocabulary {distinct - 2:,} tokens\n" in full.summary


def test_test_data_file_is_the_given_test_split(tmp_path):
    train_file = write_reviews(tmp_path / "train.csv", n_per_class=10, labels=["good", "bad"])
    test_file = write_reviews(tmp_path / "test.csv", n_per_class=3, seed=1, labels=["good", "bad"])
    config = tiny_config(train_file, tmp_path / "run", test_data=str(test_file), val_fraction=0.1)
    splits, report = make_splits(load_data(config), config.test_fraction, config.val_fraction,
                                 config.seed)
    assert report["method"] == "given" and report["examples"] == {"train": 18, "val": 2, "test": 6}
    assert splits["test"].source == str(test_file)
    with pytest.raises(UsageError, match="--test-data needs --data"):
        load_data(SentimentConfig(test_data=str(test_file)))


def test_a_test_split_of_training_texts_is_named_in_the_summary(tmp_path):
    data = write_reviews(tmp_path / "reviews.csv", n_per_class=10, labels=["good", "bad"])
    result = train(tiny_config(data, tmp_path / "run", test_data=str(data), model="ngrams",
                               val_fraction=0.1))
    assert result.metrics["data"]["split"]["also_in_training"]["test"] == 18  # 2 went to val
    assert ("note: 18 of the 20 test texts are also training texts, word for word: the test "
            "figures overstate how the model does on texts it has not seen") in result.summary


def test_ensemble_run_averages_its_members_and_reports_each(tmp_path):
    data = write_reviews(tmp_path / "reviews.csv")
    result = train(tiny_config(data, tmp_path / "run", ensemble=3))
    metrics = json.loads((result.path / "metrics.json").read_text())
    assert len(metrics["members"]) == 3 and "ensemble of 3 (gru)" in result.summary
    assert "member 2" in result.summary and metrics["model"]["accuracy"] >= 0.8
    model = keras.saving.load_model(result.path / "model.keras")
    assert isinstance(model, TextClassifierEnsemble) and len(model.members) == 3
    texts = tf.constant(["a superb film", "so dull", "the chair", ""])
    ids = model.vectorizer(texts)
    each = np.stack([member(ids, training=False).numpy() for member in model.members])
    np.testing.assert_allclose(model(texts, training=False).numpy(), each.mean(axis=0),
                               atol=1e-6)
    assert np.abs(each[0] - each[1]).max() > 1e-4  # the members are different models
    exported = export(result.path, out=tmp_path / "serving")
    serving = tf.saved_model.load(str(exported.path)).signatures["serving_default"]
    np.testing.assert_allclose(serving(text=texts)["probabilities"].numpy(), each.mean(axis=0),
                               atol=1e-6)
    rescored = evaluate(result.path).metrics["members"]
    assert [m["accuracy"] for m in rescored] == [m["accuracy"] for m in metrics["members"]]
    assert all(1 <= m["best_epoch"] <= metrics["epochs_run"] for m in metrics["members"])
    assert metrics["best_epoch"] == max(m["best_epoch"] for m in metrics["members"])
    history = pd.read_csv(result.path / "history.csv")
    assert {"val_member_0_loss", "val_member_2_loss", "val_accuracy"} <= set(history.columns)
    assert history["loss"].notna().all() and history["val_loss"].notna().all()


def test_interrupted_ensemble_run_resumes(tmp_path):
    data = write_reviews(tmp_path / "reviews.csv", n_per_class=10)
    config = tiny_config(data, tmp_path / "run", ensemble=2, epochs=3, patience=5)

    class InterruptAfterFirstEpoch(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            raise RuntimeError("simulated crash")

    with pytest.raises(RuntimeError, match="simulated crash"):
        train(config, callbacks=[InterruptAfterFirstEpoch()])
    assert (tmp_path / "run.partial" / "checkpoints").is_dir()
    result = train(config)
    assert result.metrics["epochs_run"] == 3 and len(result.metrics["members"]) == 2
    history = pd.read_csv(result.path / "history.csv")
    assert history["epoch"].tolist() == [1, 2, 3]


def test_interrupted_auto_run_resumes_and_chooses(tmp_path):
    data = write_reviews(tmp_path / "reviews.csv", n_per_class=10)
    config = tiny_config(data, tmp_path / "run", model="auto", epochs=3, patience=5)

    class InterruptAfterFirstEpoch(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            raise RuntimeError("simulated crash")

    with pytest.raises(RuntimeError, match="simulated crash"):
        train(config, callbacks=[InterruptAfterFirstEpoch()])
    result = train(config)
    assert result.metrics["epochs_run"] == 3
    history = pd.read_csv(result.path / "history.csv")
    assert history["epoch"].tolist() == [1, 2, 3]
    auto = result.metrics["auto"]
    assert auto["chosen"] in ("ngrams", "average", "cnn")
    assert PIPELINE.load_run(result.path).model.choice == {"cnn": "neural"}.get(
        auto["chosen"], auto["chosen"])


def test_config_refuses_settings_that_cannot_work():
    with pytest.raises(UsageError, match="ensemble must be at least 1"):
        make_config(SentimentConfig, flag_values={"ensemble": 0})
    with pytest.raises(UsageError, match="the transformer model has no last state"):
        make_config(SentimentConfig, flag_values={"model": "transformer", "pooling": "last"})
    with pytest.raises(UsageError, match="model must be one of auto, gru, lstm, bilstm, "
                                         "transformer, cnn, ngrams"):
        make_config(SentimentConfig, flag_values={"model": "rnn"})
    with pytest.raises(UsageError, match="--model auto trains one n-gram model and one cnn"):
        make_config(SentimentConfig, flag_values={"ensemble": 2})
    with pytest.raises(UsageError, match="the cnn model has no last state"):
        make_config(SentimentConfig, flag_values={"model": "cnn", "pooling": "last"})
    with pytest.raises(UsageError, match="the ngrams model starts from zero weights"):
        make_config(SentimentConfig, flag_values={"model": "ngrams", "ensemble": 3})
    with pytest.raises(UsageError, match="ngrams must be at least 1"):
        make_config(SentimentConfig, flag_values={"model": "ngrams", "ngrams": 0})


def test_texts_written_without_spaces_are_said_to_be_read_as_one_word_each(tmp_path, capsys):
    # Chinese reviews: every text was one "word", the vocabulary the training texts verbatim,
    # and a Chinese training set scored at chance without a word said.
    subjects = ["这部电影", "那本小说", "这家餐厅"]
    good, bad = "非常好看我很喜欢", "非常无聊我不喜欢"
    rows = [(subject + (good if k % 2 else bad) + str(k), "pos" if k % 2 else "neg")
            for k, subject in enumerate(subjects * 20)]
    pd.DataFrame(rows, columns=["text", "label"]).to_csv(tmp_path / "zh.csv", index=False)
    out = tmp_path / "run"
    assert cli.main(["sentiment", "train", "--data", str(tmp_path / "zh.csv"), "--model",
                     "ngrams", "--epochs", "1", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert ("training texts hold runs of 8 or more characters of a script written without "
            "spaces (Chinese, Japanese, Thai, ...), each run read as one word") in printed
    # Text with spaces between its words gets no such note.
    spaced = [(" ".join(text[:-len(str(k))]) + " " + str(k), label)
              for k, (text, label) in enumerate(rows)]
    pd.DataFrame(spaced, columns=["text", "label"]).to_csv(tmp_path / "zh.csv", index=False)
    assert cli.main(["sentiment", "train", "--data", str(tmp_path / "zh.csv"), "--model",
                     "ngrams", "--epochs", "1", "--out", str(tmp_path / "spaced")]) == 0
    assert "written without spaces" not in capsys.readouterr().out


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
    assert "(121 training sentences) is too small to learn sentiment from" in printed

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


# Long documents: the sequence length, the cut and the pooling chosen from the data

LONG_FILLER = [f"w{i}" for i in range(30)]
VERDICTS = {"pos": ["great", "superb", "lovely"], "neg": ["awful", "dull", "boring"]}


def write_long_reviews(path, n_texts=200, words=500, seed=0):
    """A CSV of ~`words`-word texts of random filler (shared by both classes) whose class is
    told only by one verdict word among their last five words."""
    rng = np.random.default_rng(seed)
    rows = []
    for index in range(n_texts):
        label = ("pos", "neg")[index % 2]
        body = list(rng.choice(LONG_FILLER, size=rng.integers(words - 20, words + 20)))
        ending = list(rng.choice(LONG_FILLER, size=4))
        ending.insert(rng.integers(0, 5), rng.choice(VERDICTS[label]))
        rows.append({"text": " ".join(body + ending), "label": label})
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


@pytest.fixture(scope="module")
def long_runs(tmp_path_factory):
    """The default model (no length, cut or pooling flags; tiny and quick otherwise) and the
    ngrams model trained on the same long texts."""
    folder = tmp_path_factory.mktemp("long")
    data = write_long_reviews(folder / "long.csv")
    default = train(SentimentConfig(
        data=str(data), out=str(folder / "default"), embedding_dim=8, units=8, dropout=0.0,
        token_dropout=0.0, learning_rate=0.02, batch_size=64, epochs=4,
    ))
    ngrams = train(SentimentConfig(data=str(data), out=str(folder / "ngrams"), model="ngrams"))
    return data, default, ngrams


def _token_counts(data):
    config = SentimentConfig(data=str(data))
    splits, _ = make_splits(load_data(config), config.test_fraction, config.val_fraction,
                            config.seed)
    # The texts are lower-case words without punctuation: a word is a token.
    return splits, {name: np.array([len(text.split()) for text in examples.texts])
                    for name, examples in splits.items()}


def test_default_model_reads_long_documents_at_least_as_well_as_ngrams(long_runs):
    data, default, ngrams = long_runs
    accuracy = default.metrics["model"]["accuracy"]
    # The verdict is one word among the last five: 0.1.0's first 64 tokens saw none of it
    # (0.5); a mean over ~500 tokens dilutes it, so the figure stays modest at 4 epochs.
    # Not below the n-gram model by more than one test document (the aim of
    # docs/performance.md): here they tie, and the closest document's probabilities are 0.0014
    # apart, which training on another CPU (other float32 sums) may flip.
    documents = sum(figures["support"] for figures in default.metrics["per_class"].values())
    assert accuracy >= ngrams.metrics["model"]["accuracy"] - 1 / documents - 1e-9
    assert accuracy >= 0.7
    settings = json.loads((default.path / "config.json").read_text())["settings"]
    _, counts = _token_counts(data)
    percentile = int(np.ceil(np.percentile(counts["train"], 95)))
    # The cnn reads whole documents: the 95th percentile is not lowered to 512.
    assert percentile > 512
    assert (settings["model"], settings["sequence_length"], settings["truncate"],
            settings["pooling"]) == ("auto", percentile, "start", "mean")
    auto = default.metrics["auto"]
    assert set(auto["members"]) == {"ngrams", "cnn", "average"}
    assert auto["chosen_on"] == "validation split"
    chosen = auto["members"][auto["chosen"]]
    assert chosen["test_accuracy"] == accuracy
    assert chosen["validation_accuracy"] == max(
        figures["validation_accuracy"] for figures in auto["members"].values())
    assert default.metrics["model_kind"] == f"auto: {auto['chosen']}"
    assert f"model auto: kept {auto['chosen']}, chosen on the validation split" in (
        default.summary)


def test_chosen_length_and_cut_texts_are_reported(long_runs):
    data, default, ngrams = long_runs
    splits, counts = _token_counts(data)
    # A recurrent model's default length stops at 512 and pools by the maximum.
    config = SentimentConfig(data=str(data), model="bilstm")
    truncation = settle_length_and_pooling(config, splits)
    percentile = int(np.ceil(np.percentile(counts["train"], 95)))
    assert truncation["percentile_tokens"] == percentile
    assert truncation["sequence_length"] == 512 and truncation["truncate"] == "start"
    assert truncation["chosen_by"] == (
        f"the 95th percentile of the training texts' token counts, {percentile}, lowered to "
        "the default's maximum 512")
    assert truncation["pooling"] == "max"
    for name in ("train", "val", "test"):
        assert truncation[name] == {"cut": int(np.sum(counts[name] > 512)),
                                    "texts": len(counts[name]),
                                    "longest": int(counts[name].max())}
    assert 0 < truncation["train"]["cut"] < truncation["train"]["texts"]
    # The default (auto, its cnn) reports its own length and cut.
    reported = default.metrics["truncation"]
    assert reported["sequence_length"] == percentile and reported["bounds"] == [64, 4096]
    assert reported["train"]["cut"] == int(np.sum(counts["train"] > percentile))
    cut = reported["train"]["cut"]
    assert (f"sequence length {percentile} (the 95th percentile of the training texts' token "
            f"counts, {percentile}); longer texts cut at the start (their last {percentile} "
            f"tokens kept): train {cut} of") in default.summary
    assert "mean pooling (the cnn's default)" in default.summary
    # The ngrams model reads whole texts: nothing to report.
    assert "truncation" not in ngrams.metrics or ngrams.metrics["truncation"] is None
    assert "sequence length" not in ngrams.summary


def test_long_run_saved_model_serves_what_the_model_predicts(long_runs, tmp_path):
    data, default, _ = long_runs
    texts = pd.read_csv(data)["text"].tolist()[:3]
    model = keras.saving.load_model(default.path / "model.keras")
    assert isinstance(model, AutoTextClassifier)
    expected = model.predict(tf.constant(texts), verbose=0)
    serving = tf.saved_model.load(str(default.path / "saved_model")).signatures[
        "serving_default"]
    served = serving(text=tf.constant(texts))["probabilities"].numpy()
    np.testing.assert_allclose(served, expected, atol=1e-6)
    reloaded = predict(default.path, texts=texts, output=str(tmp_path / "p.csv"))
    rows = pd.read_csv(reloaded.path)
    np.testing.assert_allclose(rows["p_pos"], expected[:, 1], atol=1e-5)
    # The neural member cuts long texts inside the model (and so inside the SavedModel).
    length = model.neural.sequence_length
    longer = [" ".join(["w1"] * 100 + text.split()) for text in texts]  # only the start differs
    last_words = [" ".join(text.split()[-length:]) for text in longer]
    np.testing.assert_allclose(model.neural.predict(tf.constant(longer), verbose=0),
                               model.neural.predict(tf.constant(last_words), verbose=0),
                               atol=1e-6)


def test_explicit_length_pooling_and_cut_win_and_short_texts_keep_64(tmp_path):
    data = write_reviews(tmp_path / "reviews.csv")
    short = tiny_config(data, tmp_path / "run", sequence_length=None)
    splits, _ = make_splits(load_data(short), short.test_fraction, short.val_fraction, 0)
    report = settle_length_and_pooling(short, splits)
    # At most 8 words per text: the 95th percentile is raised to 64, nothing is cut.
    assert (short.sequence_length, short.pooling) == (64, "mean")
    assert report["chosen_by"].endswith("raised to the default's minimum 64")
    assert report["pooling_chosen_by"] == "sequence length 64, at most 64"
    assert all(report[name]["cut"] == 0 for name in ("train", "val", "test"))
    given = tiny_config(data, tmp_path / "run", sequence_length=2, truncate="end",
                        pooling="last")
    report = settle_length_and_pooling(given, splits)
    assert (given.sequence_length, given.truncate, given.pooling) == (2, "end", "last")
    assert (report["chosen_by"], report["pooling_chosen_by"]) == (
        "--sequence-length", "--pooling")
    words = {name: np.array([len(t.split()) for t in examples.texts])
             for name, examples in splits.items()}
    assert report["train"]["cut"] == int(np.sum(words["train"] > 2)) > 0


def test_a_0_1_0_run_without_truncate_cuts_at_the_end(tmp_path):
    run = tmp_path / "old"
    shutil.copytree(Path(__file__).parents[1] / "fixtures" / "v0.1.0" / "sentiment", run)
    loaded = PIPELINE.load_run(run)
    assert loaded.config.truncate == "end" and loaded.model.truncate == "end"
    assert loaded.config.sequence_length == 16 and loaded.config.pooling == "mean"


def test_a_0_1_0_run_reads_texts_as_it_was_trained(tmp_path):
    # Its functional model's TextVectorization had Keras's own rules; moved into a
    # TextClassifier of the default character rules, it read "superb.<br />was" as "superb",
    # "was" (trained: "superbbr", "was") and "ОТЛИЧНО" as "отлично".
    run = tmp_path / "old"
    shutil.copytree(Path(__file__).parents[1] / "fixtures" / "v0.1.0" / "sentiment", run)
    saved = keras.models.load_model(run / "model.keras", compile=False)
    trained = next(layer for layer in saved._flatten_layers()
                   if isinstance(layer, keras.layers.TextVectorization))
    loaded = PIPELINE.load_run(run).model
    assert loaded.characters == "ascii"
    texts = tf.constant(["Superb.<br />Was a film", "ОТЛИЧНО отлично «film» a\xa0film",
                         "good<p>bad</p>"])
    assert loaded.vectorizer(texts).numpy().tolist() == trained(texts).numpy().tolist()


# Pretrained word vectors (--embeddings)


def write_vectors(path, words, dimension=8, seed=0):
    """A GloVe file of `words`, values multiples of 1/32 (exact in float32); returns them."""
    rng = np.random.default_rng(seed)
    vectors = {word: rng.integers(-64, 64, dimension) / 32 for word in words}
    path.write_text("".join(f"{w} {' '.join(map(str, v))}\n" for w, v in vectors.items()))
    return {word: np.float32(vector) for word, vector in vectors.items()}


class EmbeddingsAtTrainBegin(keras.callbacks.Callback):
    """Keeps every classifier's token embedding matrix as `fit` starts (after a restore)."""

    def on_train_begin(self, logs=None):
        classifiers = [c for c in getattr(self.model, "members", [self.model])
                       if c.embedding is not None]  # auto's n-gram member has none
        self.matrices = [embedding_matrix(c) for c in classifiers]
        self.output_kernel = classifiers[0].output_layer.kernel.numpy().copy()


def embedding_matrix(classifier):
    layer = getattr(classifier.embedding, "token_embedding", classifier.embedding)
    return layer.embeddings.numpy().copy()


def test_frozen_pretrained_vectors_stay_bit_identical_and_the_run_exports(tmp_path):
    data = write_reviews(tmp_path / "reviews.csv")
    # Some of the words (a cased one too), and words the data lacks.
    vectors = write_vectors(tmp_path / "vectors.txt",
                            ["the", "film", "Superb", "awful", "table", "unseen"])
    config = tiny_config(data, tmp_path / "run", embedding_dim=None, epochs=1,
                         embeddings=str(tmp_path / "vectors.txt"), freeze_embeddings=True)
    begin = EmbeddingsAtTrainBegin()
    result = train(config, callbacks=[begin])
    run = result.path
    assert json.loads((run / "config.json").read_text())["settings"]["embedding_dim"] == 8
    # compile=False: the saved optimizer state lacks the frozen embedding, which a model built
    # from its config would train.
    model = keras.saving.load_model(run / "model.keras", compile=False)
    vocabulary = (run / "vocabulary.txt").read_text().split("\n")[:-1]
    matrix = embedding_matrix(model)
    np.testing.assert_array_equal(matrix, begin.matrices[0])  # frozen: bit-identical
    assert not np.array_equal(model.output_layer.kernel.numpy(), begin.output_kernel)
    np.testing.assert_array_equal(matrix[0], np.zeros(8))
    for word, key in (("the", "the"), ("film", "film"), ("superb", "Superb"),
                      ("awful", "awful"), ("table", "table")):
        np.testing.assert_array_equal(matrix[vocabulary.index(word)], vectors[key])

    # The coverage, counted independently on the training split's words.
    splits, _ = make_splits(load_data(config), config.test_fraction, config.val_fraction,
                            config.seed)
    tokens = [w for text in splits["train"].texts for w in text.split()]
    found = {"the", "film", "superb", "awful", "table"}
    report = result.metrics["embeddings"]
    assert report["vocabulary"] == {"words": len(vocabulary) - 2, "found": 5,
                                    "share": 5 / (len(vocabulary) - 2)}
    assert report["training_tokens"]["tokens"] == len(tokens)
    assert report["training_tokens"]["share"] == sum(w in found for w in tokens) / len(tokens)
    assert report["found_by_case_fallback"] == 1 and report["frozen"] is True
    assert report["dimension_from"] == "the vector file"
    assert json.loads((run / "metrics.json").read_text())["embeddings"] == report
    assert "pretrained vectors: vectors.txt (GloVe text, 8 dimensions" in result.summary

    texts = ["a superb film", "so dull", "the chair", ""]
    serving = tf.saved_model.load(str(run / "saved_model")).signatures["serving_default"]
    np.testing.assert_allclose(serving(text=tf.constant(texts))["probabilities"].numpy(),
                               model.predict(tf.constant(texts), verbose=0), atol=1e-6)


@pytest.mark.parametrize("model_kind, ensemble", [("gru", 2), ("transformer", 1), ("auto", 1)])
def test_every_member_and_the_transformer_get_the_vectors(tmp_path, model_kind, ensemble):
    data = write_reviews(tmp_path / "reviews.csv", n_per_class=10)
    vectors = write_vectors(tmp_path / "vectors.txt", ["film", "great"])
    begin = EmbeddingsAtTrainBegin()
    transformer = {"num_heads": 2, "ff_dim": 8} if model_kind == "transformer" else {}
    result = train(tiny_config(data, tmp_path / "run", model=model_kind, ensemble=ensemble,
                               epochs=1, embedding_dim=8, **transformer,
                               embeddings=str(tmp_path / "vectors.txt")), callbacks=[begin])
    vocabulary = (result.path / "vocabulary.txt").read_text().split("\n")[:-1]
    assert len(begin.matrices) == ensemble
    for matrix in begin.matrices:
        for word in ("film", "great"):
            np.testing.assert_array_equal(matrix[vocabulary.index(word)], vectors[word])
    assert result.metrics["embeddings"]["dimension_from"] == "--embedding-dim"
    assert "trained further" in result.summary


def test_a_resumed_run_keeps_its_restored_weights_over_the_vectors(tmp_path):
    data = write_reviews(tmp_path / "reviews.csv", n_per_class=10)
    vectors = write_vectors(tmp_path / "vectors.txt", ["film", "the"])
    config = tiny_config(data, tmp_path / "run", epochs=2, patience=5,
                         embeddings=str(tmp_path / "vectors.txt"))

    class InterruptAfterFirstEpoch(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            self.matrix = embedding_matrix(self.model)
            raise RuntimeError("simulated crash")

    crash = InterruptAfterFirstEpoch()
    with pytest.raises(RuntimeError, match="simulated crash"):
        train(config, callbacks=[crash])
    begin = EmbeddingsAtTrainBegin()
    train(config, callbacks=[begin])
    np.testing.assert_array_equal(begin.matrices[0], crash.matrix)
    film = (tmp_path / "run" / "vocabulary.txt").read_text().split("\n").index("film")
    assert not np.array_equal(crash.matrix[film], vectors["film"])  # trained in epoch 1


def test_embeddings_settings_that_cannot_work_are_refused(tmp_path):
    with pytest.raises(UsageError, match="the ngrams model has no word embedding to take "
                                         "pretrained vectors; use --embeddings with auto, "
                                         "gru, lstm, bilstm, transformer, cnn"):
        make_config(SentimentConfig, flag_values={"model": "ngrams", "embeddings": "v.txt"})
    with pytest.raises(UsageError, match="freeze_embeddings keeps pretrained vectors fixed: "
                                         "give them with --embeddings"):
        make_config(SentimentConfig, flag_values={"freeze_embeddings": True})
    data = write_reviews(tmp_path / "reviews.csv", n_per_class=10)
    write_vectors(tmp_path / "vectors.txt", ["film"], dimension=4)
    with pytest.raises(DataError, match=r"vectors\.txt, line 1: 4-dimensional vectors, but "
                                        "--embedding-dim is 8"):
        train(tiny_config(data, tmp_path / "run", embeddings=str(tmp_path / "vectors.txt")))
    with pytest.raises(UsageError, match=r"embedding_dim must be a multiple of num_heads for "
                                         r"the transformer\. Received: embedding_dim=4, "
                                         r"num_heads=8 \(embedding_dim=4: the dimension of "):
        train(tiny_config(data, tmp_path / "run", model="transformer", num_heads=8,
                          embedding_dim=None, embeddings=str(tmp_path / "vectors.txt")))
    assert not (tmp_path / "run").exists() and not (tmp_path / "run.partial").exists()



@pytest.mark.parametrize("model", ["ngrams", "auto", "gru"])
def test_texts_without_a_word_are_refused_naming_the_file(tmp_path, model):
    # Punctuation only: the standardized vocabulary was empty, and every model failed with
    # TensorFlow's "keys and values cannot be empty tensors" traceback, leaving run.partial.
    data = tmp_path / "punctuation.csv"
    data.write_text("review,class\n" + "!!! ??? ...,pos\n--- ;;; ...,neg\n" * 20)
    with pytest.raises(DataError, match=r"punctuation\.csv: no training text holds a word after "
                                        r"--standardize lower_and_strip_punctuation \(the \d+ "
                                        r"training texts, such as '"):
        train(tiny_config(str(data), tmp_path / "run", model=model))
    assert not (tmp_path / "run").exists() and not (tmp_path / "run.partial").exists()

# --model auto: the n-gram model, the neural one or their average, kept on the validation split


def write_opening_verdicts(path, n_per_class=24, seed=0):
    """A CSV whose class is told by its first word (a verdict, repeated), then filler."""
    rng = np.random.default_rng(seed)
    rows = [{"review": " ".join([rng.choice(VERDICTS[label])] * 2
                                + list(rng.choice(LONG_FILLER, size=6))), "class": label}
            for label in VERDICTS for _ in range(n_per_class)]
    pd.DataFrame(rows).sample(frac=1, random_state=seed).to_csv(path, index=False)
    return path


@pytest.fixture(scope="module")
def blinded_auto(tmp_path_factory):
    """An auto run whose neural member sees only each text's last word (filler): the n-gram
    model, reading whole texts, clearly wins."""
    folder = tmp_path_factory.mktemp("blinded")
    data = write_opening_verdicts(folder / "verdicts.csv")
    return train(tiny_config(data, folder / "run", model="auto", sequence_length=1,
                             truncate="start", epochs=8, patience=8, val_fraction=0.25))


def test_auto_keeps_the_member_that_wins_on_validation(blinded_auto):
    auto = blinded_auto.metrics["auto"]
    members = auto["members"]
    assert members["ngrams"]["validation_accuracy"] >= 0.8
    assert members["cnn"]["validation_accuracy"] <= 0.6
    assert auto["chosen"] == "ngrams"
    assert blinded_auto.metrics["model"]["accuracy"] == members["ngrams"]["test_accuracy"]
    assert members["ngrams"]["best_epoch"] >= 1 and members["cnn"]["best_epoch"] >= 1
    assert "model auto: kept ngrams, chosen on the validation split by accuracy" in (
        blinded_auto.summary)
    assert "model (auto: ngrams)" in blinded_auto.summary
    assert (blinded_auto.path / "ngram_vocabulary.txt").is_file()
    loaded = PIPELINE.load_run(blinded_auto.path)
    assert isinstance(loaded.model, AutoTextClassifier) and loaded.model.choice == "ngrams"
    assert loaded.artifacts["ngram_vocabulary"] == loaded.model.ngram_model.vocabulary
    assert evaluate(blinded_auto.path).metrics["model"] == blinded_auto.metrics["model"]


@pytest.mark.parametrize("choice", ["ngrams", "average", "neural"])
def test_auto_export_serves_what_each_choice_predicts(blinded_auto, tmp_path, choice):
    from seqlab.pipelines.sentiment import export_saved_model

    model = PIPELINE.load_run(blinded_auto.path).model
    model.choice = choice
    texts = ["great great w1 w2", "dull dull w3", "w4 w5 lovely", ""]
    expected = model.predict_probabilities(texts)
    export_saved_model(model, ["neg", "pos"], tmp_path / "saved")
    serving = tf.saved_model.load(str(tmp_path / "saved")).signatures["serving_default"]
    served = serving(text=tf.constant(texts))
    np.testing.assert_allclose(served["probabilities"].numpy(), expected, atol=1e-6)
    candidates = model.candidate_probabilities(texts)
    np.testing.assert_allclose(expected, candidates[choice], atol=1e-6)
    assert [label.decode() for label in served["label"].numpy()] == [
        ["neg", "pos"][k] for k in np.argmax(expected, axis=-1)]


def test_a_model_no_better_than_the_majority_class_is_called_so():
    from seqlab.pipelines.sentiment import no_better_line, no_better_than_majority

    figures = {"model": {"accuracy": 0.4}, "majority_class": {"accuracy": 0.4667,
                                                               "class": "positive"}}
    assert no_better_than_majority(figures)
    assert no_better_line(figures, 121).startswith(
        "warning: the model is no better than always answering the majority class (positive, "
        "accuracy 0.4667)")
    figures["model"]["accuracy"] = 0.5333
    assert not no_better_than_majority(figures)
    # A test split of one class that the model gets all right is no failure.
    assert not no_better_than_majority({"model": {"accuracy": 1.0},
                                        "majority_class": {"accuracy": 1.0}})


def test_a_vocabulary_file_of_other_bytes_is_named_with_its_line(tmp_path, capsys):
    # The error was the whole file's bytes in a UnicodeDecodeError, without the file's name.
    run = tmp_path / "run"
    shutil.copytree(Path(__file__).parents[1] / "fixtures" / "v0.1.0" / "sentiment", run)
    with open(run / "vocabulary.txt", "ab") as vocabulary:
        vocabulary.write(b"caf\xe9\n")  # Latin-1, not UTF-8
    lines = (run / "vocabulary.txt").read_bytes().count(b"\n")
    assert cli.main(["sentiment", "predict", "--run", str(run), "a fine film"]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and len(error) < 300, error
    assert (f"{run / 'vocabulary.txt'}, line {lines}: undecodable bytes at byte offset" in error
            and "expected UTF-8 text" in error), error


@pytest.mark.parametrize("classes", ['[[]]', '[null, "positive"]', '["negative", "negative"]',
                                     '["positive"]', '{"0": "negative"}', '"negative"'])
def test_a_hand_edited_classes_file_is_named_in_one_line(tmp_path, capsys, classes):
    # Found by the long fuzzing budget: a list holding a list or null crashed evaluate with a
    # TypeError deep in the label lookup.
    run = tmp_path / "run"
    shutil.copytree(Path(__file__).parents[1] / "fixtures" / "v0.1.0" / "sentiment", run)
    (run / "classes.json").write_text(classes)
    for action in (["evaluate"], ["predict", "a fine film"]):
        assert cli.main(["sentiment", *action, "--run", str(run)]) == 2
        error = capsys.readouterr().err
        assert error.count("\n") == 1, error
        assert f"{run / 'classes.json'}: expected a list of at least two distinct" in error
