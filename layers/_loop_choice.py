"""Which time loop a recurrent layer runs: measured once per shape on this machine.

Which loop is fastest depends on the CPU (caches, vector units, the thread
pool) as much as on the sizes: the loops seqlab's layers were tuned with on one
2-core machine lost their advantage on another, where Keras's own loop was the
faster one for some layers (issue 28). So the layer does not guess. The first
time it is traced for a shape it times each candidate loop on this machine,
with its own weights and random inputs of that shape (forward, and backward for
training), and keeps the fastest (Keras's own unless another beat it by more
than `KERAS_MARGIN`: measurements on a busy machine are noisy, and Keras's loop
is the built-in layer's speed by construction) for the rest of the process and
in a file (`memory_path()`: `~/.cache/seqlab/loop_choices.json`, or
`$SEQLAB_LOOP_MEMORY`, `off` for none), keyed by the shape and the machine (CPU,
core count, TensorFlow and Keras versions, oneDNN setting, `LOOPS_REVISION`), so
that later processes on this machine skip the measurement:

- `"keras"`: Keras's own loop (`keras.src.backend.rnn`, which `keras.layers.RNN`
  runs: one step per iteration, the step's input product inside the loop,
  TensorFlow's automatic differentiation), over the cell's fused step, the same
  products as Keras's built-in cells; the layer is then as fast as Keras's
  built-in. Where Keras's built-in LSTM or GRU would run cuDNN's fused kernel (a
  GPU visible and cuDNN's form of the cell, `RecurrentLayer.runs_fused_kernel`),
  this loop runs it too on unmasked or compacted sequences, and is kept without a
  measurement.
- `"unrolled"`: seqlab's loop, `UNROLLED_STEPS` steps per iteration, the step's
  input product inside the loop (`layers/_loop.py`, `run_recurrence`).
- `"hand_bptt"`: for training a separable cell, the inputs of all steps
  projected with one product and backpropagation through time scheduled by
  hand (`run_separable_recurrence`).
- `"compiled_bptt"`: `hand_bptt` with its forward and its backward loop each
  compiled by XLA (`run_separable_recurrence(compiled=True)`), for a time axis
  whose length the trace knows (XLA compiles once per shape: per batch size, not
  per sequence length) and not inside `portable_loops`. Training only: an
  inference trace may be exported, and TensorFlow Serving runs XLA's functions
  only with a flag that is off by default (tensorflow/serving#1858).
- `"fully_unrolled"`: every step written out in the graph, no while loop, for a time
  axis whose length the trace knows, up to `MAX_FULLY_UNROLLED_STEPS` (64, rnn_base)
  (`RecurrentLayer.unrolls_fully`): for inference `run_recurrence(unroll=ALL_STEPS)` over the
  inputs projected with one product, for training a separable cell the
  hand-scheduled BPTT with its forward and backward steps written out. A loop
  iteration's own cost (control operations, a TensorArray read and write) is most
  of a small step: at the forecaster's GRU of 32 units over 24 steps this loop
  took 0.51-0.74 of the time of Keras's built-in layer (docs/performance.md).
- `"feature_major"`: for a separable cell, `unrolled` with every tensor of the
  loop transposed to `[size, batch]`, its products W^T x_t^T and U^T h^T
  (`RecurrentCell.feature_major_step`). TensorFlow's CPU product (Eigen) was up
  to twice as fast in that orientation for the sizes of a recurrent step on an
  AMD EPYC (LSTM inference at 256 units 0.54 of Keras's time, docs/performance.md).
- `"grouped"`: the batch's rows in `loop_groups` groups (one per thread of
  TensorFlow's inter-op pool, half of them for a direction of a `Bidirectional`,
  whose other direction runs beside it; 2 to `MAX_GROUPS`), each through its own `unrolled`
  loop (in training a separable cell's `hand_bptt`), the results joined
  (`RecurrentLayer._run_grouped`). The groups' loops are independent, so
  TensorFlow's executor runs their steps side by side, where one step's operations
  are too small to keep several cores busy: on an Intel Xeon with 2 vCPUs, Keras's
  LSTM of 256 units at batch 64 took as long on 2 threads as on 1, and this loop
  0.62-0.84 of the built-in's time in inference (docs/performance.md). A candidate where the
  inter-op pool has 2 threads or more and the batch (or its stand-in) holds 2 rows
  per group; called eagerly, where the groups would run one after another, a layer that
  kept it runs the groups' loop on the whole batch.

Every loop runs a masked input as compacted sequences where that is exact
(`RecurrentLayer._can_compact_mask`): each sequence's unmasked steps moved to its
front, without a per-step mask (`RecurrentLayer._run_compacted`).
The choice is keyed by the cell's kind and sizes, the batch and the number of
steps (a stand-in where the trace leaves them unknown), dtype, training or
inference, mask, `return_sequences` and TensorFlow's thread settings. Shapes
whose forward pass is under `MIN_MEASURED_FLOPS` are not measured (the loop's
own overhead dominates and measuring would cost more than it can save): they
run the default loop (`default_variant`): `fully_unrolled` where it can run
(docs/performance.md, "Every step written out"); elsewhere Keras's own (the
hand-scheduled BPTT for training a cell with `backprop_by_hand`), which traced in a
third to half the time of the `unrolled` loop and trained as fast or faster
(docs/performance.md, "Small shapes run Keras's loop"). So does a layer traced
under a `tf.distribute` strategy, and a shape whose measurement fails.
`SEQLAB_RNN_LOOP=keras|unrolled|hand_bptt|feature_major|compiled_bptt|fully_unrolled|grouped`
forces one loop (`hand_bptt`, `feature_major`, `compiled_bptt` and `fully_unrolled`
only where they apply, `unrolled` elsewhere; `grouped` on any batch and thread count),
`auto` (or unset) measures.
"""

