"""Times seqlab's SimpleRNN, LSTM and GRU against Keras's built-in layers.

One process per setting, interleaved: every round runs each contender once, in
an order that rotates, so that drifts in machine load touch all of them alike.
Reports median milliseconds per call and the ratio ours / Keras, for

- the bare layer, compiled in a `tf.function`: a training step (forward and
  backward, `training=True`) that takes the gradient of the weights only
  (`train`: the layer is a model's first layer, on raw inputs) or of the
  inputs too (`train_dx`: a layer after an embedding or another layer), and
  inference;
- the Keras path: the layer inside a model compiled with Adam, timed through
  `train_on_batch` (`fit_step`) and `predict_on_batch` (`predict`), with the
  weights of ours copied from Keras's.

Sizes (`--shape`): `default` (batch 64, 100 steps, 64 features, 256 units, all
three layers), or (comma-separated) the shapes of seqlab's tasks at their default settings:
`sentiment` (BiLSTM, 64 units per direction, 64-dim embedding, batch 32, 64
tokens, masked), `ner` (the tagger's word BiLSTM, 100 units per direction over
100-dim words and 50 character features, batch 32, 40 tokens, masked),
`ner_chars` (its character BiLSTM, 25 units, 25-dim characters, 20 per word,
the 1,280 words of a batch), `charrnn` (GRU 256 over 64-dim character
embeddings, batch 64, 100 steps, 65 characters) and `forecaster` (GRU 32,
batch 32, lookback 24, 1 feature); `--shape all` runs each in turn. The
explicit size flags override a shape's.

`--threads 1,2,all` runs each setting in a process of its own with
TensorFlow's intra- and inter-op thread pools of that size (set before
TensorFlow starts); `all` leaves TensorFlow's default (every core).

`--control` also times a second copy of Keras's layer against the first: its ratio is the
machine's noise (1.0 on a quiet machine). `--variants` also times ours with each loop variant
forced (`SEQLAB_RNN_LOOP`, see `seqlab/layers/_loop_choice.py`); without it ours runs its
default, the loop it measured fastest for the shape (measured afresh in every setting: the
benchmark neither reads nor writes the loop memory). `--step-mask` also times ours with the
mask applied step by step instead of compacted (`RecurrentLayer._run_compacted`), on the Keras
path of the masked shapes.

    python benchmarks/recurrent.py [--shape default,sentiment,ner,ner_chars,charrnn,forecaster|all]
                                   [--threads all] [--rounds 15] [--variants] [--control]
                                   [--step-mask]
                                   [--batch N] [--steps N] [--features N] [--units N]

Prints a table per setting, then one JSON line, `{"benchmark": "recurrent", "cpu": ...,
"settings": [...]}`, with one entry (its ratios) per setting. When a setting's process fails,
its last lines of stderr are shown and the JSON line holds the settings measured before it;
the exit status is then 1.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

# Every setting measures its loops afresh (the figures say what this run measured), and
# remembers nothing (`seqlab/layers/_loop_choice.py`).
os.environ["SEQLAB_LOOP_MEMORY"] = "off"

# Each shape: layers timed, sizes, whether the layer is bidirectional and masked (after an
# Embedding(mask_zero=True)), the vocabulary of the Keras path's embedding (None: raw
# features) and what the model's head predicts.
SHAPES = {
    "default": dict(layers=("SimpleRNN", "LSTM", "GRU"), batch=64, steps=100, features=64,
                    units=256, bidirectional=False, vocabulary=None, sequences=False),
    "sentiment": dict(layers=("LSTM",), batch=32, steps=64, features=64, units=64,
                      bidirectional=True, vocabulary=20000, sequences=True),
    "ner": dict(layers=("LSTM",), batch=32, steps=40, features=150, units=100,
                bidirectional=True, vocabulary=None, sequences=True),
    "ner_chars": dict(layers=("LSTM",), batch=1280, steps=20, features=25, units=25,
                      bidirectional=True, vocabulary=100, sequences=False),
    "charrnn": dict(layers=("GRU",), batch=64, steps=100, features=64, units=256,
                    bidirectional=False, vocabulary=65, sequences=True),
    "forecaster": dict(layers=("GRU",), batch=32, steps=24, features=1, units=32,
                       bidirectional=False, vocabulary=None, sequences=False),
}
MIN_SAMPLE_MS = 30
# How many of a failed setting's last stderr lines are shown (its traceback's end).
STDERR_LINES = 20
CONTROL = "control"
STEP_MASK = "step_mask"
BARE_MODES = ("train", "train_dx", "inference")
KERAS_MODES = ("fit_step", "predict")


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", default="default",
                        help=f"comma-separated, of {', '.join(SHAPES)}; or all")
    parser.add_argument("--threads", default="all",
                        help="comma-separated thread counts, each in its own process (all: "
                        "TensorFlow's default)")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--variants", action="store_true",
                        help="also time ours with each loop variant forced")
    parser.add_argument("--control", action="store_true",
                        help="also time a second copy of Keras's layer against the first (its "
                        "ratio shows the machine's noise: 1.0 on a quiet one)")
    parser.add_argument("--step-mask", action="store_true",
                        help="also time ours with the mask applied step by step, as before masked "
                        "inputs ran compacted (Keras path of masked shapes)")
    parser.add_argument("--no-keras-path", action="store_true",
                        help="time the bare layers only")
    for size in ("batch", "steps", "features", "units"):
        parser.add_argument(f"--{size}", type=int, default=None)
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error(f"--rounds must be at least 1 (a median needs a sample), not {args.rounds}")
    for size in ("batch", "steps", "features", "units"):  # 0 failed in each child process
        value = getattr(args, size)
        if value is not None and value < 1:
            parser.error(f"--{size} must be at least 1, not {value}")
    for count in args.threads.split(","):  # 0 ran TensorFlow's default under the label 0
        if count.strip() != "all" and not (count.strip().isdigit() and int(count) >= 1):
            parser.error(f"--threads: each a whole number of at least 1, or all; not {count!r}")
    return args


def run_settings(args, argv):
    """One subprocess per (shape, thread count); returns their JSON results and whether every
    setting finished. The first setting that fails ends the run: its stderr's last lines are
    shown, and the results of the settings before it are returned rather than lost."""
    shapes = list(SHAPES) if args.shape == "all" else [s.strip() for s in args.shape.split(",")]
    if "all" in shapes and args.shape != "all":  # "unknown all; known: ..., all" before
        raise SystemExit(f"--shape {args.shape}: all stands alone (every shape); give all, or "
                         f"a comma-separated list of {', '.join(SHAPES)}")
    unknown = [shape for shape in shapes if shape not in SHAPES]
    if unknown:
        raise SystemExit(f"--shape: unknown {', '.join(unknown)}; known: {', '.join(SHAPES)}, all")
    threads = [t.strip() for t in args.threads.split(",") if t.strip()]
    results = []
    for shape in shapes:
        for thread_count in threads:
            command = [sys.executable, __file__, *strip_options(argv),
                       "--shape", shape, "--threads", thread_count, "--in-process"]
            done = subprocess.run(command, capture_output=True, text=True)
            lines = done.stdout.splitlines()
            table = [line for line in lines if not line.startswith("{")]
            if table:
                print("\n".join(table), flush=True)
            if done.returncode:
                tail = done.stderr.strip().splitlines()[-STDERR_LINES:]
                print(f"shape {shape}, threads {thread_count}: the setting's process failed "
                      f"(exit status {done.returncode}); the end of its stderr:",
                      *(f"  {line}" for line in tail), sep="\n", file=sys.stderr, flush=True)
                return results, False
            results.extend(json.loads(line) for line in lines if line.startswith("{"))
    return results, True


def strip_options(argv):
    """`argv` without --shape and --threads (and their values)."""
    kept, skip = [], False
    for item in argv:
        if skip:
            skip = False
            continue
        if item in ("--shape", "--threads"):
            skip = True
            continue
        if item.startswith(("--shape=", "--threads=")):
            continue
        kept.append(item)
    return kept


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    in_process = "--in-process" in argv
    argv = [item for item in argv if item != "--in-process"]
    args = parse_args(argv)
    if not in_process:
        results, finished = run_settings(args, argv)
        cpu = results[0]["cpu"] if results else "unknown CPU"
        print(json.dumps({"benchmark": "recurrent", "cpu": cpu, "settings": results}))
        return 0 if finished else 1
    print(json.dumps(time_setting(args)))


def time_setting(args):
    """Times one shape at one thread count, in this process."""
    # seqlab first: its import hook keeps TensorFlow's load notices and C++ log off stderr
    # (shown when a setting fails), unless the user set TF_CPP_MIN_LOG_LEVEL.
    import seqlab  # noqa: F401
    import tensorflow as tf

    threads = 0 if args.threads == "all" else int(args.threads)
    # Before TensorFlow's first operation: the thread pools are fixed from then on.
    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(threads)

    import keras
    import numpy as np

    from seqlab import layers
    from seqlab.layers import _loop_choice

    pairs = {
        "SimpleRNN": (layers.SimpleRNN, keras.layers.SimpleRNN),
        "LSTM": (layers.LSTM, keras.layers.LSTM),
        "GRU": (layers.GRU, keras.layers.GRU),
    }
    shape = dict(SHAPES[args.shape])
    for size in ("batch", "steps", "features", "units"):
        if getattr(args, size) is not None:
            shape[size] = getattr(args, size)
    rng = np.random.default_rng(0)
    batch, steps, features, units = (shape[k] for k in ("batch", "steps", "features", "units"))
    x = tf.constant(rng.normal(size=(batch, steps, features)), dtype="float32")
    if shape["vocabulary"]:
        # Right-padded token ids: lengths between half and all of the steps.
        ids = rng.integers(1, shape["vocabulary"], size=(batch, steps))
        lengths = rng.integers(steps // 2, steps + 1, size=batch)
        ids[np.arange(steps)[None, :] >= lengths[:, None]] = 0
        model_x = ids.astype("int32")
    else:
        model_x = x.numpy()
    model_y = rng.normal(size=(batch, steps, 1) if shape["sequences"] else (batch, 1))
    model_y = model_y.astype("float32")

    variants = [None]
    if args.variants:
        variants += list(_loop_choice.VARIANTS)
    if args.control:
        variants.append(CONTROL)
    if args.step_mask and shape["vocabulary"] and not args.no_keras_path:
        variants.append(STEP_MASK)

    def ours_label(variant):
        if variant == CONTROL:
            return "keras again"
        if variant == STEP_MASK:
            return "ours, step mask"
        return "ours" if variant is None else f"ours:{variant}"

    contenders, warm = {}, {}
    for name in shape["layers"]:
        ours_cls, keras_cls = pairs[name]
        reference = None
        for variant in [*variants, "keras-builtin"]:
            who = "keras" if variant == "keras-builtin" else ours_label(variant)
            cls = keras_cls if variant in ("keras-builtin", CONTROL) else ours_cls
            if variant in _loop_choice.VARIANTS:
                os.environ[_loop_choice.ENV_VAR] = variant
            else:
                os.environ.pop(_loop_choice.ENV_VAR, None)
            layer = make_layer(cls, units, shape)
            # The bare layer runs unmasked: there the step mask is ours again.
            for mode, fn in bare_functions(layer, x, keras).items() if variant != STEP_MASK else ():
                for _ in range(2):  # trace (and choose the loop) and warm up
                    warm[(name, mode, who)] = time_call(fn, keras)
                contenders[(name, mode, who)] = fn
            if not args.no_keras_path:
                model = make_model(cls, units, shape, keras)
                if variant == STEP_MASK:
                    step_by_step_masks(model)
                if reference is None:
                    reference = model
                    model.predict_on_batch(model_x)
                else:
                    model.predict_on_batch(model_x)
                    model.set_weights(reference.get_weights())
                for mode, fn in keras_path_functions(model, model_x, model_y).items():
                    for _ in range(2):
                        warm[(name, mode, who)] = time_call(fn, keras)
                    contenders[(name, mode, who)] = fn
    os.environ.pop(_loop_choice.ENV_VAR, None)

    # Calls of a few milliseconds are repeated (the same count for ours and Keras's) so that
    # one timed sample lasts about MIN_SAMPLE_MS: single short calls are mostly noise here.
    repeats = {key: max(1, round(MIN_SAMPLE_MS / warm[(*key[:2], "keras")])) for key in contenders}
    times = {key: [] for key in contenders}
    keys = list(contenders)
    for round_index in range(args.rounds):
        shift = round_index % len(keys)
        for key in keys[shift:] + keys[:shift]:
            times[key].append(time_call(contenders[key], keras, repeats[key]))

    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"shape {args.shape}: batch {batch}, {steps} steps, {features} features, {units} units"
        f"{', bidirectional' if shape['bidirectional'] else ''}"
        f"{', masked' if shape['vocabulary'] else ''}; threads {args.threads}; median of "
        f"{args.rounds} interleaved rounds (TensorFlow {tf.__version__}, Keras "
        f"{keras.__version__}, {_loop_choice.cpu_name()}, {os.cpu_count()} CPUs, load average "
        f"{load:.1f})"
    )
    print(f"{'layer':<10} {'mode':<10} {'who':<16} {'ms':>9} {'keras ms':>9} {'ratio':>7}")
    ratios = {}
    modes = BARE_MODES + (() if args.no_keras_path else KERAS_MODES)
    for name in shape["layers"]:
        for mode in modes:
            theirs = statistics.median(times[(name, mode, "keras")])
            for variant in variants:
                who = ours_label(variant)
                if (name, mode, who) not in times:
                    continue
                ours = statistics.median(times[(name, mode, who)])
                ratio = ours / theirs
                ratios[f"{name}_{mode}" + ("" if variant is None else f"_{variant}")] = round(
                    ratio, 3)
                print(f"{name:<10} {mode:<10} {who:<16} {ours:9.1f} {theirs:9.1f} {ratio:7.2f}")
    chosen = {
        "/".join(str(part) for part in key[:10]): _loop_choice.fastest(measured)
        for key, measured in _loop_choice.measurements().items()
        if measured is not None
    }
    if chosen:
        print("loops chosen by measurement:", ", ".join(f"{k}: {v}" for k, v in chosen.items()))
    return {"shape": args.shape, "threads": args.threads, "cpu": _loop_choice.cpu_name(),
            "load_average": round(load, 2),
            "ratios": ratios, "chosen": chosen}


def make_layer(cls, units, shape):
    import keras

    return_sequences = shape["sequences"]
    layer = cls(units, return_sequences=return_sequences)
    return keras.layers.Bidirectional(layer) if shape["bidirectional"] else layer


def step_by_step_masks(model):
    """Makes `model`'s recurrent layers apply their mask step by step (not compacted)."""
    for layer in model.layers:
        for recurrent in (getattr(layer, "forward_layer", None),
                          getattr(layer, "backward_layer", None), layer):
            if hasattr(recurrent, "_can_compact_mask"):
                recurrent._can_compact_mask = lambda training, final_states=False: False


