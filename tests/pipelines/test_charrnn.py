"""Tests of pipelines/charrnn.py on a tiny text made here (tiny models, one epoch)."""

import contextlib
import io
import json
import math
import shutil

import numpy as np
import pandas as pd
import pytest
import tensorflow as tf

from seqlab import cli
from seqlab.data.errors import DataError
from seqlab.layers import reset_states
from seqlab.models.char_lm import MAX_PROMPT_CHARS, NEVER, suppress_ids
from seqlab.pipelines.charrnn import (
    PIPELINE,
    CharRNNConfig,
    build_model,
    evaluate,
    export,
    predict,
    sample_prompt,
    text_generator,
    train,
)
from seqlab.pipelines.common import UsageError


def write_text(path, lines=90):
    """A small, regular text: names, animals and places in a fixed rhythm."""
    names, animals, places = ["ann", "bob", "cid"], ["cat", "dog", "owl", "yak"], ["mat", "log"]
    text = "".join(
        f"{names[i % 3]}: the {animals[i % 4]} sat on the {places[i % 2]}.\n" for i in range(lines)
    )
    path.write_text(text, encoding="utf-8")
    return path


TINY = ["--units", "16", "--window", "16", "--batch-size", "8", "--epochs", "1",
        "--embedding-dim", "8", "--learning-rate", "0.02", "--sample-chars", "24"]


@pytest.fixture(scope="module")
def stateless(tmp_path_factory):
    """A stateless GRU run trained through the command line."""
    folder = tmp_path_factory.mktemp("charrnn")
    data = write_text(folder / "tiny.txt")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = cli.main(["charrnn", "train", "--data", str(data), "--out", str(folder / "run"),
                           *TINY])
    assert status == 0
    return data, folder / "run", out.getvalue()


@pytest.fixture(scope="module")
def stateful(tmp_path_factory):
    """A stateful 2-layer LSTM run with 4 streams."""
    folder = tmp_path_factory.mktemp("charrnn_stateful")
    data = write_text(folder / "tiny.txt")
    config = CharRNNConfig(
        data=str(data), out=str(folder / "run"), stateful=True, model="lstm", layers=2,
        units=12, window=16, batch_size=4, epochs=1, embedding_dim=0, sample_chars=10,
        learning_rate=0.02,
    )
    return config, train(config)


@pytest.fixture(scope="module")
def loaded(stateless):
    """The stateless run's `(config, vocabulary, model, generator)`."""
    run = PIPELINE.load_run(stateless[1])
    vocabulary = run.artifacts["vocabulary"]
    return run.config, vocabulary, run.model, text_generator(run.model, vocabulary)


def test_train_writes_a_complete_run_directory_and_reports_the_figures(stateless):
    _, run, printed = stateless
    for name in ("config.json", "metrics.json", "history.csv", "model.keras", "vocabulary.txt",
                 "plots/loss.png", "saved_model/saved_model.pb"):
        assert (run / name).is_file(), name
    assert not (run / "checkpoints").exists()
    assert len(pd.read_csv(run / "history.csv")) == 1
    metrics = json.loads((run / "metrics.json").read_text())
    model = metrics["model"]
    assert model["bits_per_char"] == pytest.approx(model["nats_per_char"] / math.log(2))
    assert model["perplexity"] == pytest.approx(math.exp(model["nats_per_char"]))
    # One epoch on a regular text already beats the character frequencies.
    assert model["nats_per_char"] < metrics["unigram_baseline"]["nats_per_char"] - 0.3
    assert metrics["reading"] == "windows of 16 characters, each from a zero state"
    assert [s["temperature"] for s in metrics["samples"]] == [0.5, 1.0, 1.5]
    prompt = metrics["sample_prompt"]
    assert prompt == "ann: the dog sat on the log."  # line 82, the first of the validation part
    assert all(s["text"].startswith(prompt) and len(s["text"]) == len(prompt) + 24
               for s in metrics["samples"])
    assert metrics["data"]["vocabulary_size"] == len(set((run.parent / "tiny.txt").read_text())) + 2
    assert sum(metrics["data"]["train_char_counts"].values()) == metrics["data"]["train_chars"]
    assert "nats/char" in printed and "--- temperature 1.5:" in printed
    assert f"{model['nats_per_char']:.4f}" in printed


