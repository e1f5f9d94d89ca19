"""Times seqlab's attention layers against Keras's and cached decoding against recomputation.

Run from the repository root:

    python benchmarks/attention.py

(TensorFlow's log stays off the terminal, as the command line keeps it; setting
TF_CPP_MIN_LOG_LEVEL asks for it, its load notices included.)

1. MultiHeadAttention (ours) vs keras.layers.MultiHeadAttention with the same
   weights: a forward pass and a training step (gradient + SGD update), each a
   compiled `tf.function`.
2. Generating 128 positions with a TransformerDecoderLayer: `decode_step` with
   the key/value cache vs recomputing the decoder over the whole prefix at every
   step (both one compiled `tf.function` per step, fed back their own output),
   and the cached loop as one `tf.while_loop` in a single `tf.function`.

Everything runs in one process; the variants are interleaved in every
repetition and the medians are reported, since the machines are noisy. Prints
a table and then one JSON line with the ratios (ours / Keras, cached / full).
"""

import argparse
import json
import statistics
import time

# seqlab first: its import hook keeps TensorFlow's load notices (which ignore
# TF_CPP_MIN_LOG_LEVEL) and C++ log off the terminal, as the command line does.
import seqlab  # noqa: E402,F401

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from seqlab.layers import MultiHeadAttention  # noqa: E402
from seqlab.layers import TransformerDecoderLayer  # noqa: E402


def interleaved_medians(variants, repetitions):
    """Calls every variant once per repetition, in turn; returns median seconds."""
    times = {name: [] for name in variants}
    for fn in variants.values():  # warm-up: tracing and first-call costs
        fn()
    for _ in range(repetitions):
        for name, fn in variants.items():
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(values) for name, values in times.items()}


def attention_variants(batch, length, model_dim, num_heads, calls):
    rng = np.random.default_rng(0)
    x = tf.constant(rng.normal(size=(batch, length, model_dim)), tf.float32)
    key_dim = model_dim // num_heads
    theirs = keras.layers.MultiHeadAttention(num_heads, key_dim)
    ours = MultiHeadAttention(num_heads, key_dim)
    theirs(x, x)
    ours(x, x)
    ours.set_weights(theirs.get_weights())
    np.testing.assert_allclose(ours(x, x), theirs(x, x), atol=1e-5)

    variants = {}
    for name, layer in (("ours", ours), ("keras", theirs)):
        optimizer = keras.optimizers.SGD(0.0)  # rate 0: the weights stay equal
        optimizer.build(layer.trainable_variables)

        @tf.function
        def forward(layer=layer):
            total = 0.0
            for _ in range(calls):
                total += tf.reduce_sum(layer(x, x))
            return total

        @tf.function
        def train_step(layer=layer, optimizer=optimizer):
            for _ in range(calls):
                with tf.GradientTape() as tape:
                    loss = tf.reduce_mean(tf.square(layer(x, x)))
                gradients = tape.gradient(loss, layer.trainable_variables)
                optimizer.apply(gradients, layer.trainable_variables)

        variants[f"forward/{name}"] = forward
        variants[f"train_step/{name}"] = train_step
    return variants