def make_model(cls, units, shape, keras):
    if shape["vocabulary"]:
        inputs = [keras.Input((shape["steps"],), dtype="int32"),
                  keras.layers.Embedding(shape["vocabulary"], shape["features"], mask_zero=True)]
    else:
        inputs = [keras.Input((shape["steps"], shape["features"]))]
    model = keras.Sequential([*inputs, make_layer(cls, units, shape), keras.layers.Dense(1)])
    model.compile(optimizer=keras.optimizers.Adam(1e-3), loss="mse")
    return model


def bare_functions(layer, x, keras):
    """A compiled inference call and two compiled training steps for `layer`."""
    import tensorflow as tf

    layer(x)
    optimizer = keras.optimizers.SGD(1e-3)

    @tf.function(jit_compile=False)
    def infer():
        return layer(x, training=False)

    def make_train_step(input_gradient):
        @tf.function(jit_compile=False)
        def train_step():
            with tf.GradientTape() as tape:
                if input_gradient:
                    tape.watch(x)
                loss = tf.reduce_mean(tf.square(layer(x, training=True)))
            sources = layer.trainable_variables + ([x] if input_gradient else [])
            grads = tape.gradient(loss, sources)
            optimizer.apply_gradients(zip(grads, layer.trainable_variables))
            return loss + tf.reduce_sum(grads[-1]) if input_gradient else loss

        return train_step

    return {"inference": infer, "train": make_train_step(False),
            "train_dx": make_train_step(True)}


def keras_path_functions(model, x, y):
    return {"fit_step": lambda: model.train_on_batch(x, y),
            "predict": lambda: model.predict_on_batch(x)}


def time_call(fn, keras, repeats=1):
    """Milliseconds per call of `fn`, over `repeats` calls."""
    start = time.perf_counter()
    for _ in range(repeats):
        result = fn()
        keras.ops.convert_to_numpy(result)  # wait for the result
    return (time.perf_counter() - start) * 1e3 / repeats


if __name__ == "__main__":
    sys.exit(main())