import contextlib
import json
import os
import platform
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import keras
import tensorflow as tf

from seqlab._tf_log import RetracingFilter

VARIANTS = ("keras", "unrolled", "hand_bptt", "feature_major", "compiled_bptt", "fully_unrolled",
            "grouped")
ENV_VAR = "SEQLAB_RNN_LOOP"
# Where the choices are remembered between processes: a file, or `off`.
MEMORY_VAR = "SEQLAB_LOOP_MEMORY"
# Raised when a loop changes what it costs: the choices remembered before are measured again.
LOOPS_REVISION = 4

# The most groups of rows the `grouped` loop splits a batch into (`loop_groups`): past a few,
# each group's products get too thin to run at the speed of a whole batch's.
MAX_GROUPS = 4

# Below this many floating-point operations per forward pass (batch x steps x
# gates x units x (features + units) x 2) the default loop runs unmeasured.
# Measuring traces every candidate (about a second each) and times it for a
# second or more, which a small layer never earns back: the forecaster's GRU of
# 32 units over 24 steps (5e6 at batch 32, 4e7 when predicting 256 windows)
# spent 8 s measuring four shapes in a 60 s command whose 200 epochs took 0.1 s
# each. The other tasks' layers are above it (sentiment's BiLSTM 1.3e8, the
# tagger's 5e8, the char-RNN's 3e9).
MIN_MEASURED_FLOPS = 1e8
# Stand-ins for the sizes a trace leaves unknown (Keras traces `fit` with the
# batch size unknown).
STAND_IN_BATCH = 32
STAND_IN_STEPS = 50
# Interleaved timed rounds, after two untimed calls of each candidate (the first
# traces): at least MIN_ROUNDS, then more while they took under MIN_SECONDS (small
# shapes take milliseconds a call, which a busy machine's noise would swamp), at
# most MAX_ROUNDS.
MIN_ROUNDS = 5
MAX_ROUNDS = 40
MIN_SECONDS = 1.0

# Another loop is kept only if it beat Keras's own by more than this fraction.
KERAS_MARGIN = 0.05
# A temporary copy of the memory file older than this (seconds) was left by a process killed
# between writing it and renaming it into place (a write takes milliseconds): the next write
# removes it.
STALE_TEMPORARY_SECONDS = 600

