"""Tests of the sentiment section of pipelines/metrics.py: the classification figures, their
terminal tables and the confusion-matrix plot."""

import numpy as np
import pytest

from seqlab.pipelines.metrics import (
    classification_tables,
    save_confusion_plot,
    score_classification,
)

CLASSES = ["bad", "good", "other"]


def one_hot(ids, n=3):
    return np.eye(n, dtype="float32")[ids]


def test_figures_match_hand_counts_and_the_majority_baseline():
    true_ids = [0, 0, 1, 1, 1, 2]
    predicted = [0, 1, 1, 1, 0, 1]
    metrics = score_classification(one_hot(predicted), true_ids, CLASSES,
                                   {"bad": 2, "good": 5, "other": 1})
    assert metrics["examples"] == 6
    assert metrics["model"]["accuracy"] == pytest.approx(3 / 6)
    # F1 per class: bad 1/2, good 2 * (2/4 * 2/3) / (2/4 + 2/3) = 4/7, other 0.
    assert metrics["model"]["macro_f1"] == pytest.approx((1 / 2 + 4 / 7 + 0) / 3)
    assert metrics["majority_class"] == {"class": "good", "accuracy": pytest.approx(3 / 6),
                                         "macro_f1": pytest.approx((0 + 2 * 0.5 / 1.5 + 0) / 3)}
    assert metrics["per_class"]["other"] == {"precision": 0.0, "recall": 0.0, "f1": 0.0,
                                             "support": 1}
    assert metrics["per_class"]["good"]["precision"] == pytest.approx(2 / 4)
    assert metrics["confusion_matrix"] == {
        "classes": CLASSES,
        "rows_true_columns_predicted": [[1, 1, 0], [1, 2, 0], [0, 1, 0]],
    }
    assert "members" not in metrics


def test_majority_class_ties_go_to_the_lowest_id_and_missing_classes_count_zero():
    metrics = score_classification(one_hot([0, 1]), [0, 1], CLASSES, {"other": 4, "good": 4})
    assert metrics["majority_class"]["class"] == "good"


def test_ensemble_members_get_accuracy_and_macro_f1():
    true_ids = [0, 1, 2, 2]
    members = [one_hot([0, 1, 2, 2]), one_hot([0, 0, 0, 0])]
    metrics = score_classification(np.mean(members, axis=0), true_ids, CLASSES,
                                   {"bad": 1, "good": 1, "other": 2}, members)
    assert metrics["members"][0] == {"accuracy": 1.0, "macro_f1": 1.0}
    assert metrics["members"][1] == score_classification(
        members[1], true_ids, CLASSES, {"bad": 1})["model"]
    assert list(metrics)[-1] == "members"


def test_tables_show_every_figure_and_the_members():
    members = [one_hot([0, 1, 2]), one_hot([0, 1, 1])]
    metrics = score_classification(np.mean(members, axis=0), [0, 1, 2], CLASSES, {"bad": 3},
                                   members)
    text = classification_tables(metrics, "gru")
    for line in ("ensemble of 2 (gru)", "  member 1", "majority class (bad)", "macro F1",
                 "precision", "support", "confusion matrix (rows: true class)",
                 "true \\ predicted"):
        assert line in text
    single = score_classification(one_hot([0, 1, 2]), [0, 1, 2], CLASSES, {"bad": 3})
    assert "model (ngrams)" in classification_tables(single, "ngrams")


def test_confusion_plot_is_written(tmp_path):
    metrics = score_classification(one_hot([0, 1, 1]), [0, 1, 2], CLASSES, {"bad": 3})
    path = tmp_path / "confusion.png"
    save_confusion_plot(path, metrics, title="gru: test split")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_table_marks_figures_with_a_zero_denominator_undefined():
    # "other" is neither in the labels nor predicted; "good" is in the labels, never
    # predicted: its recall (0 of 1) and F1 are 0, its precision (0 of 0) undefined.
    metrics = score_classification(one_hot([0, 0]), [0, 1], CLASSES, {"bad": 1})
    rows = {line.split()[0]: line.split()[1:] for line in
            classification_tables(metrics, "gru").split("\n\n")[1].splitlines()[2:]}
    assert rows["bad"] == ["0.5000", "1.0000", "0.6667", "1"]
    assert rows["good"] == ["-", "0.0000", "0.0000", "1"]
    assert rows["other"] == ["-", "-", "-", "0"]
    assert "(-: undefined" in classification_tables(metrics, "gru")
    # metrics.json keeps scikit-learn's 0 for them (tools read numbers there).
    assert metrics["per_class"]["other"] == {"precision": 0.0, "recall": 0.0, "f1": 0.0,
                                             "support": 0}
    everything = score_classification(one_hot([0, 1, 2]), [0, 1, 2], CLASSES, {"bad": 1})
    assert "(-: undefined" not in classification_tables(everything, "gru")