def test_stateful_training_end_to_end(stateful):
    config, result = stateful
    metrics = result.metrics
    assert metrics["reading"] == (
        "4 contiguous streams, state carried across windows of 16"
    )
    assert np.isfinite(metrics["model"]["nats_per_char"])
    assert len(metrics["samples"]) == 3
    model = PIPELINE.load_run(result.path).model
    assert model.stateful and model.batch_size == 4 and model.get_layer("lstm_1").stateful
    # evaluate reads the validation part again, streams reset first: the same figure.
    again = evaluate(result.path).metrics
    assert again["model"]["nats_per_char"] == pytest.approx(
        metrics["model"]["nats_per_char"], abs=1e-5
    )


def test_build_model_follows_the_config():
    config = CharRNNConfig(stateful=True, model="lstm", layers=2, units=4, window=5,
                           batch_size=2, embedding_dim=0, dropout=0.25)
    model = build_model(config, vocab_size=6)
    assert model.built and model.stateful and model.batch_size == 2
    assert [layer.name for layer in model.layers] == ["embedding", "lstm_0", "lstm_1", "logits"]
    assert model.embedding.output_dim == 6 and not model.embedding.trainable  # one-hot
    assert model.get_layer("lstm_1").dropout == 0.25 and model.get_layer("lstm_1").seed == 43
    assert model.optimizer.learning_rate.numpy() == pytest.approx(2e-3)


def test_a_batch_of_one_reads_on_from_the_stateful_models_states(stateful):
    _, result = stateful
    model = PIPELINE.load_run(result.path).model
    windows = tf.constant(np.random.default_rng(0).integers(2, model.vocabulary_size,
                                                            size=(4, 16)), tf.int32)
    reset_states(model)
    expected = model(windows)
    # One row at a time, then the second window of that row from the carried state.
    row_logits, states = model.call_with_states(windows[:1, :7], model.initial_states(1))
    rest_logits, _ = model.call_with_states(windows[:1, 7:], states)
    np.testing.assert_allclose(
        np.concatenate([row_logits, rest_logits], axis=1), expected[:1], atol=1e-5
    )


def naive_greedy(model, vocabulary, prompt, num_chars):
    """The seeds' loop: re-run the model on the whole text so far for every new character."""
    ids = list(vocabulary.encode(prompt)[0])
    last_logits = []
    for _ in range(num_chars):
        logits = model(np.array([ids], "int32"))[0, -1].numpy()
        logits[:2] += NEVER  # padding and [UNK] are never generated
        last_logits.append(logits)
        ids.append(int(np.argmax(logits)))
    return vocabulary.decode(ids), np.array(last_logits)


def test_generation_with_carried_state_equals_refeeding_the_whole_text(loaded):
    _, vocabulary, model, generator = loaded
    expected, expected_logits = naive_greedy(model, vocabulary, "bob: the", 20)
    assert generator.generate("bob: the", 20, temperature=0.0) == expected
    # The step-by-step logits equal the full passes (up to float rounding).
    ids = vocabulary.encode(expected)[0]
    logits, states = model.call_with_states(ids[None, :8], model.initial_states(1))
    stepped = [logits[0, -1].numpy()]
    for token in ids[8:-1]:
        logits, states = model.step(np.array([token], "int32"), states)
        stepped.append(logits[0].numpy())
    stepped = suppress_ids(np.array(stepped), (0, 1))
    np.testing.assert_allclose(stepped, expected_logits, atol=1e-4)


