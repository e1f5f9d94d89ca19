"""Sentiment per-class figures on a hand-made confusion against scikit-learn called directly
(issue 19: true and predicted labels swapped must fail)."""

import numpy as np
import pytest
from sklearn.metrics import confusion_matrix, precision_recall_fscore_support

from seqlab.pipelines.metrics import score_classification

CLASSES = ["negative", "neutral", "positive"]
# Rows: true class; columns: predicted class. No class has equal row and column sums, so every
# class's precision differs from its recall.
CONFUSION = np.array([[4, 1, 0],
                      [2, 1, 0],
                      [1, 2, 3]])


def labels_of(confusion):
    true, predicted = [], []
    for (t, p), count in np.ndenumerate(confusion):
        true += [t] * count
        predicted += [p] * count
    return np.array(true), np.array(predicted)


def test_per_class_figures_match_hand_counts_and_scikit_learn():
    true, predicted = labels_of(CONFUSION)
    probabilities = np.eye(3, dtype="float32")[predicted]
    metrics = score_classification(probabilities, true, CLASSES,
                                   {"negative": 5, "neutral": 3, "positive": 6})
    per_class = metrics["per_class"]
    # By hand: precision = diagonal / column sum, recall = diagonal / row sum.
    hand = {"negative": (4 / 7, 4 / 5), "neutral": (1 / 4, 1 / 3), "positive": (3 / 3, 3 / 6)}
    for name, (precision, recall) in hand.items():
        assert per_class[name]["precision"] == pytest.approx(precision)
        assert per_class[name]["recall"] == pytest.approx(recall)
    # scikit-learn, called directly with (y_true, y_pred).
    precision, recall, f1, support = precision_recall_fscore_support(true, predicted)
    for index, name in enumerate(CLASSES):
        assert per_class[name] == pytest.approx({
            "precision": precision[index], "recall": recall[index], "f1": f1[index],
            "support": support[index]})
    assert metrics["confusion_matrix"]["rows_true_columns_predicted"] == CONFUSION.tolist()
    assert CONFUSION.tolist() == confusion_matrix(true, predicted).tolist()
    assert metrics["model"]["accuracy"] == pytest.approx(8 / 14)
    assert metrics["majority_class"]["class"] == "positive"
