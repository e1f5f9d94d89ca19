"""Exported SavedModels, loaded with plain `tf.saved_model.load`, check their requests inside the
graph: a bad request fails with an `InvalidArgumentError` naming the argument and what it must
be, lengths are capped, and an empty batch gets an empty result. Good requests answer as before.

Each test exports a 0.1.0 fixture run (tests/fixtures/v0.1.0/<task>/, tiny models) again.
"""

import csv
import importlib
import shutil
import time
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from seqlab.models.char_lm import MAX_NUM_CHARS, MAX_PROMPT_CHARS, MAX_REQUEST_STEPS
from seqlab.models.translator import MAX_INPUT_TOKENS, MAX_REQUEST_POSITIONS
from seqlab.pipelines.charrnn import text_generator
from seqlab.pipelines.ner import MAX_REQUEST_TOKENS, MAX_SENTENCE_TOKENS

FIXTURES = Path(__file__).parents[1] / "fixtures" / "v0.1.0"
REFUSED = tf.errors.InvalidArgumentError


# A hang guard, not a timing: the largest requests below, checked after their work instead of
# before it, would take minutes (10**8 generation steps) or all the memory (500 texts of 900
# tokens through the encoder and the beam); the check itself took up to 2.7 s on a loaded 2-core
# machine (load average 6, TensorFlow's oneDNN kernels), where a bound of 1 s failed.
REFUSAL_SECONDS = 30.0


def refused_at_once(call, message):
    """Asserts that `call()` is refused with `message` well before the work it asks for could have
    run (REFUSAL_SECONDS): the check runs before the work."""
    start = time.perf_counter()
    with pytest.raises(REFUSED, match=message):
        call()
    assert time.perf_counter() - start < REFUSAL_SECONDS


def exported(name, tmp_path):
    """`(pipeline, loaded run, loaded SavedModel)` of the fixture run `name`, exported again."""
    run = tmp_path / name
    shutil.copytree(FIXTURES / name, run)
    pipeline = importlib.import_module(f"seqlab.pipelines.{name}").PIPELINE
    pipeline.export(str(run), out=tmp_path / "x")
    return pipeline, pipeline.load_run(str(run)), tf.saved_model.load(str(tmp_path / "x"))


def test_timeseries_window_shape_and_values_are_checked(tmp_path):
    _, run, saved = exported("timeseries", tmp_path)
    serve = saved.signatures["serving_default"]
    lookback = run.config.lookback
    schema, scaler = run.artifacts["schema"], run.artifacts["scaler"]
    n_features = len(schema.input_columns)
    window = np.arange(lookback * n_features, dtype="float32").reshape(1, lookback, n_features)

    offset, scale = scaler.parameters(schema.input_columns)
    target_offset, target_scale = scaler.parameters(schema.targets)
    expected = np.asarray(run.model((window - offset) / scale, training=False))
    expected = expected * target_scale + target_offset
    forecast = serve(window=tf.constant(window))["forecast"].numpy()
    np.testing.assert_allclose(forecast, expected, rtol=1e-5, atol=1e-5)
    assert serve(window=tf.zeros([0, lookback, n_features]))["forecast"].shape[0] == 0

    with pytest.raises(REFUSED, match=f"window must be .*exactly lookback={lookback} steps"):
        serve(window=tf.zeros([1, 5, n_features]))
    with pytest.raises(REFUSED, match="window must be .*exactly n_features="):
        serve(window=tf.zeros([1, lookback, n_features + 1]))
    with pytest.raises(REFUSED, match=r"window must be .*\(rank 3\)"):
        serve(window=tf.zeros([1, lookback, n_features, 1]))
    for bad in (np.inf, np.nan):
        with pytest.raises(REFUSED, match="window must hold finite values only"):
            serve(window=tf.fill([1, lookback, n_features], bad))
    # Values the command line refuses overflow float32 in the network (a forecast of -inf).
    with pytest.raises(REFUSED, match=r"window must hold values of at most \+-1e\+15"):
        serve(window=tf.fill([1, lookback, n_features], 1e25))
    assert np.isfinite(serve(window=tf.fill([1, lookback, n_features], 1e15))["forecast"]).all()


