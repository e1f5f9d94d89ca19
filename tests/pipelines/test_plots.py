"""Every plot of a run labels its axes; the loss plot marks the restored epoch, attention plots
have a colour bar. Checked on the matplotlib figures as they are saved."""

import numpy as np

from seqlab.data.translation import SentencePairs
from seqlab.pipelines.common import save_history_plot
from seqlab.pipelines.metrics import save_confusion_plot
from seqlab.pipelines.timeseries import save_forecast_plot
from seqlab.pipelines.translate import save_attention_plots
from tests.pipelines.plot_checks import record_saved_figures, restored_epoch_lines


def labels(axis):
    return axis.get_xlabel(), axis.get_ylabel()


def test_the_loss_plot_marks_the_restored_epoch_only_when_given(tmp_path, monkeypatch):
    figures = record_saved_figures(monkeypatch)
    rows = [{"epoch": e, "loss": 1.0 / e, "val_loss": 1.0 + (e - 3) ** 2} for e in (1, 2, 3, 4)]
    save_history_plot(rows, tmp_path / "marked.png", best_epoch=3)
    save_history_plot(rows, tmp_path / "plain.png")
    (marked,), (plain,) = [figure.axes for figure, _ in figures]
    assert labels(marked) == labels(plain) == ("epoch", "loss")
    (marker,) = restored_epoch_lines(marked)
    assert list(marker.get_xdata()) == [3, 3]
    assert "restored: epoch 3" in [text.get_text() for text in marked.get_legend().get_texts()]
    assert restored_epoch_lines(plain) == []
    assert (tmp_path / "marked.png").is_file()


def test_the_forecast_plot_labels_its_time_axis(tmp_path, monkeypatch):
    figures = record_saved_figures(monkeypatch)
    actual = np.arange(20, dtype=float).reshape(10, 2, 1)
    save_forecast_plot(tmp_path / "forecast.png", np.arange(10), actual, actual + 0.5, "sales",
                       horizon=2, time_label="month")
    save_forecast_plot(tmp_path / "default.png", np.arange(10), actual, actual, "sales",
                       horizon=2)
    (first,), (default,) = [figure.axes for figure, _ in figures]
    assert labels(first) == ("month", "sales")
    assert labels(default) == ("time", "sales")
    # A test split of fewer rows than the horizon has no h-step line (a broadcast error ended
    # a whole run there).
    short = actual[:3].repeat(6, axis=1)
    save_forecast_plot(tmp_path / "short.png", np.arange(3), short, short, "sales", horizon=12)
    assert [line.get_label() for line in figures[-1][0].axes[0].get_lines()] == [
        "actual", "forecast, 1 step ahead"]


def test_the_confusion_plot_labels_its_axes(tmp_path, monkeypatch):
    figures = record_saved_figures(monkeypatch)
    metrics = {"confusion_matrix": {"classes": ["bad", "good"],
                                    "rows_true_columns_predicted": [[3, 1], [0, 4]]}}
    save_confusion_plot(tmp_path / "confusion.png", metrics, title="test split")
    ((figure, _),) = figures
    assert labels(figure.axes[0]) == ("predicted", "true")


class FixedAttention:
    """Stands in for a `TextTranslator`: the same attention for every text."""

    def attention(self, text):
        weights = np.array([[0.7, 0.2, 0.1], [0.1, 0.8, 0.1], [0.2, 0.2, 0.6]], "float32")
        return text.split(), ["das", "ist", "[END]"], weights


def test_attention_plots_label_their_axes_and_have_a_colour_bar(tmp_path, monkeypatch):
    figures = record_saved_figures(monkeypatch)
    pairs = SentencePairs(["this is it", "so it is"], ["das ist es", "so ist es"],
                          [("a", 1), ("a", 2)], name="two pairs")
    save_attention_plots(FixedAttention(), pairs, 2, tmp_path)
    assert [path for _, path in figures] == [str(tmp_path / "attention_1.png"),
                                             str(tmp_path / "attention_2.png")]
    for figure, _ in figures:
        heat_map, colour_bar = figure.axes
        assert labels(heat_map) == ("source", "output (greedy)")
        assert colour_bar.get_ylabel() == "attention weight"
        assert colour_bar.get_ylim() == (0.0, 1.0)
