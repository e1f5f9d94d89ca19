"""Times char-RNN generation: our carried-state loop against re-feeding the whole text.

Contenders, each generating `--chars` characters greedily from the same prompt (so that their
texts must agree, which is checked):

- `ours`: `TextGenerator.generate` (`CharLanguageModel.generate`), the prompt read once, then
  one character per step with explicit states; the sampling loop is one `tf.while_loop`
  (models/samplers.py).
- `ours, sampled`: the same at temperature 1.0 (adds the sampling ops).
- `SavedModel generate`: the exported `generate` signature, reloaded.
- `naive, seeds' loop`: the lecture notes' loop: for every new character, `model.predict` on
  the whole text so far, take the last position's logits.
- `naive, compiled`: the same re-feeding, but through one `tf.function` that accepts any
  length (no `predict` overhead, no retracing): the strongest form of the naive method.

One process, interleaved: every round runs each contender once, in an order that rotates, so
that drifts in machine load touch all of them alike. Reports the median characters per second
and the ratio of ours to each naive loop. The model has random weights unless `--run` names a
trained run (the speed does not depend on the weights).

    python benchmarks/generation.py [--run DIR] [--chars 500] [--rounds 2] [--model gru]
                                    [--units 256] [--layers 1] [--embedding-dim 64]

Prints a table, then one JSON line with the figures. The SavedModel is exported into a
temporary folder, deleted at the end (a failure included).
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

# seqlab first: its import hook keeps TensorFlow's load notices (which ignore
# TF_CPP_MIN_LOG_LEVEL) and C++ log off the terminal, as the command line does.
import seqlab  # noqa: E402,F401

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from seqlab.data.errors import DataError  # noqa: E402
from seqlab.data.text import CharVocabulary, load_default_text  # noqa: E402
from seqlab.models.char_lm import NEVER, TextGenerator  # noqa: E402
from seqlab.pipelines.charrnn import (  # noqa: E402
    PIPELINE,
    CharRNNConfig,
    build_model,
    export_saved_model,
)
from seqlab.pipelines.common import format_table  # noqa: E402
from seqlab.pipelines.errors import UsageError  # noqa: E402

PROMPT = "The "


def naive_generate(predict_logits, vocabulary, prompt, num_chars):
    """The seeds' method: the model reads the whole text so far for every new character."""
    ids = list(vocabulary.encode(prompt)[0])
    for _ in range(num_chars):
        logits = np.array(predict_logits(np.array([ids], "int32")))[0, -1]
        logits[:2] += NEVER  # padding and [UNK], as our generator does
        ids.append(int(np.argmax(logits)))
    return vocabulary.decode(ids)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", help="a trained charrnn run (default: random weights)")
    parser.add_argument("--chars", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--model", default="gru", choices=["gru", "lstm"])
    parser.add_argument("--units", type=int, default=256)
    parser.add_argument("--layers", type=int, default=1)
    parser.add_argument("--embedding-dim", type=int, default=64)
    args = parser.parse_args(argv)
    # 0 ended in a KeyError (--rounds), a ZeroDivisionError (--chars) or Keras's ValueError.
    for flag in ("chars", "rounds", "units", "layers", "embedding_dim"):
        if getattr(args, flag) < 1:
            parser.error(f"--{flag.replace('_', '-')} must be at least 1, not "
                         f"{getattr(args, flag)}")

    if args.run:
        try:
            run = PIPELINE.load_run(args.run)
        except (DataError, UsageError) as error:  # no such folder, or not a charrnn run
            parser.error(f"--run {args.run}: {error}")
        config, vocabulary, model = run.config, run.artifacts["vocabulary"], run.model
        if config.stateful:
            parser.error("--run: the naive loop needs a stateless run (any length, batch 1)")
    else:
        config = CharRNNConfig(model=args.model, units=args.units, layers=args.layers,
                               embedding_dim=args.embedding_dim)
        vocabulary = CharVocabulary.from_text(load_default_text()[0])
        model = build_model(config, vocabulary.size)
    with tempfile.TemporaryDirectory(prefix="seqlab-generation-") as export_dir:
        return compare(args, config, vocabulary, model, export_dir)


def compare(args, config, vocabulary, model, export_dir):
    """Times the contenders on `model` (its SavedModel exported into `export_dir`), prints the
    figures; the exit status: 1 if the greedy texts differ."""
    generator = TextGenerator(model, vocabulary.lookup, vocabulary.inverse)
    export_saved_model(generator, os.path.join(export_dir, "saved_model"))
    exported = tf.saved_model.load(os.path.join(export_dir, "saved_model"))
    compiled_model = tf.function(
        lambda ids: model(ids, training=False),
        input_signature=[tf.TensorSpec([1, None], tf.int32)],
        autograph=False,
    )

    def saved_model_generate(prompt, num_chars):
        text = exported.signatures["generate"](
            prompt=tf.constant([prompt]), num_chars=tf.constant([num_chars]),
            temperature=tf.constant([0.0]), seed=tf.constant([0]),
        )["text"]
        return text.numpy()[0].decode("utf-8")

    contenders = {
        "ours": lambda n: generator.generate(PROMPT, n, temperature=0.0),
        "ours, sampled (T=1)": lambda n: generator.generate(PROMPT, n, temperature=1.0, seed=1),
        "SavedModel generate": lambda n: saved_model_generate(PROMPT, n),
        "naive, seeds' loop": lambda n: naive_generate(
            lambda ids: model.predict(ids, verbose=0), vocabulary, PROMPT, n
        ),
        "naive, compiled": lambda n: naive_generate(compiled_model, vocabulary, PROMPT, n),
    }
    for generate in contenders.values():  # warm up: trace and compile every path
        generate(3)

    seconds = {name: [] for name in contenders}
    texts = {}
    names = list(contenders)
    for round_index in range(args.rounds):
        shift = round_index % len(names)
        for name in names[shift:] + names[:shift]:
            started = time.perf_counter()
            texts[name] = contenders[name](args.chars)
            seconds[name].append(time.perf_counter() - started)
            print(f"round {round_index + 1}: {name}: {seconds[name][-1]:.2f} s", file=sys.stderr)

    greedy = [name for name in names if "sampled" not in name]
    agree = all(texts[name] == texts["ours"] for name in greedy)
    rate = {name: args.chars / statistics.median(values) for name, values in seconds.items()}
    rows = [
        [name, rate[name], rate["ours"] / rate[name] if "naive" in name else None]
        for name in names
    ]
    print(
        f"{args.chars} characters, greedy unless noted, {config.model} {config.layers}x"
        f"{config.units}, vocabulary {vocabulary.size}, median of {args.rounds} rounds"
    )
    print(format_table(["generation", "chars/s", "ours / this"], rows))
    print(f"greedy texts identical across contenders: {'yes' if agree else 'NO'}")
    print(json.dumps({
        "chars": args.chars,
        "rounds": args.rounds,
        "chars_per_second": {name: round(value, 1) for name, value in rate.items()},
        "speedup_vs_seeds_loop": round(rate["ours"] / rate["naive, seeds' loop"], 1),
        "speedup_vs_compiled_naive": round(rate["ours"] / rate["naive, compiled"], 1),
        "greedy_texts_identical": agree,
    }))
    return 0 if agree else 1


if __name__ == "__main__":
    sys.exit(main())