def test_charrnn_generate_and_step_inputs_are_checked(tmp_path):
    _, run, saved = exported("charrnn", tmp_path)
    generate, step = saved.signatures["generate"], saved.signatures["serving_default"]
    good = {"prompt": tf.constant(["The ", ""]), "num_chars": tf.constant([5, 3]),
            "temperature": tf.constant([0.0, 0.0]), "seed": tf.constant([1, 2])}

    expected = text_generator(run.model, run.artifacts["vocabulary"]).generate(
        ["The ", ""], 5, temperature=0.0, seed=1)
    texts = [t.decode("utf-8") for t in generate(**good)["text"].numpy()]
    assert texts[0] == expected[0] and texts[1] == expected[1][:3]
    empty = generate(prompt=tf.zeros([0], tf.string), num_chars=tf.zeros([0], tf.int32),
                     temperature=tf.zeros([0]), seed=tf.zeros([0], tf.int32))
    assert empty["text"].shape == (0,)

    for changes, message in [
        ({"num_chars": tf.constant([MAX_NUM_CHARS + 1, 1])},
         rf"num_chars must lie in \[0, MAX_NUM_CHARS={MAX_NUM_CHARS}\]"),
        ({"num_chars": tf.constant([-1, 1])}, r"num_chars must lie in \[0, MAX_NUM_CHARS="),
        ({"temperature": tf.constant([np.nan, 1.0])}, "temperature must be finite and >= 0"),
        ({"temperature": tf.constant([np.inf, 1.0])}, "temperature must be finite and >= 0"),
        ({"temperature": tf.constant([-0.5, 1.0])}, "temperature must be finite and >= 0"),
        ({"prompt": tf.constant([["a", "b"]])}, r"prompt must be a vector \[batch\] \(rank 1\)"),
        ({"seed": tf.constant([1])}, "seed must have one value per prompt"),
        # As --seed: a negative seed was answered.
        ({"seed": tf.constant([-1, 2])}, r"seed must lie in \[0, 2147483647\]"),
        # Its bytes were echoed into an answer the client's decode refused.
        ({"prompt": tf.constant([b"ok", b"\xff\xfe\xed\xa0\x80"])}, "prompt must be UTF-8 text"),
    ]:
        with pytest.raises(REFUSED, match=message):
            generate(**{**good, **changes})

    units = run.config.units
    states = {name: tf.zeros([1, units]) for name in step.structured_input_signature[1]
              if name != "char_ids"}
    state_name = sorted(states)[0]
    answer = step(char_ids=tf.constant([[3]]), **states)
    assert answer["logits"].shape[:2] == (1, 1)
    # No character at all: no logits, and the states come back as they were sent.
    fed_back = {name: answer[name] for name in states}
    nothing = step(char_ids=tf.zeros([1, 0], tf.int32), **fed_back)
    assert nothing["logits"].shape == (1, 0, run.model.vocabulary_size)
    for name in states:
        np.testing.assert_array_equal(nothing[name], fed_back[name])
    assert np.abs(fed_back[state_name]).max() > 0  # so the check above is not of zeros only
    with pytest.raises(REFUSED, match=rf"{state_name} must be float32\[batch of char_ids"):
        step(char_ids=tf.constant([[3]]), **{**states, state_name: tf.zeros([3, units])})
    # Ranks are named too: char_ids of rank 1 failed, in about 1 call of 15, with "slice index
    # 1 of dimension 0 out of bounds" (a slice of its shape ran beside the checks): 100 calls.
    for ids in [tf.constant([3])] * 100 + [tf.constant([[[3]]])]:
        with pytest.raises(REFUSED, match=r"char_ids must be int32\[batch, time\] \(rank 2\)"):
            step(char_ids=ids, **states)
    with pytest.raises(REFUSED, match=rf"{state_name} must be float32\[batch of char_ids, "
                                      rf"{units}\] \(rank 2\)"):
        step(char_ids=tf.constant([[3]]), **{**states, state_name: tf.zeros([units])})
    for bad in (np.nan, np.inf):
        with pytest.raises(REFUSED, match=f"{state_name} must hold finite values only"):
            step(char_ids=tf.constant([[3]]), **{**states, state_name: tf.fill([1, units], bad)})
    # A whole request is bounded as generate's prompts are: batch x time ids.
    rows = 1000
    wide = {name: tf.zeros([rows, units]) for name in states}
    started = time.perf_counter()
    with pytest.raises(REFUSED, match=r"char_ids must hold at most MAX_PROMPT_CHARS=100000 ids "
                                      r"\(batch x time\) per request"):
        step(char_ids=tf.fill([rows, 101], 3), **wide)
    assert time.perf_counter() - started < REFUSAL_SECONDS  # refused before the work
    size = run.model.vocabulary_size
    for bad in (-1, size):
        with pytest.raises(REFUSED, match=rf"char_ids must lie in \[0, vocabulary size {size}\)"):
            step(char_ids=tf.constant([[bad]]), **states)


