"""seqlab's task models, each a `keras.Model` you can `compile` and `fit` in your own code.

Every model takes plain hyperparameters in its constructor, returns them from `get_config`,
holds its parts as attributes and is registered for `.keras` saving under the package
"seqlab". The samplers that turn next-token logits into sequences (greedy, random / top-k,
beam) live beside them in `seqlab.models.samplers`; `TextGenerator` and `TextTranslator` wrap
the character model and the translator with their vocabularies for text in, text out.

Imports `seqlab.layers`; never `seqlab.pipelines` or `seqlab.data`. In a worker process that
seqlab spawns for classical fits (`seqlab._worker`) it imports no model: the worker needs only
the NumPy module `seqlab.models.forecasting.metrics`, and the models would load TensorFlow.
"""

from seqlab import _worker

if not _worker.started():
    from seqlab.models.char_lm import CharLanguageModel, TextGenerator
    from seqlab.models.forecaster import AutoForecaster, Forecaster
    from seqlab.models.global_forecaster import (
        GlobalForecaster,
        last_windows,
        panel_training_dataset,
    )
    from seqlab.models.samplers import (
        BeamSampler,
        GreedySampler,
        RandomSampler,
        Sampler,
        get_sampler,
    )
    from seqlab.models.tagger import SequenceTagger, bio_transition_constraints
    from seqlab.models.text_classifier import (
        AutoTextClassifier,
        TextClassifier,
        TextClassifierEnsemble,
    )
    from seqlab.models.translator import TextTranslator, Translator

__all__ = [
    "AutoForecaster",
    "AutoTextClassifier",
    "BeamSampler",
    "CharLanguageModel",
    "Forecaster",
    "GlobalForecaster",
    "GreedySampler",
    "RandomSampler",
    "Sampler",
    "SequenceTagger",
    "TextClassifier",
    "TextClassifierEnsemble",
    "TextGenerator",
    "TextTranslator",
    "Translator",
    "bio_transition_constraints",
    "get_sampler",
    "last_windows",
    "panel_training_dataset",
]
