"""NER entity scores against seqeval called directly, on sentences whose precision and recall
differ (issue 19: gold and predicted tags swapped must fail), in pipelines/metrics.py and where
the pipeline's train and evaluate call it."""

import json

import pytest
from seqeval.metrics import classification_report, f1_score, precision_score, recall_score
from seqeval.scheme import IOB2

from seqlab.pipelines import ner
from seqlab.pipelines.metrics import entity_scores

GOLD = [
    ["B-PER", "I-PER", "O", "B-LOC"],
    ["B-ORG", "O", "B-PER"],
    ["O", "B-LOC", "I-LOC", "O"],
]
PREDICTED = [
    ["B-PER", "I-PER", "O", "O"],       # PER right, LOC missed
    ["B-ORG", "O", "B-LOC"],            # ORG right, PER predicted as LOC
    ["O", "I-LOC", "I-LOC", "O"],       # no entity in strict IOB2; LOC in conlleval's reading
]


def test_entity_scores_by_hand_and_against_seqeval():
    scores = entity_scores(GOLD, PREDICTED)
    # Strict IOB2: 5 gold entities; 3 predicted (PER, ORG, LOC), 2 of them right.
    assert (scores["precision"], scores["recall"]) == (pytest.approx(2 / 3), pytest.approx(2 / 5))
    assert scores["f1"] == pytest.approx(2 * (2 / 3) * (2 / 5) / (2 / 3 + 2 / 5))
    assert scores["support"] == 5
    assert scores["per_type"]["PER"] == pytest.approx(
        {"precision": 1.0, "recall": 0.5, "f1": 2 / 3, "support": 2})
    assert scores["per_type"]["LOC"] == pytest.approx(
        {"precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 2})
    # seqeval, called directly with (y_true, y_pred).
    report = classification_report(GOLD, PREDICTED, mode="strict", scheme=IOB2, output_dict=True,
                                   zero_division=0)
    assert scores["precision"] == pytest.approx(report["micro avg"]["precision"])
    assert scores["recall"] == pytest.approx(report["micro avg"]["recall"])
    # conlleval's reading (seqeval's default mode): 4 predicted, 3 right.
    assert scores["conlleval"] == pytest.approx({"precision": 3 / 4, "recall": 3 / 5,
                                                 "f1": 2 / 3})
    assert scores["conlleval"] == pytest.approx({
        "precision": precision_score(GOLD, PREDICTED), "recall": recall_score(GOLD, PREDICTED),
        "f1": f1_score(GOLD, PREDICTED)})


# --- the pipeline's calls ---------------------------------------------------------------------

TRAIN = [
    (["Alice", "lives", "in", "Paris", "."], ["B-PER", "O", "O", "B-LOC", "O"]),
    (["Acme", "Corp", "hired", "Bob", "."], ["B-ORG", "I-ORG", "O", "B-PER", "O"]),
    (["Bob", "works", "for", "Globex", "in", "Rome", "."],
     ["B-PER", "O", "O", "B-ORG", "O", "B-LOC", "O"]),
    (["nothing", "happened", "here", "."], ["O", "O", "O", "O"]),
]
TEST = [
    (["Alice", "lives", "in", "Paris", "."], ["B-PER", "O", "O", "B-LOC", "O"]),
    (["Acme", "Corp", "hired", "Bob", "."], ["B-ORG", "I-ORG", "O", "B-PER", "O"]),
    (["Eve", "Jones", "works", "for", "Globex", "in", "New", "York", "."],
     ["B-PER", "I-PER", "O", "O", "B-ORG", "O", "B-LOC", "I-LOC", "O"]),
]


def fake_prediction(tags):
    """Misses every LOC and calls every ORG a PER: 5 predicted entities of 7, 3 right."""
    return [("O" if tag.endswith("-LOC") else tag.replace("-ORG", "-PER")) for tag in tags]


def write_conll(path, sentences):
    path.write_text("\n\n".join("\n".join(f"{w}\t{t}" for w, t in zip(*s)) for s in sentences)
                    + "\n", encoding="utf-8")
    return path


def test_train_and_evaluate_score_gold_against_predicted_as_seqeval(tmp_path, monkeypatch):
    # The model's tags are replaced by a known prediction, so the figures are known exactly.
    monkeypatch.setattr(ner, "predict_tags", lambda model, vocabulary, sentences, **kwargs: [
        fake_prediction(sentence.tags) for sentence in sentences])
    data = tmp_path / "data"
    data.mkdir()
    write_conll(data / "train.conll", TRAIN)
    write_conll(data / "dev.conll", TRAIN[:2])
    test_file = write_conll(data / "test.conll", TEST)
    gold = [tags for _, tags in TEST]
    predicted = [fake_prediction(tags) for tags in gold]
    expected = {"precision": 3 / 5, "recall": 3 / 7}
    assert expected == pytest.approx({"precision": precision_score(gold, predicted, mode="strict",
                                                                   scheme=IOB2),
                                      "recall": recall_score(gold, predicted, mode="strict",
                                                             scheme=IOB2)})

    result = ner.train(ner.NerConfig(
        data=str(data), out=str(tmp_path / "run"), epochs=1, units=4, word_dim=4, char_dim=4,
        char_units=2, batch_size=8, min_count=1))
    written = json.loads((result.path / "metrics.json").read_text())
    assert {k: written[k] for k in expected} == pytest.approx(expected)
    assert written["per_type"]["PER"]["recall"] == 1.0
    evaluated = ner.evaluate(result.path, data=str(test_file)).metrics
    assert {k: evaluated[k] for k in expected} == pytest.approx(expected)