def test_charrnn_generate_bounds_the_work_of_a_whole_request(tmp_path):
    _, _, saved = exported("charrnn", tmp_path)
    generate = saved.signatures["generate"]

    def request(prompts, num_chars):
        rows = len(prompts)
        return lambda: generate(prompt=tf.constant(prompts), num_chars=tf.constant(num_chars),
                                temperature=tf.zeros([rows]), seed=tf.zeros([rows], tf.int32))

    # Every prompt runs as many steps as the longest continuation: 1,000 prompts where one asks
    # for MAX_NUM_CHARS would run 10**8 steps (minutes).
    steps = rf"prompts x the largest num_chars at most MAX_REQUEST_STEPS={MAX_REQUEST_STEPS}"
    refused_at_once(request(["a"] * 1000, [MAX_NUM_CHARS] + [1] * 999), steps)
    rows = MAX_REQUEST_STEPS // 1000 + 1
    refused_at_once(request(["a"] * rows, [1000] * rows), steps)
    # Prompts are read as a padded matrix: rows x the longest prompt.
    prompt_chars = rf"prompts x the longest prompt at most MAX_PROMPT_CHARS={MAX_PROMPT_CHARS}"
    refused_at_once(request(["é" * (MAX_PROMPT_CHARS + 1)], [1]), prompt_chars)
    rows = MAX_PROMPT_CHARS // 100
    refused_at_once(request(["a" * 101] + ["a"] * (rows - 1), [1] * rows), prompt_chars)
    # At the bound (counted in characters, not bytes) the request is answered.
    texts = generate(prompt=tf.constant(["é" * 100] * rows), num_chars=tf.ones([rows], tf.int32),
                     temperature=tf.zeros([rows]), seed=tf.zeros([rows], tf.int32))["text"]
    assert texts.shape == (rows,)


def test_translate_input_length_is_capped_and_empty_batch_answered(tmp_path):
    _, _, saved = exported("translate", tmp_path)
    serve = saved.signatures["serving_default"]
    texts = ["a dog runs .", "two men are talking ."]
    expected = (FIXTURES / "translate" / "expected_predict.txt").read_text("utf-8").splitlines()
    translations = serve(text=tf.constant(texts))["translation"].numpy()
    assert [t.decode("utf-8") for t in translations] == expected
    assert serve(text=tf.zeros([0], tf.string))["translation"].shape == (0,)
    assert serve(text=tf.constant(["a " * MAX_INPUT_TOKENS]))["translation"].shape == (1,)

    with pytest.raises(REFUSED, match=f"at most MAX_INPUT_TOKENS={MAX_INPUT_TOKENS} tokens"):
        serve(text=tf.constant(["a dog", "a " * (MAX_INPUT_TOKENS + 1)]))
    with pytest.raises(REFUSED, match=r"text must be a vector \[batch\] \(rank 1\)"):
        serve(text=tf.constant([["a dog"]]))


