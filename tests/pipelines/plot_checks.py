"""What the plot tests share: the matplotlib figures a run saves, caught as they are saved."""

import os


def record_saved_figures(monkeypatch):
    """The matplotlib figures saved from now on, as `(figure, path)` pairs.

    A figure stays inspectable (axes, lines, labels) after `plt.close`.
    """
    from matplotlib.figure import Figure

    from seqlab.pipelines import common

    saved, rendered = [], []
    real_savefig, real_write = Figure.savefig, common.write_bytes_atomic

    def savefig(figure, target, *args, **kwargs):
        # `save_figure` renders into memory, then writes the file atomically: the path comes
        # with the write.
        if isinstance(target, (str, os.PathLike)):
            saved.append((figure, str(target)))
        else:
            rendered.append(figure)
        return real_savefig(figure, target, *args, **kwargs)

    def write_bytes_atomic(path, data):
        if rendered:
            saved.append((rendered.pop(), str(path)))
        return real_write(path, data)

    monkeypatch.setattr(Figure, "savefig", savefig)
    monkeypatch.setattr(common, "write_bytes_atomic", write_bytes_atomic)
    return saved


def restored_epoch_lines(axis):
    """The vertical lines of a loss plot that mark the restored epoch."""
    return [line for line in axis.get_lines() if line.get_label().startswith("restored")]