_choices = {}
_measurements = {}
_remembered = None  # the memory file's choices, read once per process


def forced_variant():
    """The loop `SEQLAB_RNN_LOOP` forces, or None (`auto` or unset)."""
    value = os.environ.get(ENV_VAR, "auto").strip().lower()
    if value in ("", "auto"):
        return None
    if value not in VARIANTS:
        raise ValueError(
            f"{ENV_VAR} must be one of auto, {', '.join(VARIANTS)}. Received: {ENV_VAR}={value}"
        )
    return value


def inter_op_threads():
    """The threads of TensorFlow's inter-op pool, which runs independent operations side by
    side: its setting, else `TF_NUM_INTEROP_THREADS`, else (TensorFlow's default) one per
    CPU this process may run on (its affinity: `taskset`, a container's CPU set)."""
    threads = tf.config.threading.get_inter_op_parallelism_threads()
    if threads > 0:
        return threads
    setting = os.environ.get("TF_NUM_INTEROP_THREADS", "").strip()
    if setting.isdigit() and int(setting) > 0:
        return int(setting)
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1


# How far up the calls in progress `runs_beside_another` looks for a `Bidirectional`: from
# `choose`, Keras's wrapper's `call` is about a dozen frames up.
_FRAMES_SEARCHED = 40


def runs_beside_another(layer):
    """Whether `layer` is being called as one direction of a `keras.layers.Bidirectional`,
    whose other direction's loop then runs beside its own (nothing of one reads the
    other's), on the inter-op threads the `grouped` loop would use. Found in the calls in
    progress: the wrapper does not tell the layers it wraps."""
    frame = sys._getframe(1)
    for _ in range(_FRAMES_SEARCHED):
        if frame is None:
            return False
        owner = frame.f_locals.get("self")
        if isinstance(owner, keras.layers.Bidirectional) and any(
                layer is wrapped for wrapped in (owner.forward_layer, owner.backward_layer)):
            return True
        frame = frame.f_back
    return False


