"""Tests of the ner section of pipelines/metrics.py: entity scores (seqeval) and their table."""

import math
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


def test_no_entity_in_gold_or_predictions_is_not_a_figure_and_warns_nothing():
    # A file without entities, tagged without any: seqeval's macro average is a mean of no
    # types, whose numpy RuntimeWarning reached the terminal of `ner evaluate --data`. Its
    # figures are 0 / 0: not 0, which read as a model that learned nothing (and train's note
    # said to train more) where every tag was right.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        scores = entity_scores([["O"], ["O", "O"]], [["O"], ["O", "O"]])
    assert (scores["support"], scores["per_type"]) == (0, {})
    figures = [scores[name] for name in ("precision", "recall", "f1", "macro_f1")]
    assert all(math.isnan(value) for value in figures + list(scores["conlleval"].values()))
    lines = entity_scores_table(scores).splitlines()
    assert lines[2].split() == ["overall", "(micro)", "n/a", "n/a", "n/a", "0"]
    assert lines[3].endswith("precision n/a, recall n/a, F1 n/a")
    assert lines[4] == "no entity in the gold tags: recall and F1 are not defined (n/a)"


def test_entities_predicted_where_the_gold_tags_hold_none_have_precision_0():
    scores = entity_scores([["O", "O"], ["O"]], [["B-PER", "O"], ["O"]])
    assert scores["precision"] == 0.0 and scores["support"] == 0
    assert math.isnan(scores["recall"]) and math.isnan(scores["f1"])
    assert scores["per_type"]["PER"]["precision"] == 0.0
    assert math.isnan(scores["per_type"]["PER"]["f1"])
    assert entity_scores_table(scores).splitlines()[-1] == (
        "no entity in the gold tags: recall and F1 are not defined (n/a), and every entity "
        "predicted is wrong (precision 0)")
