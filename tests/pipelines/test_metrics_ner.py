"""Tests of the ner section of pipelines/metrics.py: entity scores (seqeval) and their table."""

import warnings

from seqlab.pipelines.metrics import entity_scores, entity_scores_table


def test_strict_scores_and_conlleval_scores_differ_on_invalid_predictions():
    gold = [["B-PER", "I-PER", "O", "B-LOC"]]
    predicted = [["O", "I-PER", "O", "B-LOC"]]
    scores = entity_scores(gold, predicted)
    # Strict IOB2: the I-PER after O is no entity; conlleval reads it as one (wrong extent).
    assert scores["precision"] == 1.0 and scores["recall"] == 0.5
    assert scores["per_type"]["PER"]["f1"] == 0.0
    assert scores["conlleval"]["precision"] == 0.5
    perfect = entity_scores(gold, gold)
    assert perfect["f1"] == 1.0 and perfect["conlleval"]["f1"] == 1.0


def test_the_table_has_a_row_per_type_then_the_overall_row():
    gold = [["B-PER", "I-PER", "O", "B-LOC"], ["B-ORG", "O"]]
    predicted = [["B-PER", "I-PER", "O", "O"], ["B-ORG", "O"]]
    scores = entity_scores(gold, predicted)
    assert (scores["sentences"], scores["tokens"], scores["support"]) == (2, 6, 3)
    lines = entity_scores_table(scores).splitlines()
    assert lines[0].split() == ["entity", "type", "precision", "recall", "F1", "support"]
    assert [line.split()[0] for line in lines[2:5]] == ["LOC", "ORG", "PER"]
    assert lines[5].split() == ["overall", "(micro)", "1.0000", "0.6667", "0.8000", "3"]
    assert lines[6] == ("seqeval strict IOB2; conlleval-compatible (seqeval default mode): "
                        "precision 1.0000, recall 0.6667, F1 0.8000")


def test_no_entity_in_gold_or_predictions_scores_zero_without_a_numpy_warning():
    # A file without entities, tagged without any: seqeval's macro average is a mean of no
    # types, whose numpy RuntimeWarning reached the terminal of `ner evaluate --data`.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        scores = entity_scores([["O"], ["O", "O"]], [["O"], ["O", "O"]])
    assert (scores["f1"], scores["macro_f1"], scores["support"], scores["per_type"]) == (
        0.0, 0.0, 0, {})
