"""What the plot tests share: the matplotlib figures a run saves, caught as they are saved."""


def record_saved_figures(monkeypatch):
    """The matplotlib figures saved from now on, as `(figure, path)` pairs.

    A figure stays inspectable (axes, lines, labels) after `plt.close`.
    """
    from matplotlib.figure import Figure

    saved, real_savefig = [], Figure.savefig

    def savefig(figure, path, *args, **kwargs):
        saved.append((figure, str(path)))
        return real_savefig(figure, path, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", savefig)
    return saved


def restored_epoch_lines(axis):
    """The vertical lines of a loss plot that mark the restored epoch."""
    return [line for line in axis.get_lines() if line.get_label().startswith("restored")]
