"""One module per task on one shared run lifecycle (`seqlab.pipelines.lifecycle`).

A task module defines a `lifecycle.Pipeline` subclass (its config, data, model from
`seqlab.models`, scoring, files and serving signature) and `TASK = PIPELINE.task()`. `TASKS`
maps each task's command-line name to its module and a one-line summary; adding a task is that
module plus one line here. Modules are imported only when their task is used, so
`seqlab --help` stays fast.
"""

import importlib

TASKS = {
    "timeseries": ("seqlab.pipelines.timeseries", "forecast numeric series (CSV, or the embedded sunspots)"),
    "charrnn": ("seqlab.pipelines.charrnn", "generate text with a character-level GRU/LSTM language model"),
    "sentiment": ("seqlab.pipelines.sentiment", "classify texts (CSV/TSV, line files, class folders, or a sample)"),
    "ner": ("seqlab.pipelines.ner", "tag named entities in CoNLL files (BiLSTM, softmax or CRF), or a sample"),
    "translate": ("seqlab.pipelines.translate", "translate sentences (GRU + attention or Transformer, beam search, BLEU)"),
}


def load_task(name):
    """The `Task` object of the task called `name`."""
    module_name, _ = TASKS[name]
    return importlib.import_module(module_name).TASK
