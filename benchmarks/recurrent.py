"""Times seqlab's SimpleRNN, LSTM and GRU against Keras's built-in layers.

One process, interleaved: every round runs each contender once, in an order
that rotates, so that drifts in machine load touch all of them alike. Reports
median milliseconds per call and the ratio ours / Keras for a training step
(forward and backward, inside a compiled tf.function) and for inference. Two
training steps: `train` takes the gradient of the weights only (the layer is a
model's first layer, on raw inputs); `train_dx` also takes the gradient of the
inputs (a layer after an embedding or another layer, the usual case).

    python benchmarks/recurrent.py [--batch 64] [--steps 100] [--features 64]
                                   [--units 256] [--rounds 15]

Prints a table, then one JSON line with the ratios.
"""

import argparse
import json
import os
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from seqlab import layers  # noqa: E402

MODES = ("train", "train_dx", "inference")
PAIRS = {
    "SimpleRNN": (layers.SimpleRNN, keras.layers.SimpleRNN),
    "LSTM": (layers.LSTM, keras.layers.LSTM),
    "GRU": (layers.GRU, keras.layers.GRU),
}


def make_functions(layer, x):
    """A compiled inference call and a compiled training step for `layer`."""
    layer(x)
    optimizer = keras.optimizers.SGD(1e-3)

    @tf.function(jit_compile=False)
    def infer(x):
        return layer(x, training=False)

    def make_train_step(input_gradient):
        @tf.function(jit_compile=False)
        def train_step(x):
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


def time_call(fn, x):
    start = time.perf_counter()
    result = fn(x)
    keras.ops.convert_to_numpy(result)  # wait for the result
    return (time.perf_counter() - start) * 1e3


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--features", type=int, default=64)
    parser.add_argument("--units", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args(argv)

    x = tf.constant(
        np.random.default_rng(0).normal(size=(args.batch, args.steps, args.features)),
        dtype="float32",
    )
    contenders = {}
    for name, (ours, builtin) in PAIRS.items():
        for who, cls in (("ours", ours), ("keras", builtin)):
            functions = make_functions(cls(args.units), x)
            for mode, fn in functions.items():
                for _ in range(2):  # trace and warm up
                    time_call(fn, x)
                contenders[(name, mode, who)] = fn

    times = {key: [] for key in contenders}
    keys = list(contenders)
    for round_index in range(args.rounds):
        shift = round_index % len(keys)
        for key in keys[shift:] + keys[:shift]:
            times[key].append(time_call(contenders[key], x))

    print(
        f"batch {args.batch}, {args.steps} steps, {args.features} features, "
        f"{args.units} units, median of {args.rounds} interleaved rounds "
        f"(TensorFlow {tf.__version__}, Keras {keras.__version__}, CPU threads "
        f"{os.cpu_count()})"
    )
    print(f"{'layer':<10} {'mode':<10} {'ours ms':>9} {'keras ms':>9} {'ours/keras':>11}")
    ratios = {}
    for name in PAIRS:
        for mode in MODES:
            ours = statistics.median(times[(name, mode, "ours")])
            theirs = statistics.median(times[(name, mode, "keras")])
            ratios[f"{name}_{mode}"] = round(ours / theirs, 3)
            print(f"{name:<10} {mode:<10} {ours:9.1f} {theirs:9.1f} {ours / theirs:11.2f}")
    print(json.dumps({"benchmark": "recurrent", "ratios": ratios}))


if __name__ == "__main__":
    main()
