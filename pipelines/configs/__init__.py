"""Each task's settings and command-line card, without TensorFlow.

`configs/<task>.py` holds the task's `TrainConfig` subclass, the dataclasses of its `evaluate` and
`predict` options and `CARD` (a `settings.TaskCard`: name, help, examples, aliases). The command
line builds `seqlab <task> [<action>] --help` from these alone; `pipelines/<task>.py` imports them
(so `from seqlab.pipelines.<task> import <Task>Config` works too). Choices that TensorFlow
modules also define (model kinds, fill methods) are written here again, and
`tests/test_help.py` checks that both agree: `models/` and `data/` never import `pipelines/`.
"""