def test_saved_model_generate_equals_the_python_path(stateless, loaded, tmp_path):
    _, run, _ = stateless
    _, vocabulary, model, generator = loaded
    summary = export(run, out=str(tmp_path / "exported")).summary
    assert "generate(prompt: string[None]" in summary
    reloaded = tf.saved_model.load(str(tmp_path / "exported"))
    assert set(reloaded.signatures) == {"serving_default", "generate"}
    prompts = ["ann: the", "", "cid"]
    texts = reloaded.signatures["generate"](
        prompt=tf.constant(prompts),
        num_chars=tf.constant([30, 5, 12]),
        temperature=tf.constant([0.0, 0.0, 1.0]),
        seed=tf.constant([0, 0, 5]),
    )["text"].numpy()
    texts = [t.decode("utf-8") for t in texts]
    assert texts[0] == generator.generate("ann: the", 30, temperature=0.0)
    assert texts[1] == generator.generate("", 5, temperature=0.0)[:5] and len(texts[1]) == 5
    assert texts[2] == generator.generate("cid", 12, temperature=1.0, seed=5)

    # serving_default: one character per request, the state kept by the caller.
    serve = reloaded.signatures["serving_default"]
    ids = vocabulary.encode("ann: the")[0]
    states = {"gru_0_h": tf.zeros([1, 16])}
    for token in ids:
        outputs = serve(char_ids=tf.constant([[token]], tf.int32), **states)
        states = {"gru_0_h": outputs["gru_0_h"]}
    full, _ = model.call_with_states(ids[None], model.initial_states(1))
    np.testing.assert_allclose(outputs["logits"][0, -1], suppress_ids(full[0, -1], (0, 1)),
                               atol=1e-5)
    assert int(np.argmax(outputs["logits"][0, -1])) >= 2  # padding and [UNK] are never chosen


def test_generate_and_predict_on_the_command_line(stateless, loaded, tmp_path, capsys):
    _, run, _ = stateless
    greedy = loaded[-1].generate("bob:", 12, temperature=0.0)
    assert cli.main(["charrnn", "generate", "--run", str(run), "--prompt", "bob:",
                     "--num-chars", "12", "--temperature", "0"]) == 0
    assert capsys.readouterr().out == greedy + "\n"

    prompt_file = tmp_path / "prompt.txt"
    prompt_file.write_text("bob:")
    output = tmp_path / "sample.txt"
    assert cli.main(["charrnn", "predict", "--run", str(run), "--data", str(prompt_file),
                     "--num-chars", "12", "--temperature", "0", "--output", str(output)]) == 0
    assert output.read_text() == greedy
    assert f"(written to {output})" in capsys.readouterr().out

    # --top-k, --seed and --temperature reach the sampler (top-k 1 is greedy at any T).
    assert predict(run, prompt="bob:", num_chars=12, temperature=1.5, top_k=1,
                   seed=3).summary == greedy
    sampled = predict(run, prompt="bob:", num_chars=12, temperature=1.5, seed=3).summary
    assert sampled == loaded[-1].generate("bob:", 12, temperature=1.5, seed=3)

    assert cli.main(["charrnn", "generate", "--run", str(run), "--prompt", "a",
                     "--data", str(prompt_file)]) == 2
    assert "give the prompt either with --prompt or in a --data file" in capsys.readouterr().err

    # A prompt is read one network step per character: a file of a million characters took
    # 50 s and 1.6 GB. The command refuses more than the SavedModel's generate takes, before
    # the run is loaded.
    long_prompt = tmp_path / "long.txt"
    long_prompt.write_text("b" * (MAX_PROMPT_CHARS + 1))
    assert cli.main(["charrnn", "generate", "--run", str(run), "--data", str(long_prompt),
                     "--num-chars", "1"]) == 2
    assert (f"long.txt: the prompt has 100,001 characters; at most MAX_PROMPT_CHARS=100,000 "
            f"are read") in capsys.readouterr().err
    with pytest.raises(UsageError, match=r"--prompt: the prompt has 100,001 characters"):
        predict(run, prompt="b" * (MAX_PROMPT_CHARS + 1), num_chars=1)


def test_prompt_and_evaluation_characters_outside_the_vocabulary(stateless, tmp_path):
    data, run, _ = stateless
    text = predict(run, prompt="Zoë:", num_chars=3, temperature=0.0).summary
    assert text.startswith("Zoë:")
    assert "read as [UNK]: 'Z' x1, 'ë' x1" in text
    other = tmp_path / "other.txt"
    other.write_text(data.read_text()[:400] + "ZZ!\n")
    metrics = evaluate(run, data=str(other), output=str(tmp_path / "eval.json")).metrics
    assert metrics["unseen_chars"] == {"Z": 2, "!": 1}
    assert metrics["split"] == "whole text" and metrics["chars_scored"] == 400
    assert json.loads((tmp_path / "eval.json").read_text())["model"] == metrics["model"]


