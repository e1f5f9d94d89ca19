"""Tests of pipelines/ner.py on tiny CoNLL files written here (tiny models, 1-2 epochs)."""

import contextlib
import io
import json
import math
import re

import keras
import numpy as np
import pytest
import tensorflow as tf

from seqlab import cli
from seqlab.data.conll import Sentence, TaggingVocabulary, encode_sentences, make_tagging_dataset
from seqlab.data.errors import DataError
from seqlab.models import SequenceTagger
from seqlab.pipelines.metrics import entity_scores
from seqlab.pipelines.ner import (
    NerConfig,
    build_model,
    fit_inputs,
    learning_notes,
    predict_tags,
    read_splits,
    repair_bio,
    repair_bio_graph,
    sentences_also_in,
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
    # Of the test sentences, those whose tokens are a training sentence's (the template
    # sentences repeat): counted the same way here as by the run.
    splits = read_splits(NerConfig(**json.loads((out / "config.json").read_text())["settings"]))
    assert metrics["data"]["also_in_training"] == {
        split: sum(tuple(s.tokens) in {tuple(t.tokens) for t in splits.train}
                   for s in getattr(splits, split)) for split in ("validation", "test")}
    overlap = metrics["data"]["also_in_training"]
    assert (f"note: {overlap['test']} of the 12 test sentences" in stdout) == (overlap["test"] > 0)
    assert set(metrics["conlleval"]) == {"precision", "recall", "f1"}
    for name in ("config.json", "history.csv", "model.keras", "vocabulary.json",
                 "test_predictions.conll", "plots/loss.png", "saved_model/saved_model.pb"):
        assert (out / name).is_file(), name
    vocabulary = json.loads((out / "vocabulary.json").read_text())
    assert vocabulary["words"][:2] == ["[PAD]", "[UNK]"] and "alice" in vocabulary["words"]
    assert vocabulary["tags"] == ["O", "B-LOC", "I-LOC", "B-ORG", "I-ORG", "B-PER", "I-PER"]
    first_line = (out / "test_predictions.conll").read_text().splitlines()[0].split("\t")
    assert len(first_line) == 3


def test_sentences_also_in_training_are_those_with_a_training_sentences_tokens():
    def sentence(text):
        return Sentence(text.split(), ["O"] * len(text.split()), list(range(len(text.split()))))

    train_sentences = [sentence("Alice flew to Paris"), sentence("Bob stayed")]
    test = [sentence("Alice flew to Paris"), sentence("Alice flew to Rome"), sentence("Bob")]
    assert sentences_also_in(test, train_sentences) == 1
    assert sentences_also_in([], train_sentences) == 0


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
    expected = [repair_bio(tags) for tags in
                predict_tags(model, vocabulary, [Sentence(row, None, []) for row in rows])]
    for row, tags, served_row in zip(rows, expected, served):
        assert list(served_row[: len(row)]) == tags
        assert all(tag == "" for tag in served_row[len(row):])
    # Invisible characters and spaces at a token's edges are stripped in the graph, as
    # predict's readers strip them ("\u200bYork" was an unknown word there, and changed its
    # neighbours' tags); a token of nothing else gets the padding's empty tag.
    # White space of every kind too, as a line without tabs loses it ("\xa0moved" was another
    # word than predict's "moved", and tags around it changed).
    dirty = [["\ufeffAlice", "lives\u200b", " in", "New\u2060", "\u200cYork\u200d", "."],
             ["Globex", "\u200b", "hired", "Zoë", "", ""],
             ["\xa0Alice", "lives\u3000", "\u2028in", "New\r", "\x1fYork\u202f", "\x85."],
             ["Globex", "\xa0", "hired", "Zoë", "\u2003", ""]]
    served = serving(tokens=tf.constant(dirty))["tags"].numpy().astype(str)
    assert list(served[0]) == expected[0] and list(served[2]) == expected[0]
    assert served[1][1] == "" and served[1][0] != ""
    assert served[3][1] == served[3][4] == "" and served[3][0] != ""


INVALID_ROWS = [
    (["I-PER", "O", "I-LOC", "I-LOC", "B-PER", "I-LOC", "I-PER"],
     ["B-PER", "O", "B-LOC", "I-LOC", "B-PER", "B-LOC", "B-PER"]),
    (["B-ORG", "I-ORG", "O", "I-MISC"], ["B-ORG", "I-ORG", "O", "B-MISC"]),
    (["O", "O"], ["O", "O"]),
]


def test_an_i_tag_that_continues_nothing_is_repaired_to_b_in_python_and_in_the_graph():
    for tags, repaired in INVALID_ROWS:
        assert repair_bio(tags) == repaired
    width = max(len(tags) for tags, _ in INVALID_ROWS)
    batch = tf.constant([tags + [""] * (width - len(tags)) for tags, _ in INVALID_ROWS])
    graph = tf.function(repair_bio_graph)(batch).numpy().astype(str)
    for (tags, repaired), row in zip(INVALID_ROWS, graph):
        assert list(row[: len(tags)]) == repaired


def test_predict_never_prints_an_i_tag_that_continues_nothing(crf_run, monkeypatch):
    from seqlab.pipelines import ner

    monkeypatch.setattr(ner, "predict_tags", lambda model, vocabulary, sentences, **_: [
        ["I-PER", "O", "O", "O", "I-LOC"] for _ in sentences])
    status, stdout, stderr = run_cli(["ner", "predict", "--run", str(crf_run[0]),
                                      "Einstein was born in Ulm"])
    assert status == 0, stderr
    assert stdout.splitlines() == ["Einstein\tB-PER", "was\tO", "born\tO", "in\tO",
                                   "Ulm\tB-LOC"]


def test_a_words_first_characters_are_those_of_the_whole_word_split():
    from seqlab.pipelines.ner import word_characters

    # Multi-byte characters, 4-byte ones cut by the byte bound, invalid bytes, empty words,
    # and a long word (the served graph split whole words: one 100 MB word took 4.5 GB).
    tokens = tf.constant([
        ["héllo".encode() * 3, "😀".encode() * 30 + b"x", b"a" + "😀".encode() * 10,
         b"ab\xff\xfecd"],
        [b"", b"z" * 100_000, "ß".encode(), b""],
    ])
    for cut in (1, 3, 5, 20):
        whole = tf.strings.unicode_split(tokens, "UTF-8")[:, :, :cut].to_list()
        assert word_characters(tokens, cut).to_list() == whole, cut


def test_the_summary_says_plainly_when_the_model_learned_nothing():
    zero = {"f1": 0.0, "epochs_run": 2, "support": 5,
            "per_type": {"PER": {"support": 3, "f1": 0.0}, "LOC": {"support": 2, "f1": 0.0}}}
    (line,) = learning_notes(zero, 0, 40, sample=False)
    assert line.startswith("the model predicts no entity on the test split (every token O)")
    assert "40 training sentences and 2 epochs are too few to learn from" in line
    assert "a data set such as --data wnut17" in line
    # A run on wnut17 already is not told to use it.
    (line,) = learning_notes(zero, 0, 40, sample=False, data="wnut17")
    assert "train on more data (your own CoNLL files) or longer" in line
    for path in ("/data/wnut17", "/data/WNUT17/wnut17train.conll"):  # its files by path
        (line,) = learning_notes(zero, 0, 40, sample=False, data=path)
        assert "train on more data (your own CoNLL files) or longer" in line, path
    (line,) = learning_notes(zero, 7, 40, sample=False)
    assert line.startswith("none of the 7 entities the model predicts on the test split "
                           "matches a test entity")
    some = {"f1": 0.5, "epochs_run": 9, "support": 5,
            "per_type": {"PER": {"support": 3, "f1": 0.8}, "LOC": {"support": 2, "f1": 0.0},
                         "ORG": {"support": 0, "f1": 0.0}}}
    (line,) = learning_notes(some, 4, 40, sample=False)
    assert line.startswith("never found correctly on the test split (F1 0): LOC;")
    assert learning_notes({**some, "per_type": {}}, 4, 40, sample=False) == []
    assert "the shipped sample is a smoke test" in learning_notes(some, 4, 40, sample=True)[-1]
    # A test split without entities: nothing to learn from its figures (0 / 0, n/a in the
    # table), whether the model predicts entities there or not.
    none = {"f1": math.nan, "epochs_run": 2, "support": 0, "per_type": {}}
    assert learning_notes(none, 0, 40, sample=False) == []
    assert learning_notes(none, 3, 40, sample=False) == []
    # A validation split without entities: no F1 chose the epoch.
    (line,) = learning_notes({**some, "validation": {"support": 0}}, 4, 40, sample=False)[1:]
    assert line.startswith("the validation split holds no entity, so it has no F1")


def test_the_sample_runs_summary_says_it_is_a_smoke_test(softmax_run):
    assert "the shipped sample is a smoke test that the pipeline runs" in softmax_run.summary
    # Named as the other tasks name their samples, its sentences counted once (it said "32
    # sentences held out from /.../site-packages/seqlab/data/samples/ner_sample.conll (seed
    # 42), 32 sentences").
    assert softmax_run.summary.splitlines()[0].endswith(
        "test split: 32 sentences held out from seqlab smoke-test sample "
        "(data/samples/ner_sample.conll) (seed 42)")


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
    # One long sentence: the file holds every token, the terminal the first hundred.
    lines.write_text(" ".join(["Oslo"] * 300) + "\n", encoding="utf-8")
    status, stdout, _ = run_cli(["ner", "predict", "--run", str(out), "--input", str(lines),
                                 "--output", str(tmp_path / "long.conll")])
    assert status == 0 and len((tmp_path / "long.conll").read_text().splitlines()) == 300
    assert stdout.splitlines()[100:] == ["... (300 tokens in all)",
                                         f"written to {tmp_path / 'long.conll'}"]

    status, _, stderr = run_cli(["ner", "predict", "--run", str(out)])
    assert status == 2 and "give either a sentence" in stderr
    # A sentence on the command line is bounded as a file's is (it was not: 60,000 words ran).
    status, _, stderr = run_cli(["ner", "predict", "--run", str(out), " ".join(["w"] * 1001)])
    assert status == 2 and "the sentence has 1,001 words, more than MAX_SENTENCE_TOKENS=1000" \
        in stderr


def test_a_file_is_tagged_in_chunks_saying_how_far_it_got(crf_run, tmp_path, monkeypatch):
    # A million lines were encoded at once (3 GB) and tagged for minutes without a word; a
    # token of 100,000 characters filled the terminal.
    from seqlab.pipelines import ner

    out = crf_run[0]
    lines = tmp_path / "sentences.txt"
    lines.write_text("x" * 500 + " in Ulm\n"
                     + "".join(f"Alice lives in Oslo {i}\n" for i in range(7)), encoding="utf-8")
    status, whole, _ = run_cli(["ner", "predict", "--run", str(out), "--input", str(lines),
                                "--output", str(tmp_path / "whole.conll")])
    assert status == 0
    monkeypatch.setattr(ner, "PREDICT_CHUNK", 3)
    monkeypatch.setattr(ner, "_PROGRESS_SECONDS", 0.0)
    status, stdout, stderr = run_cli(["ner", "predict", "--run", str(out), "--input", str(lines),
                                      "--output", str(tmp_path / "chunked.conll")])
    assert status == 0
    assert (tmp_path / "chunked.conll").read_text() == (tmp_path / "whole.conll").read_text()
    assert stderr.splitlines() == ["tagged 3 of 8 sentences", "tagged 6 of 8 sentences"]
    # The lines shown of a file written are cut; printed alone, they are the output: whole.
    assert "x" * 60 + "...(500 characters)\t" in stdout
    status, stdout, _ = run_cli(["ner", "predict", "--run", str(out), "x" * 500, "rocks"])
    assert stdout.splitlines()[0].startswith("x" * 500 + "\t")


def test_cli_evaluate_rescoring_and_an_unknown_tag(crf_run, tmp_path):
    out = crf_run[0]
    status, stdout, _ = run_cli(["ner", "evaluate", "--run", str(out), "--output",
                                 str(tmp_path / "eval.json")])
    assert status == 0 and "overall (micro)" in stdout
    # Its first line counts the sentences once (a held-out split's name counts them).
    assert stdout.splitlines()[0].count("sentences") == 1
    figures = json.loads((tmp_path / "eval.json").read_text())
    assert figures["f1"] == pytest.approx(json.loads((out / "metrics.json").read_text())["f1"])

    other = write_conll(tmp_path / "other.conll", [(["Ulm", "rocks"], ["B-CITY", "O"])])
    status, _, stderr = run_cli(["ner", "evaluate", "--run", str(out), "--data", str(other)])
    assert status == 2
    assert f"{other}, line 1: unknown entity type 'CITY' (tag 'B-CITY' as read in BIO)" in stderr

    # A file without entities: its figures are not defined (null), not a model's zeros.
    plain = write_conll(tmp_path / "plain.conll", [(["the", "man", "went"], ["O", "O", "O"])])
    status, stdout, stderr = run_cli(["ner", "evaluate", "--run", str(out), "--data", str(plain),
                                      "--output", str(tmp_path / "plain.json")])
    assert status == 0, stderr
    assert "no entity in the gold tags: recall and F1 are not defined (n/a)" in stdout
    figures = json.loads((tmp_path / "plain.json").read_text())
    assert (figures["recall"], figures["f1"], figures["support"]) == (None, None, 0)


def with_invalid_tags(sentences):
    """The sentences as published data sets have them: in every second one the first entity
    starts with I- (after O or at the sentence start), and one sentence has an I- after another
    type, as WNUT-17's dev file at line 1674."""
    broken = []
    for index, (tokens, tags) in enumerate(sentences):
        if index % 2 == 0 and any(tag != "O" for tag in tags):
            first = next(i for i, tag in enumerate(tags) if tag != "O")
            tags = tags[:first] + ["I-" + tags[first][2:]] + tags[first + 1:]
        broken.append((tokens, tags))
    return broken + [(["Lil", "Sly", "Turn", "Up"], ["B-PER", "I-PER", "I-ORG", "I-ORG"])]


def invalid_bio(sentences):
    """Each I-X tag that continues no X entity (after O, another type, or at the start) of
    sentences written by `write_conll`, as the reader describes it."""
    found, line = [], 1
    for _, tags in sentences:
        for index, tag in enumerate(tags):
            previous = tags[index - 1] if index else "the sentence start"
            if tag.startswith("I-") and previous[2:] != tag[2:]:
                found.append(f"line {line + index}: {tag} after {previous} read as B-{tag[2:]}")
        line += len(tags) + 1
    return found


@pytest.fixture(scope="module")
def invalid_tags_run(tmp_path_factory):
    """A CRF tagger (BIO constraints on) trained on files whose tags are invalid BIO in places,
    with the raw sentences of each file."""
    folder = tmp_path_factory.mktemp("ner_invalid_tags")
    raw = {}
    for name, count, seed in (("train", 48, 0), ("dev", 12, 1), ("test", 24, 2)):
        raw[name] = with_invalid_tags(tiny_sentences(count, seed))
        write_conll(folder / f"{name}.conll", raw[name])
    out = tmp_path_factory.mktemp("ner_runs") / "invalid-tags"
    status, stdout, stderr = run_cli(["ner", "train", "--data", str(folder), "--out", str(out),
                                      "--crf", *TINY_FLAGS, "--epochs", "4"])
    assert status == 0, stderr
    return folder, raw, out, stdout


def test_invalid_bio_is_read_as_conlleval_reads_it_counted_and_scored_as_seqeval_does(
        invalid_tags_run):
    from seqeval.metrics import classification_report, f1_score, precision_score, recall_score
    from seqeval.metrics.sequence_labeling import get_entities
    from seqeval.scheme import IOB2

    folder, raw, out, stdout = invalid_tags_run
    metrics = json.loads((out / "metrics.json").read_text())
    counts = {f"{folder / name}.conll": len(invalid_bio(raw[name])) for name in raw}
    assert min(counts.values()) >= 3 and counts[str(folder / "test.conll")] > 5
    reports = {f["file"]: f["invalid_tags"] for f in metrics["data"]["files"]}
    assert {path: report["count"] for path, report in reports.items()} == counts
    assert metrics["data"]["invalid_tags"] == sum(counts.values())
    test_file = str(folder / "test.conll")
    first = reports[test_file]["first"]
    assert first == invalid_bio(raw["test"])[:5]
    assert "after the sentence start" in " ".join(invalid_bio(raw["test"]))
    assert "I-ORG after I-PER read as B-ORG" in invalid_bio(raw["test"])[-1]
    assert (f"{test_file}: {counts[test_file]} invalid tags read as conlleval and seqeval read "
            f"them (an I-X that continues no X entity starts one; --strict-tags refuses them): "
            f"{first[0]}; ") in stdout
    assert stdout.count("invalid tags read as conlleval and seqeval read them") == 3

    # Gold tags as the run scored them, and its predictions, in the order of test.conll.
    rows = [[line.split("\t") for line in block.splitlines()]
            for block in (out / "test_predictions.conll").read_text().strip().split("\n\n")]
    raw_gold = [tags for _, tags in raw["test"]]
    assert [[row[0] for row in rows_] for rows_ in rows] == [t for t, _ in raw["test"]]
    scored_gold = [[row[1] for row in rows_] for rows_ in rows]
    predicted = [[row[2] for row in rows_] for rows_ in rows]
    # The gold entities are those seqeval finds in the raw tags, as valid BIO.
    assert get_entities(scored_gold) == get_entities(raw_gold)
    assert scored_gold != raw_gold
    assert sum(tag != "O" for tags in predicted for tag in tags) > 0  # the check means something
    # conlleval figures: seqeval's default mode on the raw tags gives the same figures.
    assert metrics["conlleval"] == pytest.approx({
        "precision": precision_score(raw_gold, predicted),
        "recall": recall_score(raw_gold, predicted),
        "f1": f1_score(raw_gold, predicted),
    })
    # Strict IOB2 figures: seqeval's strict mode on the raw entities written as BIO.
    entity_bio = [["O"] * len(tags) for tags in raw_gold]
    offsets = np.cumsum([0] + [len(tags) + 1 for tags in raw_gold])  # seqeval joins with O
    for kind, start, end in get_entities(raw_gold):
        sentence = int(np.searchsorted(offsets, start, side="right")) - 1
        for position in range(start, end + 1):
            entity_bio[sentence][position - offsets[sentence]] = \
                ("B-" if position == start else "I-") + kind
    report = classification_report(entity_bio, predicted, mode="strict", scheme=IOB2,
                                    output_dict=True, zero_division=0)["micro avg"]
    assert (metrics["precision"], metrics["recall"], metrics["f1"]) == pytest.approx(
        (report["precision"], report["recall"], report["f1-score"]))
    assert metrics["support"] == len(get_entities(raw_gold))
    # The CRF learns from the BIO reading: no gold transition breaks its constraints.
    history = (out / "history.csv").read_text().splitlines()
    losses = [float(row.split(",")[history[0].split(",").index("loss")]) for row in history[1:]]
    assert all(np.isfinite(losses)) and losses[-1] < losses[0]


def test_evaluate_counts_the_invalid_tags_of_the_file_it_reads(invalid_tags_run, tmp_path):
    folder, raw, out, _ = invalid_tags_run
    test_file = str(folder / "test.conll")
    status, stdout, stderr = run_cli(["ner", "evaluate", "--run", str(out), "--data", test_file,
                                      "--output", str(tmp_path / "eval.json")])
    assert status == 0, stderr
    assert stdout.splitlines()[0].count("sentences") == 1
    figures = json.loads((tmp_path / "eval.json").read_text())
    count = len(invalid_bio(raw["test"]))
    assert figures["invalid_tags"][test_file]["count"] == count
    assert f"{test_file}: {count} invalid tags read as conlleval" in stdout
    metrics = json.loads((out / "metrics.json").read_text())
    assert figures["f1"] == pytest.approx(metrics["f1"])
    assert figures["conlleval"] == pytest.approx(metrics["conlleval"])
    status, stdout, _ = run_cli(["ner", "evaluate", "--run", str(out)])
    assert status == 0 and stdout.count("invalid tags read as conlleval and seqeval") == 3


def test_strict_tags_refuses_invalid_tags_and_repair_is_the_default(tmp_path):
    broken = tmp_path / "broken"
    broken.mkdir()
    sentences = tiny_sentences(20, seed=0) + [(["x", "Rome"], ["O", "I-LOC"])]
    train_file = write_conll(broken / "train.conll", sentences)
    (location,) = [item.split(":")[0] for item in invalid_bio(sentences)]
    status, _, stderr = run_cli(["ner", "train", "--data", str(broken), "--strict-tags",
                                 "--out", str(tmp_path / "run"), *TINY_FLAGS])
    assert status == 2 and not (tmp_path / "run").exists()
    assert (f"{train_file}, {location}: I-LOC after O: in BIO an entity starts with B-LOC "
            "(expected B-LOC); without --strict-tags it is read as B-LOC") in stderr
    # --repair, 0.1.0's way to ask for this reading, is accepted and changes nothing.
    default, repaired = (read_splits(NerConfig(data=str(broken), **flags))
                         for flags in ({}, {"repair": True}))
    assert default.files == repaired.files
    assert default.files[0]["invalid_tags"]["first"] == invalid_bio(sentences)
    assert [s.tags for s in default.train + default.validation + default.test].count(
        ["O", "B-LOC"]) == 1
    status, _, stderr = run_cli(["ner", "train", "--data", str(broken), "--repair",
                                 "--strict-tags"])
    assert status == 2 and ("--repair reads invalid tag sequences and --strict-tags refuses "
                            "them: give one. Received: --repair, --strict-tags") in stderr
    status, _, stderr = run_cli(["ner", "train", "--dropout", "1.5"])
    assert status == 2 and "--dropout 1.5" in stderr
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
    monkeypatch.setattr(callback, "decode_function_of", lambda model: "unused")
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

    # A validation split without entities (F1 0 / 0 at every epoch): the lowest loss keeps
    # its weights, not the first epoch.
    scores = iter([math.nan] * 8)
    callback.on_train_begin()
    for epoch, loss in enumerate([9.0, 8.0, 7.0, 7.5, 7.2]):
        model.layers[0].kernel.assign([[float(epoch)]])
        logs = {"val_loss": loss}
        callback.on_epoch_end(epoch, logs)
        assert "val_f1" not in logs  # undefined: had been logged as 0.0
    callback.on_train_end()
    assert model.layers[0].kernel.numpy()[0, 0] == 2.0 and callback.best_epoch == 3

    # An F1 of 0 at every epoch while the loss falls (a run cut short before the tagger finds
    # its first entity): the first epoch's weights were restored, as no F1 beat 0. Equal F1s
    # go to the lower loss; a higher F1 still wins over a lower loss.
    for f1s, losses, kept in (([0.0] * 5, [1.9, 1.5, 1.2, 1.3, 0.9], 4),
                              ([0.0, 0.3, 0.3, 0.3, 0.2], [1.9, 1.5, 1.6, 1.4, 0.9], 3)):
        scores = iter(f1s)
        callback = ner.EntityF1EarlyStopping(vocabulary=None, sentences=[], patience=10)
        callback.set_model(model)
        monkeypatch.setattr(callback, "decode_function_of", lambda model: "unused")
        callback.on_train_begin()
        for epoch, loss in enumerate(losses):
            model.layers[0].kernel.assign([[float(epoch)]])
            callback.on_epoch_end(epoch, {"val_loss": loss})
        callback.on_train_end()
        assert model.layers[0].kernel.numpy()[0, 0] == kept and callback.best_epoch == kept + 1


def test_scoring_reuses_the_decoding_function_traced_for_the_epochs_of_the_same_model():
    import seqlab.pipelines.ner as ner

    class Model:
        def __init__(self):
            self.made = 0

        def make_decode_function(self):
            self.made += 1
            return object()

    trained, loaded = Model(), Model()
    callback = ner.EntityF1EarlyStopping(vocabulary=None, sentences=[], patience=2)
    first = callback.decode_function_of(trained)
    assert callback.decode_function_of(trained) is first and trained.made == 1
    # Another model (a distributed run scores the saved model loaded again) gets its own.
    assert callback.decode_function_of(loaded) is not first and loaded.made == 1


# Pretrained word vectors (--embeddings)


class WordEmbeddingAtTrainBegin(keras.callbacks.Callback):
    def on_train_begin(self, logs=None):
        self.matrix = self.model.word_embedding.embeddings.numpy().copy()


def test_pretrained_vectors_with_case_fallback_frozen_and_exported(data_dir, tmp_path):
    # Cased and lower-cased words, values multiples of 1/32 (exact in float32); dimension 8.
    rng = np.random.default_rng(0)
    words = ["Paris", "rome", "lives", "in", ".", "ALICE", "Globex", "unseen"]
    vectors = {word: np.float32(rng.integers(-64, 64, 8) / 32) for word in words}
    path = tmp_path / "vectors.vec"
    path.write_text(f"{len(words)} 8\n" + "".join(
        f"{word} {' '.join(map(str, vector))} \n" for word, vector in vectors.items()))
    config = NerConfig(data=str(data_dir), out=str(tmp_path / "run"), epochs=1, units=8,
                       word_dim=None, char_dim=8, char_units=4, batch_size=16, min_count=1,
                       learning_rate=0.02, embeddings=str(path), freeze_embeddings=True)
    begin = WordEmbeddingAtTrainBegin()
    result = train(config, callbacks=[begin])
    run = result.path
    vocabulary = json.loads((run / "vocabulary.json").read_text())["words"]
    model = keras.saving.load_model(run / "model.keras", compile=False)
    matrix = model.word_embedding.embeddings.numpy()
    np.testing.assert_array_equal(matrix, begin.matrix)  # frozen: bit-identical after training
    np.testing.assert_array_equal(matrix[0], np.zeros(8))
    # The vocabulary is lower-cased: "paris" finds "Paris", "alice" finds "ALICE".
    for word, key in (("paris", "Paris"), ("rome", "rome"), ("lives", "lives"), ("in", "in"),
                      (".", "."), ("alice", "ALICE"), ("globex", "Globex")):
        np.testing.assert_array_equal(matrix[vocabulary.index(word)], vectors[key])

    # The coverage, counted independently on the training file's tokens.
    tokens = [line.split("\t")[0].lower()
              for line in (data_dir / "train.conll").read_text().splitlines() if line]
    found = {"paris", "rome", "lives", "in", ".", "alice", "globex"}
    report = json.loads((run / "metrics.json").read_text())["embeddings"]
    assert report["vocabulary"] == {"words": len(vocabulary) - 2, "found": 7,
                                    "share": 7 / (len(vocabulary) - 2)}
    assert report["training_tokens"] == {
        "tokens": len(tokens), "found": sum(t in found for t in tokens),
        "share": sum(t in found for t in tokens) / len(tokens)}
    assert report["found_by_case_fallback"] == 3 and report["frozen"] is True
    assert report["format"] == "word2vec/fastText text" and report["dimension"] == 8
    assert "pretrained vectors: vectors.vec" in result.summary and "frozen" in result.summary
    serve_and_compare(run)
    # The run's Keras file keeps them frozen for a user who fine-tunes it.
    assert keras.saving.load_model(run / "model.keras").word_embedding.trainable is False


def test_a_word_dim_other_than_the_vectors_is_refused_before_anything_is_written(data_dir,
                                                                                 tmp_path):
    path = tmp_path / "glove.txt"
    path.write_text("paris 0.5 0.25\nrome 1 2 3\n")
    config = NerConfig(data=str(data_dir), out=str(tmp_path / "run"), word_dim=8,
                       embeddings=str(path))
    with pytest.raises(DataError, match=r"glove\.txt, line 1: 2-dimensional vectors, but "
                                        "--word-dim is 8"):
        train(config)
    with pytest.raises(DataError, match=r"glove\.txt, line 2: 3 values; expected a word and 2 "
                                        r"values \(line 1's dimension\)"):
        train(NerConfig(data=str(data_dir), out=str(tmp_path / "run"), embeddings=str(path)))
    assert not (tmp_path / "run").exists() and not (tmp_path / "run.partial").exists()
    with pytest.raises(ValueError, match="freeze_embeddings keeps pretrained vectors fixed"):
        NerConfig(freeze_embeddings=True)


def test_a_min_count_no_word_reaches_is_refused_before_anything_is_written(data_dir, tmp_path):
    # It used to train, then fail at the export with "Cannot set an empty vocabulary".
    status, _, stderr = run_cli(["ner", "train", "--data", str(data_dir), "--out",
                                 str(tmp_path / "run"), *TINY_FLAGS, "--min-count", "1000000"])
    assert status == 2
    assert re.search(r"--min-count 1000000 leaves no word in the vocabulary: the most frequent "
                     r"training word, '.+', occurs [\d,]+ times; expected --min-count at most",
                     stderr)
    assert not (tmp_path / "run").exists() and not (tmp_path / "run.partial").exists()


def test_the_default_max_word_chars_keeps_the_characters_of_nearly_every_training_word():
    # A fixed 20 cut words whose type shows at their end (F1 0.53 against 1.00 with 40), and
    # said nothing: on WNUT-17 it cut 742 training words; the default now cuts 48 there.
    from seqlab.pipelines.ner import default_max_word_chars

    assert default_max_word_chars(np.array([3, 5, 12])) == (
        20, "99.9 % of the training words have at most 12 characters, at least 20")
    lengths = np.array([5] * 990 + [26] * 10)
    assert default_max_word_chars(lengths) == (
        26, "99.9 % of the training words have at most 26 characters")
    assert default_max_word_chars(np.array([300] * 5)) == (
        64, "99.9 % of the training words have at most 300 characters, at most 64")