def loop_threads(layer):
    """The inter-op threads `layer`'s loop has to itself: all of them, or half for one
    direction of a `Bidirectional` (`RecurrentLayer.inner_loop` sets `_beside_another`
    from `runs_beside_another` before the loop is chosen)."""
    threads = inter_op_threads()
    return max(1, threads // 2) if getattr(layer, "_beside_another", False) else threads


def loop_groups(layer):
    """How many groups of rows `layer`'s `grouped` loop runs side by side: one per inter-op
    thread it has to itself, at least 2 (a forced `grouped` loop runs in groups on one
    thread too), at most `MAX_GROUPS`."""
    return max(2, min(loop_threads(layer), MAX_GROUPS))


def groups_help(layer, batch):
    """Whether the `grouped` loop is a candidate for `layer` on a batch of `batch` rows
    (None: unknown to the trace, `STAND_IN_BATCH`): two inter-op threads or more of its
    own to run the groups on, and at least 2 rows in each group. Inside a `Bidirectional`
    on 2 threads it is not: the two directions already keep both busy (the tagger's
    BiLSTM in groups took 1.1-1.2 of the time of Keras's, against 0.72 written out)."""
    return loop_threads(layer) >= 2 and (batch or STAND_IN_BATCH) >= 2 * loop_groups(layer)


def candidates(cell, training, compilable=False, unrollable=False, groupable=False):
    """The loops that can run `cell` (with a backward pass when `training`); `compilable`:
    whether an XLA-compiled loop may run here (`RecurrentLayer.compiles_loops`);
    `unrollable`: whether every step may be written out (`RecurrentLayer.unrolls_fully`);
    `groupable`: whether the batch's rows may run in groups (`groups_help`)."""
    found = ["keras", "unrolled"]
    if groupable:
        found.append("grouped")
    if unrollable:
        found.append("fully_unrolled")
    if training and cell.separable:
        found.append("hand_bptt")
    if cell.separable:
        found.append("feature_major")
    if training and cell.separable and compilable:
        found.append("compiled_bptt")
    return found


def default_variant(cell, training, unrollable=False):
    """The loop of a shape that is not measured: every step written out where the time axis
    is short enough (`unrollable`, `RecurrentLayer.unrolls_fully`), as a small step is
    mostly a loop iteration's own cost; elsewhere Keras's own (the built-in's speed, and
    the shortest trace), or the hand-scheduled BPTT for training a cell that asks for it."""
    if unrollable:
        return "fully_unrolled"
    return "hand_bptt" if training and cell.backprop_by_hand else "keras"


def _thread_settings():
    threading = tf.config.threading
    return (
        threading.get_intra_op_parallelism_threads(),
        threading.get_inter_op_parallelism_threads(),
        os.cpu_count(),
    )


def loop_key(layer, sequences, mask, training):
    """What the choice depends on: sizes, dtype, mode and the machine's thread settings."""
    cell = layer.cell
    batch, steps, features = sequences.shape
    gates = int(cell.recurrent_kernel.shape[-1]) // cell.units
    return (
        type(cell).__name__,
        getattr(cell, "reset_after", None),
        cell.units,
        gates,
        int(features),
        int(batch or STAND_IN_BATCH),
        int(steps or STAND_IN_STEPS),
        tf.as_dtype(sequences.dtype).name,
        bool(training),
        mask is not None,
        bool(layer.return_sequences),
        _thread_settings(),
        inter_op_threads(),
        bool(getattr(layer, "_beside_another", False)),  # a direction of a Bidirectional
        steps is not None,  # a static time axis, which an XLA-compiled loop needs
    )


def forward_flops(key):
    _, _, units, gates, features, batch, steps = key[:7]
    return 2.0 * batch * steps * gates * units * (features + units)


def choose(layer, sequences, mask, training):
    """The loop `layer` runs for these inputs (see the module's docstring)."""
    cell = layer.cell
    allowed = candidates(cell, training, layer.compiles_loops(sequences),
                         layer.unrolls_fully(sequences), groups_help(layer, sequences.shape[0]))
    forced = forced_variant()
    if forced is not None:
        return forced if forced in allowed or forced == "grouped" else "unrolled"
    if layer.runs_fused_kernel(training):
        # A GPU and cuDNN's form of the cell: Keras's loop runs cuDNN's kernel, as Keras's
        # built-in layer does, which none of seqlab's loops (a step's operations at a time)
        # is measured against.
        return "keras"
    key = loop_key(layer, sequences, mask, training)
    if key in _choices:
        return _eager_or(_choices[key], cell, training)
    if forward_flops(key) < MIN_MEASURED_FLOPS or tf.distribute.has_strategy():
        return default_variant(cell, training, "fully_unrolled" in allowed)
    remembered = _recall(key)
    if remembered in allowed:
        _choices[key] = remembered
        return _eager_or(remembered, cell, training)
    try:
        times = measure(layer, key, allowed)
    except Exception:  # noqa: BLE001 - a loop that cannot be timed here is no reason to fail
        # For example a mixed-precision layer, whose autocasting does not reach the
        # measuring thread. The default loop runs; the trace goes on.
        times = None
    _measurements[key] = times
    _choices[key] = (default_variant(cell, training, "fully_unrolled" in allowed)
                     if times is None else fastest(times))
    if times is not None:
        _remember(key, _choices[key], times)
    return _eager_or(_choices[key], cell, training)


def _eager_or(variant, cell, training):
    """`variant`, but for `grouped` run eagerly (`run_eagerly=True`, a model called outside a
    `tf.function`) the loop of each group: eagerly the groups run one after another, never
    side by side, so the measured choice does not hold (a forced `grouped` runs as forced)."""
    if variant != "grouped" or not tf.executing_eagerly():
        return variant
    return group_loop(cell, training)


def group_loop(cell, backward):
    """The loop each group of the `grouped` loop runs: the hand-scheduled BPTT where the loop
    is differentiated and the cell separable, else `unrolled`."""
    return "hand_bptt" if backward and cell.separable else "unrolled"


def memory_path():
    """The file the choices are remembered in between processes, or None (`off`).

    `$SEQLAB_LOOP_MEMORY`, else `seqlab/loop_choices.json` in `$XDG_CACHE_HOME` (by
    default `~/.cache`). Deleting it makes every shape measure again.
    """
    value = os.environ.get(MEMORY_VAR, "").strip()
    if value.lower() == "off":
        return None
    if value:
        return Path(value).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(cache) / "seqlab" / "loop_choices.json"


def _machine():
    """What a remembered choice holds for besides its key: the CPU, the libraries, the
    kernels TensorFlow picks (`TF_ENABLE_ONEDNN_OPTS`) and the loops' own revision."""
    return "; ".join([
        cpu_name(), f"{os.cpu_count()} CPUs", f"TensorFlow {tf.__version__}",
        f"Keras {keras.__version__}", f"oneDNN {os.environ.get('TF_ENABLE_ONEDNN_OPTS', '')}",
        f"loops {LOOPS_REVISION}",
    ])


def cpu_name():
    """The CPU's model name (Linux's /proc/cpuinfo), else what `platform` reports."""
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _memory_key(key):
    return json.dumps([_machine(), [list(part) if isinstance(part, tuple) else part
                                    for part in key]])


def _read_memory(path):
    """`{memory key: entry}` of the file; nothing from a file that is missing or unreadable
    (it is written again whole by the next measurement)."""
    try:
        choices = json.loads(path.read_text()).get("choices", {})
    except (OSError, ValueError, AttributeError):
        return {}
    return choices if isinstance(choices, dict) else {}


def _recall(key):
    """The loop remembered for `key` on this machine, or None."""
    global _remembered
    path = memory_path()
    if path is None:
        return None
    if _remembered is None:
        _remembered = _read_memory(path)
    entry = _remembered.get(_memory_key(key))
    return entry.get("loop") if isinstance(entry, dict) else None


def _remember(key, loop, times):
    """Adds a measured choice to the memory file (atomically: a reader sees the old file or
    the new one). A file that cannot be written costs a measurement in the next process.
    Temporary copies that a killed process left beside it are removed (`_remove_stale`)."""
    path = memory_path()
    if path is None:
        return
    entry = {"loop": loop, "ms": {name: round(ms, 3) for name, ms in times.items()},
             "measured": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    memory_key = _memory_key(key)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        choices = _read_memory(path)  # what other processes added meanwhile
        choices[memory_key] = entry
        descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
        try:
            with os.fdopen(descriptor, "w") as handle:
                json.dump({"choices": choices}, handle, indent=1)
            os.replace(temporary, path)
        except BaseException:
            os.unlink(temporary)
            raise
    except OSError:
        return
    _remove_stale(path)
    if _remembered is not None:
        _remembered[memory_key] = entry


def _remove_stale(path):
    """Removes the temporary copies of the memory file (`.<name>.XXXX`, as `_remember`
    names them) last written more than `STALE_TEMPORARY_SECONDS` ago: a process killed
    between writing one and renaming it left it. A younger one may be another process's
    write in progress and is left alone."""
    now = time.time()
    for temporary in path.parent.glob(f".{path.name}.*"):
        try:
            if now - temporary.lstat().st_mtime > STALE_TEMPORARY_SECONDS:
                temporary.unlink()
        except OSError:  # gone meanwhile, or not ours to remove
            continue


def fastest(times):
    """The loop to keep, from `{variant: ms}`: Keras's own unless another is clearly faster.

    Keras's loop is the built-in layer's speed by construction; on a busy machine a
    measurement can put a loop a few percent ahead that is not, so another loop has to
    beat Keras's by more than `KERAS_MARGIN` to be kept.
    """
    best = min(times, key=times.get)
    if "keras" in times and times["keras"] <= times[best] * (1 + KERAS_MARGIN):
        return "keras"
    return best


def measure(layer, key, variants):
    """Median milliseconds of each loop in `variants` for `key`'s shape, on this machine.

    Runs eagerly, on random inputs, with the
    layer's own weights and without dropout; a training key times the forward
    and the backward pass (gradients of the weights and of the inputs). A loop
    that fails to run here is left out of the result; where none runs, the
    first one's error is raised.
    """
    # In a thread of its own: it starts outside any trace in progress and any
    # paused gradient tape (`tf.init_scope` would pause the tapes).
    result = {}

    def target():
        try:
            result["times"] = _measure_eagerly(layer, key, variants)
        except BaseException as error:  # re-raised in the caller's thread
            result["error"] = error

    thread = threading.Thread(target=target, name="seqlab-loop-choice")
    thread.start()
    thread.join()
    if "error" in result:
        raise result["error"]
    return result["times"]


@contextlib.contextmanager
def _no_retracing_warning():
    """TensorFlow's "N out of the last M calls to <function> triggered tf.function retracing"
    kept off the terminal: the measurement traces every candidate loop once, on purpose."""
    logger = tf.get_logger()
    quiet = RetracingFilter()
    logger.addFilter(quiet)
    try:
        yield
    finally:
        logger.removeFilter(quiet)


def _measure_eagerly(layer, key, variants):
    cell = layer.cell
    _, _, _, _, features, batch, steps, dtype, training, masked = key[:10]
    # A direction of a Bidirectional runs beside the other direction's loop: timed so, two
    # loops side by side on inputs of their own (the same inputs would let TensorFlow's graph
    # optimizer merge the two).
    copies = 2 if getattr(layer, "_beside_another", False) else 1
    x = tf.random.normal([copies, batch, steps, features], dtype=dtype, seed=1)
    sizes = cell.state_size if isinstance(cell.state_size, list) else [cell.state_size]
    initial_state = [tf.zeros([batch, size], dtype=dtype) for size in sizes]
    mask = tf.ones([batch, steps], tf.bool) if masked else None
    weights = list(cell.trainable_variables)

    def make(variant):
        def run(x):
            # No dropout (its draws would move the layer's seed), but differentiated as
            # training is.
            return tf.stack([
                layer.run_loop(variant, x[copy], initial_state, mask, training=False,
                               backward=training)[1]
                for copy in range(copies)
            ])

        if not training:
            return tf.function(run, autograph=False)

        @tf.function(autograph=False)
        def train(x):
            with tf.GradientTape() as tape:
                tape.watch(x)
                loss = tf.reduce_sum(run(x))
            gradients = tape.gradient(loss, weights + [x])
            return loss + tf.add_n([tf.reduce_sum(g) for g in gradients])

        return train

    functions, failures = {}, []
    for variant in variants:
        try:
            function = make(variant)
            with _no_retracing_warning():  # a new function per candidate is the point here
                for _ in range(2):
                    function(x).numpy()
        except Exception as error:  # noqa: BLE001 - this loop cannot run here; the others can
            # For example an XLA-compiled loop where XLA cannot compile one of its operations.
            failures.append(error)
            continue
        functions[variant] = function
    if not functions:
        raise failures[0]
    variants = list(functions)
    times = {variant: [] for variant in variants}
    started = time.perf_counter()
    for round_index in range(MAX_ROUNDS):
        if round_index >= MIN_ROUNDS and time.perf_counter() - started > MIN_SECONDS:
            break
        shift = round_index % len(variants)
        for variant in variants[shift:] + variants[:shift]:
            start = time.perf_counter()
            functions[variant](x).numpy()
            times[variant].append((time.perf_counter() - start) * 1e3)
    return {variant: statistics.median(values) for variant, values in times.items()}


def measurements():
    """`{key: {variant: median ms}}` of the shapes measured in this process (None: failed)."""
    return {key: None if times is None else dict(times) for key, times in _measurements.items()}


def clear():
    """Forgets every choice of this process (the next trace of each shape recalls it from
    the memory file, if any, or measures again)."""
    global _remembered
    _choices.clear()
    _measurements.clear()
    _remembered = None
