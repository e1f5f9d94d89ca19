"""Sentiment on long documents built from sentence polarity, and on sentence polarity itself.

The full-length movie-review set (Pang and Lee's 2,000 reviews) and IMDB cannot be downloaded
here, so `build` makes a stand-in of the same shape from the sentence-polarity snippets (the
registered data set `sentence-polarity`, downloaded on first use, or `--source FOLDER` holding
`rt-polarity.pos` and `rt-polarity.neg`): documents of about 700 words (sentences added until the
document reaches `--words`), each a mixture of positive and negative snippets in which the
document's own class holds a share drawn uniformly from `--majority` (default 0.6 to 0.8): the
label signal is spread through the whole document and no part of it decides alone. The snippets
are split first (seeded, 80 / 10 / 10 %) and training, validation and test documents draw from
separate parts: the training documents that the pipeline's seeded split (seed 42, validation
10 %) will hold out for validation are found by running that split on the folder, so no
validation or test sentence is seen in training. Written as class folders,
`train/{pos,neg}/*.txt` and `test/{pos,neg}/*.txt` (1,800 and 200 documents by default), the
layout `seqlab sentiment train --data FOLDER` reads as given splits.

    python benchmarks/long_documents.py build OUT_FOLDER [--source FOLDER]
    python benchmarks/long_documents.py run [--long FOLDER] [--polarity FOLDER] [--only ...]
        [-- extra train flags]

`run` trains the default command (`seqlab sentiment train --data ...`, nothing else but the
extra flags) on each data set and prints its summary, then one JSON line of figures per data
set (test accuracy, the model kept, every auto candidate's validation and test figures, the
length and cut, the time). `--polarity` (default: `sentence-polarity`) is both the polarity
data set and, without `--long`, the snippets the long documents are built from.

This is not the real long-review figure: that needs the 2,000-review set, not measured here.
"""

import argparse
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

POLARITY = "sentence-polarity"


def polarity_folder(parser, value, flag):
    """The folder of `rt-polarity.pos` and `.neg` that `value` stands for: a folder, or the
    registered name `sentence-polarity` (downloaded on first use). Anything else, or a failed
    download, is a one-line `parser.error` rather than a traceback from the reader."""
    from seqlab.data.datasets import resolve_path
    from seqlab.data.errors import DataError

    try:
        folder = resolve_path(value)
    except DataError as error:
        parser.error(f"{flag} {value}: {error}")
    if not folder.is_dir():
        parser.error(f"{flag} {value}: no such folder, nor a registered name; expected "
                     f"{POLARITY} or a folder holding rt-polarity.pos and rt-polarity.neg")
    missing = [name for name in ("rt-polarity.pos", "rt-polarity.neg")
               if not (folder / name).is_file()]
    if missing:
        parser.error(f"{flag} {value}: no {' or '.join(missing)} there; expected the registered "
                     f"name {POLARITY} or a folder holding rt-polarity.pos and rt-polarity.neg")
    return folder


def read_snippets(folder):
    """`{"pos": [...], "neg": [...]}` of the polarity snippets in `folder`."""
    return {label: [line.strip() for line in
                    (Path(folder) / f"rt-polarity.{label}").read_text(encoding="utf-8")
                    .splitlines() if line.strip()]
            for label in ("pos", "neg")}


def build_document(snippets, label, words, majority, rng):
    """One document of class `label` ("pos" or "neg"), `words` words or a little more, its
    class's snippets a share drawn from `majority` (low, high) of its sentences."""
    other = "neg" if label == "pos" else "pos"
    share = rng.uniform(*majority)
    sentences, length = [], 0
    while length < words:
        sentence = rng.choice(snippets[label if rng.random() < share else other])
        sentences.append(sentence)
        length += len(sentence.split())
    return " ".join(sentences)