def test_bad_text_is_a_data_error(tmp_path, capsys):
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"the cat\nsat \x80 on\n")
    assert cli.main(["charrnn", "train", "--data", str(bad), "--out", str(tmp_path / "r")]) == 2
    assert "bad.txt, line 2: undecodable bytes at byte offset 12 (0x80); expected UTF-8 text" in (
        capsys.readouterr().err
    )
    assert not (tmp_path / "r.partial").exists()

    data = write_text(tmp_path / "tiny.txt", lines=20)
    with pytest.raises(DataError, match=r"tiny\.txt \(validation part\): the text is too short "
                                        r"for stateful batches of 8 streams x 16 steps"):
        train(CharRNNConfig(data=str(data), out=str(tmp_path / "s"), stateful=True,
                            batch_size=8, window=16))
    # A validation part of nearly all the text leaves a training part too short: named so (it
    # was the file's name alone, beside a count of a few characters for a long file).
    with pytest.raises(DataError, match=r"tiny\.txt \(training part\): the text is too short "
                                        r"for one window of 16 steps"):
        train(CharRNNConfig(data=str(data), out=str(tmp_path / "v"), val_fraction=0.99,
                            window=16))

    unseen = tmp_path / "unseen.txt"
    unseen.write_text("abcabc" * 30 + "abcxbc")
    with pytest.raises(DataError, match=r"unseen\.txt, line 1: character 'x' \(offset 183\) is "
                                        r"not in the training vocabulary"):
        train(CharRNNConfig(data=str(unseen), out=str(tmp_path / "u"), unseen_chars="error",
                            window=4))


def test_bad_settings_are_usage_errors(stateless, loaded):
    _, run, _ = stateless
    # 1e39 is finite in Python but beyond float32, the sampler's dtype.
    for temperature in (-1.0, float("nan"), float("inf"), 1e39):
        with pytest.raises(UsageError, match="temperature must be 0 \\(greedy\\) or a positive"):
            predict(run, prompt="a", temperature=temperature)
    # The largest float32 samples; the Python API refuses the same numbers as a ValueError.
    predict(run, prompt="a", num_chars=3, temperature=3.4028234663852886e38)
    with pytest.raises(ValueError, match="temperature must be 0 \\(greedy\\) or a positive"):
        loaded[3].generate("a", 3, temperature=1e39)
    with pytest.raises(UsageError, match="num_chars must be at least 0. Received: num_chars=-1"):
        predict(run, prompt="a", num_chars=-1)
    for seed in (-1, 2**32):
        with pytest.raises(UsageError, match=r"seed must lie in \[0, 2\*\*31\)"):
            predict(run, prompt="a", seed=seed)
    # The command line answers the same in one line, exit status 2.
    assert cli.main(["charrnn", "generate", "--run", str(run), "--seed", "-1"]) == 2
    with pytest.raises(ValueError, match="window must be at least 1. Received: window=0"):
        CharRNNConfig(window=0)
    with pytest.raises(ValueError, match="stateful training runs on one device"):
        CharRNNConfig(stateful=True, distribute="mirrored")


def test_a_shortened_vocabulary_is_named_with_config_json(stateless, tmp_path):
    # The weight's shape differed from the vocabulary's size, and the message blamed
    # config.json alone.
    run = tmp_path / "copy"
    shutil.copytree(stateless[1], run)
    lines = (run / "vocabulary.txt").read_text(encoding="utf-8").splitlines(True)
    (run / "vocabulary.txt").write_text("".join(lines[:-3]), encoding="utf-8")
    with pytest.raises(UsageError, match=r"copy: config\.json or vocabulary\.txt does not match "
                                         r"its model\.keras \(weight .* has shape \(\d+, 8\), "
                                         r"they give \(\d+, 8\)\); a file was edited"):
        predict(run, prompt="a", num_chars=3)


def test_a_vocabulary_edited_to_the_same_length_is_refused(stateless, tmp_path):
    """A character replaced ("\\n" read as "Q") passes every check of the file's form and the
    model's shapes: the run's marker keeps the vocabulary's SHA-256 from train."""
    run = tmp_path / "copy"
    shutil.copytree(stateless[1], run)
    original = (run / "vocabulary.txt").read_text(encoding="utf-8")
    assert original.startswith('"\\n"\n')
    (run / "vocabulary.txt").write_text(original.replace('"\\n"', '"Q"', 1), encoding="utf-8")
    with pytest.raises(UsageError, match=r"copy/vocabulary\.txt: changed since train wrote it "
                                         r"\(its SHA-256 is not the one seqlab-run\.json "
                                         r"recorded\)"):
        predict(run, prompt="a", num_chars=3)
    (run / "vocabulary.txt").write_text(original, encoding="utf-8")
    predict(run, prompt="a", num_chars=3)  # put back: read again


