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
layout `seqlab sentiment train --data FOLDER` reads as given splits. OUT_FOLDER must be new,
empty, or an earlier build (it holds `BUILD_MARKER`), which is replaced whole: a document of an
earlier build left among the new ones would bring back the overlap the split avoids.

    python benchmarks/long_documents.py build OUT_FOLDER [--source FOLDER]
    python benchmarks/long_documents.py run [--long FOLDER] [--polarity FOLDER] [--only ...]
        [-- extra train flags]

`run` trains the default command (`seqlab sentiment train --data ...`, nothing else but the
extra flags) on each data set and prints its summary, then one JSON line of figures per data
set (test accuracy, the model kept, every auto candidate's validation and test figures, the
length and cut, the time). The runs, and the documents built without `--long`, are in a
temporary folder deleted at exit: the summary leaves out its run directory. `--polarity`
(default: `sentence-polarity`) is both the polarity data set and, without `--long`, the
snippets the long documents are built from.

This is not the real long-review figure: that needs the 2,000-review set, not measured here.
"""

import argparse
import json
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

# seqlab first: its import hook keeps TensorFlow's load notices (which ignore
# TF_CPP_MIN_LOG_LEVEL) and C++ log off the terminal, as the command line does. Setting the
# variable here, as this script did, passed for the user's own level and showed them.
import seqlab  # noqa: E402,F401

from seqlab.data.errors import DataError  # noqa: E402
from seqlab.pipelines.errors import UsageError  # noqa: E402

POLARITY = "sentence-polarity"
# The file `build` writes last into its folder: a folder holding it is a whole build of this
# script, which a later build replaces; any other non-empty folder is refused.
BUILD_MARKER = ".long_documents-build.json"
# The fewest documents `build` makes: one test document of each class (10 % of them, rounded)
# and enough training documents of each class for the run's validation split.
MIN_DOCUMENTS = 20


def polarity_folder(parser, value, flag):
    """The folder of `rt-polarity.pos` and `.neg` that `value` stands for: a folder, or the
    registered name `sentence-polarity` (downloaded on first use). Anything else, or a failed
    download, is a one-line `parser.error` rather than a traceback from the reader."""
    from seqlab.data.datasets import resolve_path

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

    `out` must be new, empty, or a folder this function built (it holds `BUILD_MARKER`),
    which is replaced whole: the documents are written into a temporary sibling that then
    takes its place, so no document of an earlier build (another `documents`, another seed)
    stays among them, which would bring validation or test sentences back into training.

    Raises:
        DataError: `out` is a file or holds files this function did not write, or the
            snippets are too few to split.
    """
    out = Path(out)
    refusal = refuse_out(out)
    if refusal:
        raise DataError(refusal, path=out)
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.building-", dir=out.parent))
    try:
        write_documents(staging, source, documents, words, majority, test_share, val_share,
                        seed, split_seed)
        (staging / BUILD_MARKER).write_text(json.dumps({
            "documents": documents, "words": words, "majority": list(majority),
            "seed": seed}) + "\n", encoding="utf-8")
        if out.exists():  # empty, or an earlier build: moved aside, then deleted
            previous = Path(tempfile.mkdtemp(prefix=f".{out.name}.previous-", dir=out.parent))
            out.rename(previous / out.name)
            staging.rename(out)
            shutil.rmtree(previous)
        else:
            staging.rename(out)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return out


def refuse_out(out):
    """Why `build` may not write `out`, or None: a file (or a folder under one), or a
    non-empty folder without `BUILD_MARKER` (files `build` did not write, never deleted)."""
    for folder in (out, *out.parents):
        if folder.exists():
            if not folder.is_dir():
                where = "a file" if folder == out else f"under {folder}, a file"
                return f"{where}; expected a folder to build the documents in"
            break
    if out.is_dir() and any(out.iterdir()) and not (out / BUILD_MARKER).is_file():
        return ("not empty, and not a folder build wrote (no " + BUILD_MARKER + "); expected "
                "a new or empty folder, or an earlier build, which is replaced whole")
    return None


def write_documents(out, source, documents, words, majority, test_share, val_share, seed,
                    split_seed):
    """The documents of `build`, written into the empty folder `out`."""
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
    run_parser.add_argument("--only", nargs="+", choices=("long", "polarity"),
                            default=("long", "polarity"))
    args = parser.parse_args(argv)
    if args.action == "build":
        return build_action(build_parser, args)
    if args.long is not None and not (Path(args.long) / "train").is_dir():
        run_parser.error(f"--long {args.long}: "
                         + ("not a folder build wrote (no train/ in it)"
                            if Path(args.long).is_dir() else "no such folder"))
    polarity = None
    if "polarity" in args.only or not args.long:
        polarity = polarity_folder(run_parser, args.polarity, "--polarity")
    with tempfile.TemporaryDirectory() as scratch:
        # Named as given, never by the temporary folder (deleted at exit) the runs are in.
        names = {"long": args.long or f"long documents built from {polarity} (deleted at exit)",
                 "polarity": str(polarity)}
        for name in args.only:
            data = polarity
            if name == "long":
                data = args.long or build(Path(scratch) / "long", polarity)
            try:
                figures = run_data(data, extra, Path(scratch) / f"run-{name}")
            except (DataError, UsageError) as error:
                run_parser.error(f"{name}: {error}")
            print(figures.pop("summary").split("\nrun directory: ")[0])
            print(json.dumps({"set": name, **figures, "data": names[name]}), flush=True)


def build_action(parser, args):
    """`build`: its settings and OUT checked in one line each, then the folder built."""
    if args.words < 1:  # 0 wrote empty documents
        parser.error(f"--words must be at least 1, not {args.words}")
    if args.documents < MIN_DOCUMENTS:  # too few to split: a DataError traceback
        parser.error(f"--documents must be at least {MIN_DOCUMENTS} (one test document of "
                     f"each class), not {args.documents}")
    refusal = refuse_out(Path(args.out))
    if refusal:
        parser.error(f"{args.out}: {refusal}")
    source = polarity_folder(parser, args.source, "--source")
    try:
        print(build(args.out, source, words=args.words, documents=args.documents,
                    majority=tuple(args.majority), seed=args.seed))
    except DataError as error:
        parser.error(str(error))

if __name__ == "__main__":
    main()