def build(out, source, documents=2000, words=700, majority=(0.6, 0.8),
          test_share=0.1, val_share=0.1, seed=0, split_seed=42):
    """Writes the long-document folder (see the module docstring) from the snippets in the
    folder `source`; returns its path.

    The training documents that `seqlab sentiment train` (`--val-fraction val_share`,
    `--seed split_seed`) will hold out for validation are found first, by running its split
    on the folder with placeholder texts, and then written from their own snippets.
    """
    from seqlab.data.classification import load_training_data, make_splits

    rng = random.Random(seed)
    snippets = read_snippets(source)
    pools = {"train": {}, "val": {}, "test": {}}
    for label, lines in snippets.items():
        lines = list(lines)
        rng.shuffle(lines)
        test_cut, val_cut = int(len(lines) * test_share), int(len(lines) * (test_share + val_share))
        pools["test"][label] = lines[:test_cut]
        pools["val"][label] = lines[test_cut:val_cut]
        pools["train"][label] = lines[val_cut:]
    out = Path(out)
    test_documents = int(round(documents * test_share))
    per_class = {"train": (documents - test_documents) // 2, "test": test_documents // 2}
    paths = {split: [(label, out / split / label / f"{index:05d}.txt")
                     for label in ("pos", "neg") for index in range(per_class[split])]
             for split in per_class}
    for _, path in paths["train"]:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("placeholder\n", encoding="utf-8")
    splits, _ = make_splits(load_training_data(out / "train"), test_share, val_share,
                            split_seed)
    held_out = {Path(file).resolve() for file, _ in splits["val"].origins}
    targets = {"test": [(label, path, "test") for label, path in paths["test"]],
               "train": [(label, path, "val" if path.resolve() in held_out else "train")
                         for label, path in paths["train"]]}
    for split in targets.values():
        for label, path, pool in split:
            path.parent.mkdir(parents=True, exist_ok=True)
            text = build_document(pools[pool], label, words, majority, rng)
            path.write_text(text + "\n", encoding="utf-8")
    return out


def run_data(data, extra, out):
    """Trains the default command on `data`; returns the figures."""
    from seqlab.cli import train_config
    from seqlab.pipelines.sentiment import TASK

    config = train_config("sentiment", ["--data", str(data), *extra, "--out", str(out)])
    started = time.perf_counter()
    result = TASK.train(config)
    seconds = time.perf_counter() - started
    metrics = result.metrics
    return {"data": str(data), "accuracy": metrics["model"]["accuracy"],
            "model": metrics.get("model_kind", config.model), "auto": metrics.get("auto"),
            "truncation": metrics.get("truncation"), "seconds": round(seconds, 1),
            "epochs": metrics["epochs_run"], "summary": result.summary}


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    extra = []
    if "--" in argv:
        extra = argv[argv.index("--") + 1:]
        argv = argv[:argv.index("--")]
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    actions = parser.add_subparsers(dest="action", required=True)
    build_parser = actions.add_parser("build")
    build_parser.add_argument("out")
    build_parser.add_argument("--source", default=POLARITY,
                              help="the snippets: a folder holding rt-polarity.pos and "
                              "rt-polarity.neg, or a registered name (default: %(default)s)")
    build_parser.add_argument("--words", type=int, default=700)
    build_parser.add_argument("--documents", type=int, default=2000)
    build_parser.add_argument("--majority", type=float, nargs=2, default=(0.6, 0.8))
    build_parser.add_argument("--seed", type=int, default=0)
    run_parser = actions.add_parser(
        "run", epilog="%(prog)s [options] -- <extra seqlab train flags>: the flags after a lone "
        "`--` are added to every `seqlab sentiment train` it runs.")
    run_parser.add_argument("--long", default=None,
                            help="a folder `build` wrote (default: built in a temporary one "
                            "from the --polarity snippets)")
    run_parser.add_argument("--polarity", default=POLARITY,
                            help="a folder holding rt-polarity.pos and rt-polarity.neg, or a "
                            "registered name (default: %(default)s)")
    run_parser.add_argument("--only", nargs="*", choices=("long", "polarity"),
                            default=("long", "polarity"))
    args = parser.parse_args(argv)
    if args.action == "build":
        source = polarity_folder(build_parser, args.source, "--source")
        print(build(args.out, source, words=args.words, documents=args.documents,
                    majority=tuple(args.majority), seed=args.seed))
        return
    polarity = None
    if "polarity" in args.only or not args.long:
        polarity = polarity_folder(run_parser, args.polarity, "--polarity")
    with tempfile.TemporaryDirectory() as scratch:
        long_folder = args.long or build(Path(scratch) / "long", polarity)
        for name in args.only:
            data = long_folder if name == "long" else polarity
            figures = run_data(data, extra, Path(scratch) / f"run-{name}")
            print(figures.pop("summary"))
            print(json.dumps({"set": name, **figures}), flush=True)


if __name__ == "__main__":
    main()
