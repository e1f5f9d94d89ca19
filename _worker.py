"""The start of a worker process that seqlab spawns (the many-series command's classical fits).

A worker is a fresh interpreter started with `spawn`. It needs NumPy, statsforecast and
`seqlab.models.forecasting.metrics`, not TensorFlow: after `start`, importing `seqlab.models`
leaves its models out (`started()`), which would load TensorFlow in every worker (8 s of CPU
and 0.76 GB of memory each here, against 2.4 s and 0.22 GB without). A worker inherits the
parent's `TF_CPP_MIN_LOG_LEVEL`, which `seqlab._tf_log.quiet_on_import` would take for the
user's, and it does not end with its parent: a killed command would leave its workers running.
`start` keeps TensorFlow's load notices off the terminal as the parent does, should anything
load it, and ends the worker when its parent is gone. A Ctrl-C reaches the terminal's whole
process group, workers included: they ignore it, and the parent, which decides, ends them
(`pipelines.timeseries_classical_panel`); a worker that caught it in a task went on to the
next one, and the parent's pool waited for them all.

Imports nothing heavy: it runs before the worker imports the function it is given.
"""

import os
import signal
import threading
import time

from seqlab import _tf_log

# How often (seconds) a worker checks that its parent is still there.
PARENT_CHECK_EVERY = 1.0

_started = False


def started():
    """Whether this process is a worker that `start` began (its models are not imported)."""
    return _started


def start(quiet, parent):
    """The `initializer` of a worker pool: `quiet` is `_tf_log.is_quiet()` in the parent,
    `parent` the parent's process id."""
    global _started
    _started = True
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _tf_log.quiet_worker(quiet)
    threading.Thread(target=_end_with, args=(parent,), name="seqlab-parent-watch",
                     daemon=True).start()


def _end_with(parent):
    while True:
        if os.getppid() != parent:  # re-parented: the parent has died
            os._exit(1)
        time.sleep(PARENT_CHECK_EVERY)