def test_the_sample_prompt_is_the_first_line_of_the_validation_text_that_is_not_blank():
    # A validation part that starts after a paragraph break used to give the prompt "\n".
    first = "KING HENRY: now, my lords,"
    assert sample_prompt(None, f"\n  \n{first}\nmore") == first
    assert sample_prompt(None, "x" * 100 + "\n") == "x" * 40
    assert sample_prompt(None, "\n\n") == "\n" and sample_prompt("", "a line") == "\n"
    assert sample_prompt("To be", "a line") == "To be"
    # A validation text that starts inside a line: its next line, where it has one.
    assert sample_prompt(None, "hat could the belly answer?\nMENENIUS:\n", mid_line=True) == \
        "MENENIUS:"
    assert sample_prompt(None, "hat could", mid_line=True) == "hat could"


def test_a_large_model_is_announced_before_it_is_built(stateless, tmp_path, monkeypatch):
    # Keras's orthogonal initialiser took minutes over --units 8192 without a word. The
    # threshold lowered to this tiny model: the line comes before fit's first epoch.
    monkeypatch.setattr("seqlab.pipelines.lifecycle.LARGE_MODEL_PARAMETERS", 1)
    data, _, quiet = stateless
    assert "building the model" not in quiet
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli.main(["charrnn", "train", "--data", str(data), "--out",
                         str(tmp_path / "run"), *TINY]) == 0
    parameters = 3 * 16 * (8 + 16) + 2 * 3 * 16  # one GRU layer, as recurrent_parameters
    assert (f"building the model: at least {parameters / 1e6:,.0f} million parameters (--model "
            "gru --units 16 --layers 1); initialising its recurrent kernels") in out.getvalue()


def test_a_run_inside_its_own_data_folder_is_refused(tmp_path, capsys):
    # Its files joined the data's fingerprint (evaluate always refused: "has changed since the
    # run trained on it") and the next train on the folder read model.keras as text.
    folder = tmp_path / "texts"
    folder.mkdir()
    (folder / "a.txt").write_text("the quick brown fox jumps over the lazy dog\n" * 20)
    assert cli.main(["charrnn", "train", "--data", str(folder), "--out",
                     str(folder / "runs" / "a"), "--epochs", "1", "--units", "2"]) == 2
    assert (f"error: --out {folder / 'runs' / 'a'} is inside the --data folder {folder}: the "
            "run's files would become part of the data; choose an --out outside it") in \
        capsys.readouterr().err
    assert sorted(p.name for p in folder.iterdir()) == ["a.txt"]


@pytest.mark.parametrize("framed_at_train", [True, False])
def test_evaluate_reads_the_validation_part_that_train_split(tmp_path, monkeypatch,
                                                             framed_at_train):
    # A run trained before Project Gutenberg frames were left out split the whole text (its
    # validation part ended with the license): evaluate left the frame out, scoring another
    # part, most of it training text.
    from seqlab.data import text as text_module

    data = write_text(tmp_path / "book.txt")
    data.write_text("*** START OF THE PROJECT GUTENBERG EBOOK TINY ***\n" + data.read_text()
                    + "*** END OF THE PROJECT GUTENBERG EBOOK TINY ***\n"
                    + "Section 1. General Terms of Use\n" * 10)
    if not framed_at_train:  # as train read it before
        monkeypatch.setattr(text_module, "without_gutenberg_frame", lambda text: (text, 0))
    with contextlib.redirect_stdout(io.StringIO()):
        assert cli.main(["charrnn", "train", "--data", str(data), "--out",
                         str(tmp_path / "run"), *TINY]) == 0
    monkeypatch.undo()
    trained = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert ("gutenberg_left_out" in trained["data"]) == framed_at_train
    figures = evaluate(tmp_path / "run").metrics
    assert figures["chars_scored"] == trained["chars_scored"]
    assert figures["model"]["nats_per_char"] == pytest.approx(
        trained["model"]["nats_per_char"], rel=1e-5)