def test_translate_bounds_the_positions_of_a_whole_request(tmp_path):
    _, run, saved = exported("translate", tmp_path)
    serve = saved.signatures["serving_default"]
    beam_width, max_length = run.config.beam_width, run.model.max_length
    message = f"text must fit MAX_REQUEST_POSITIONS={MAX_REQUEST_POSITIONS}: texts x beam width"
    # 500 texts of 900 tokens ran out of memory in the encoder and the beam's caches.
    huge = tf.constant(["a " * 900] * 500)
    refused_at_once(lambda: serve(text=huge), message)
    # Texts of one token hold beam_width x (1 + max_length) positions each.
    fitting = MAX_REQUEST_POSITIONS // (beam_width * (1 + max_length))
    assert serve(text=tf.fill([fitting], "dog"))["translation"].shape == (fitting,)
    refused_at_once(lambda: serve(text=tf.fill([fitting + 1], "dog")), message)
    # The longest text counts for every row (the batch is padded to it).
    with pytest.raises(REFUSED, match=message):
        serve(text=tf.constant(["a " * MAX_INPUT_TOKENS] + ["dog"] * (fitting // 10)))


def test_ner_empty_batch_gets_an_empty_result(tmp_path):
    _, _, saved = exported("ner", tmp_path)
    serve = saved.signatures["serving_default"]
    lines = (FIXTURES / "ner" / "expected_predict.txt").read_text("utf-8").splitlines()
    words, tags = zip(*(line.split("\t") for line in lines if line))
    answer = serve(tokens=tf.constant([list(words), [words[0], "", "", ""]]))["tags"].numpy()
    assert [t.decode() for t in answer[0]] == list(tags)
    assert answer[1, 0].decode() == tags[0] and set(answer[1, 1:]) == {b""}
    for shape in ([0, 0], [0, 3], [2, 0]):
        assert serve(tokens=tf.zeros(shape, tf.string))["tags"].shape == tuple(shape)
    # Padding only: words without characters (an empty character loop failed).
    assert set(serve(tokens=tf.fill([2, 3], ""))["tags"].numpy().ravel()) == {b""}
    for tokens in (tf.constant(["a", "b"]), tf.constant([[["a"]]])):
        with pytest.raises(REFUSED, match=r"tokens must be a matrix \[batch, words\] of "
                                          r"strings \(rank 2\)"):
            serve(tokens=tokens)


def test_ner_request_words_are_capped_per_row_and_in_all(tmp_path):
    _, _, saved = exported("ner", tmp_path)
    serve = saved.signatures["serving_default"]
    assert serve(tokens=tf.fill([1, MAX_SENTENCE_TOKENS], "a"))["tags"].shape == (
        1, MAX_SENTENCE_TOKENS)
    per_row = f"tokens must have at most MAX_SENTENCE_TOKENS={MAX_SENTENCE_TOKENS} words per row"
    refused_at_once(lambda: serve(tokens=tf.fill([1, MAX_SENTENCE_TOKENS + 1], "a")), per_row)
    # The padding "" is no word: a short row padded past the limit beside a long one, and an
    # empty batch of many columns, are served (both were refused as rows too long).
    padded = tf.concat([tf.fill([1, 10], "a"), tf.fill([1, MAX_SENTENCE_TOKENS - 9], "")], 1)
    answer = serve(tokens=padded)["tags"].numpy()
    assert answer.shape == (1, MAX_SENTENCE_TOKENS + 1) and set(answer[0, 10:]) == {b""}
    assert serve(tokens=tf.zeros([0, 2 * MAX_SENTENCE_TOKENS], tf.string))["tags"].shape == (
        0, 2 * MAX_SENTENCE_TOKENS)
    # 100 rows of 10,000 words ran out of memory in the character encoder.
    huge = tf.fill([100, 10_000], "a")
    refused_at_once(lambda: serve(tokens=huge), per_row)
    rows = MAX_REQUEST_TOKENS // 100
    assert serve(tokens=tf.fill([rows, 100], "a"))["tags"].shape == (rows, 100)
    in_all = rf"tokens must hold at most MAX_REQUEST_TOKENS={MAX_REQUEST_TOKENS} words in all"
    refused_at_once(lambda: serve(tokens=tf.fill([rows + 1, 100], "a")), in_all)
    huge = tf.fill([MAX_REQUEST_TOKENS, 10], "a")
    refused_at_once(lambda: serve(tokens=huge), in_all)


def test_sentiment_empty_batch_gets_empty_results(tmp_path):
    _, _, saved = exported("sentiment", tmp_path)
    serve = saved.signatures["serving_default"]
    with open(FIXTURES / "sentiment" / "expected_predict.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    answer = serve(text=tf.constant([row["text"] for row in rows]))
    assert [label.decode() for label in answer["label"].numpy()] == [r["label"] for r in rows]
    np.testing.assert_allclose(answer["probabilities"].numpy()[:, 0],
                               [float(r["p_negative"]) for r in rows], atol=1e-5)
    empty = serve(text=tf.zeros([0], tf.string))
    assert empty["label"].shape == (0,) and empty["probabilities"].shape[0] == 0
    for text in (tf.constant("hello"), tf.constant([["hello"]])):
        with pytest.raises(REFUSED, match=r"text must be a vector \[batch\] of strings "
                                          r"\(rank 1\)"):
            serve(text=text)


@pytest.mark.parametrize("task, argument, good, bad", [
    ("sentiment", "text", ["é dog"], [b"ok", b"a \xff\xfe"]),
    ("translate", "text", ["é dog"], [b"ok", b"a \xff\xfe"]),
    ("ner", "tokens", [["é", "dog"]], [[b"ok", b"\xed\xa0\x80"]]),
])
def test_text_signatures_refuse_strings_that_are_not_utf8(tmp_path, task, argument, good, bad):
    # As predict refuses such a file (and charrnn's generate such a prompt): they were answered.
    _, _, saved = exported(task, tmp_path)
    serve = saved.signatures["serving_default"]
    serve(**{argument: tf.constant(good)})
    with pytest.raises(REFUSED, match=f"{argument} must be UTF-8 text"):
        serve(**{argument: tf.constant(bad)})