def decoding_variants(batch, source_length, model_dim, num_heads, ff_dim, steps):
    rng = np.random.default_rng(1)
    encoder_outputs = tf.constant(rng.normal(size=(batch, source_length, model_dim)), tf.float32)
    first = tf.constant(rng.normal(size=(batch, 1, model_dim)), tf.float32)
    decoder = TransformerDecoderLayer(num_heads, ff_dim)
    decoder(tf.concat([first, first], axis=1), encoder_outputs)

    @tf.function(input_signature=[tf.TensorSpec((batch, None, model_dim), tf.float32)])
    def full_step(prefix):
        return decoder(prefix, encoder_outputs)[:, -1:]

    @tf.function
    def cached_step(inputs, cache, index):
        return decoder.decode_step(inputs, cache, index)

    def recompute():
        prefix = first
        for _ in range(steps):
            prefix = tf.concat([prefix, full_step(prefix)], axis=1)
        return prefix[:, 1:]

    def cached():
        cache = decoder.init_cache(encoder_outputs, steps)
        inputs, outputs = first, []
        for index in range(steps):
            inputs, cache = cached_step(inputs, cache, tf.constant(index))
            outputs.append(inputs)
        return tf.concat(outputs, axis=1)

    @tf.function
    def cached_while_loop():
        def body(index, inputs, cache, outputs):
            step, cache = decoder.decode_step(inputs, cache, index)
            return index + 1, step, cache, outputs.write(index, step[:, 0])

        _, _, _, outputs = tf.while_loop(
            lambda index, *_: index < steps,
            body,
            (tf.constant(0), first, decoder.init_cache(encoder_outputs, steps),
             tf.TensorArray(tf.float32, size=steps)),
        )
        return tf.transpose(outputs.stack(), (1, 0, 2))

    expected = recompute()
    np.testing.assert_allclose(cached(), expected, atol=1e-4)
    np.testing.assert_allclose(cached_while_loop(), expected, atol=1e-4)
    return {
        f"decode{steps}/full_prefix": recompute,
        f"decode{steps}/cached": cached,
        f"decode{steps}/cached_while_loop": cached_while_loop,
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repetitions", type=int, default=15)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--length", type=int, default=64)
    parser.add_argument("--model-dim", type=int, default=128)
    parser.add_argument("--num-heads", type=int, default=8)
    parser.add_argument("--calls", type=int, default=10, help="layer calls per timed function")
    parser.add_argument("--steps", type=int, default=128, help="positions generated")
    args = parser.parse_args(argv)
    # Each ended in a traceback: 0 repetitions or steps timed nothing (statistics' error or a
    # KeyError), and the layers refuse a model dimension the heads do not divide.
    for flag in ("repetitions", "batch", "length", "model_dim", "num_heads", "calls", "steps"):
        if getattr(args, flag) < 1:
            parser.error(f"--{flag.replace('_', '-')} must be at least 1, not "
                         f"{getattr(args, flag)}")
    if args.model_dim % args.num_heads:
        parser.error(f"--model-dim {args.model_dim} is not a multiple of --num-heads "
                     f"{args.num_heads}: each head gets model-dim / num-heads dimensions")

    medians = interleaved_medians(
        attention_variants(args.batch, args.length, args.model_dim, args.num_heads, args.calls),
        args.repetitions,
    )
    medians.update(
        interleaved_medians(
            decoding_variants(
                8, 32, args.model_dim, args.num_heads, 4 * args.model_dim, args.steps
            ),
            max(3, args.repetitions // 3),
        )
    )
    ratios = {
        "mha_forward_ours_over_keras": medians["forward/ours"] / medians["forward/keras"],
        "mha_train_step_ours_over_keras": medians["train_step/ours"] / medians["train_step/keras"],
        f"decode{args.steps}_cached_over_full_prefix": (
            medians[f"decode{args.steps}/cached"] / medians[f"decode{args.steps}/full_prefix"]
        ),
        f"decode{args.steps}_cached_while_loop_over_full_prefix": (
            medians[f"decode{args.steps}/cached_while_loop"]
            / medians[f"decode{args.steps}/full_prefix"]
        ),
    }
    print(
        f"MultiHeadAttention: batch {args.batch}, length {args.length}, d_model {args.model_dim}, "
        f"{args.num_heads} heads, {args.calls} calls per timing; decoding: batch 8, source 32, "
        f"ff_dim {4 * args.model_dim}; medians of interleaved repetitions"
    )
    print(f"{'variant':<34}{'median ms':>12}")
    for name, seconds in medians.items():
        print(f"{name:<34}{seconds * 1e3:>12.2f}")
    for name, ratio in ratios.items():
        print(f"{name:<54}{ratio:>8.3f}")
    print(json.dumps({name: round(ratio, 4) for name, ratio in ratios.items()}))


if __name__ == "__main__":
    main()
