"""seqlab's task models, each a `keras.Model` you can `compile` and `fit` in your own code.

Every model takes plain hyperparameters in its constructor, returns them from `get_config`,
holds its parts as attributes and is registered for `.keras` saving under the package
"seqlab". The samplers that turn next-token logits into sequences (greedy, random / top-k,
beam) live beside them in `seqlab.models.samplers`.

Imports `seqlab.layers`; never `seqlab.pipelines` or `seqlab.data`.
"""

from seqlab.models.samplers import BeamSampler, GreedySampler, RandomSampler, Sampler, get_sampler

__all__ = [
    "BeamSampler",
    "GreedySampler",
    "RandomSampler",
    "Sampler",
    "get_sampler",
]
