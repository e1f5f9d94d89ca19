"""One module per task on one shared run lifecycle (`seqlab.pipelines.lifecycle`).

A task module defines a `lifecycle.Pipeline` subclass (its config, data, model from
`seqlab.models`, scoring, files and serving signature) and `TASK = PIPELINE.task()`; its
settings and help (`CARD`) are in `configs/<task>.py`, which imports no TensorFlow. `TASKS`
maps each task's command-line name to its module and a one-line summary; adding a task is those
two modules plus one line here. Modules are imported only when their task is used, and
`seqlab <task> [<action>] --help` imports only the task's `configs` module, so help answers
without loading TensorFlow.
"""

import importlib

TASKS = {
    "timeseries": ("seqlab.pipelines.timeseries", "forecast numeric series (CSV, or the embedded sunspots)"),
    "charrnn": ("seqlab.pipelines.charrnn", "generate text with a character-level GRU/LSTM language model"),
    "sentiment": ("seqlab.pipelines.sentiment", "classify texts (CSV/TSV, line files, class folders, or a sample)"),
    "ner": ("seqlab.pipelines.ner", "tag named entities in CoNLL files (BiLSTM, softmax or CRF), or a sample"),
    "translate": ("seqlab.pipelines.translate", "translate sentences (GRU + attention or Transformer, beam search, BLEU)"),
}


CONFIGS_PACKAGE = "seqlab.pipelines.configs"


def load_task(name):
    """The `Task` object of the task called `name` (imports its module, and TensorFlow)."""
    module_name, _ = TASKS[name]
    return importlib.import_module(module_name).TASK


def load_card(name):
    """The `settings.TaskCard` of the task called `name`: its settings and help, without
    importing TensorFlow."""
    if name not in TASKS:
        raise KeyError(name)
    return importlib.import_module(f"{CONFIGS_PACKAGE}.{name}").CARD
