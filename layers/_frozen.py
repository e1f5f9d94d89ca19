"""Layers frozen inside a seqlab model or composite layer stay frozen through a `.keras` file.

Keras's file keeps a subclassed model's (or layer's) constructor arguments and its weights,
not the `trainable` flag of the layers its constructor builds. A run whose pretrained word
vectors were frozen (`--freeze-embeddings`) came back from `keras.saving.load_model` with them
trainable: fine-tuning the loaded model trained them, and the optimizer state saved with the
file (slots for the trainable weights only) no longer matched and was skipped with a warning.
The same held for a frozen token embedding inside a `TokenAndPositionEmbedding` of a user's
own functional model.
"""

import keras

CONFIG_KEY = "frozen_layers"


def named_layers(layer):
    """`(path, layer)` of every layer inside `layer`, by attribute names: `"word_embedding"`,
    `"members.0.embedding"`, `"embedding.token_embedding"`. The paths come from the code, not
    from Keras's layer names (whose counters differ from one process to the next)."""
    seen = {id(layer)}

    def walk(owner, prefix):
        for name, value in vars(owner).items():
            if name.startswith("_"):
                continue
            items = ([(f"{prefix}{name}.{i}", v) for i, v in enumerate(value)]
                     if isinstance(value, (list, tuple)) else [(f"{prefix}{name}", value)])
            for path, item in items:
                if isinstance(item, keras.layers.Layer) and id(item) not in seen:
                    seen.add(id(item))
                    yield path, item
                    yield from walk(item, f"{path}.")

    yield from walk(layer, "")


class KeepsFrozenLayers:
    """Mixin of seqlab's subclassed models and composite layers (listed before `keras.Model`
    or `keras.layers.Layer`): `get_config` names the layers inside that are not trainable
    (`named_layers`), and `from_config` makes them not trainable again in what it rebuilds.
    A layer built in `build` rather than in the constructor (the transformer layers' and
    `TokenAndPositionEmbedding`'s) is frozen right after the build (Keras's `_post_build`
    hook), which loading runs before it reads the weights. A config without frozen layers
    is unchanged (files saved before this kept none)."""

    def get_config(self):
        config = super().get_config()
        frozen = sorted(path for path, layer in named_layers(self) if not layer.trainable)
        if frozen:
            config[CONFIG_KEY] = frozen
        return config

    @classmethod
    def from_config(cls, config, *args, **kwargs):
        # `keras.Model.from_config` takes `custom_objects` too; `Layer.from_config` does not.
        config = dict(config)
        frozen = config.pop(CONFIG_KEY, [])
        if not isinstance(frozen, list) or not all(isinstance(p, str) for p in frozen):
            raise ValueError(f"{cls.__name__}: `{CONFIG_KEY}` in the saved config must be a "
                             f"list of layer paths. Received: {frozen!r}")
        rebuilt = super().from_config(config, *args, **kwargs)
        rebuilt._frozen_pending = tuple(frozen)
        rebuilt._apply_frozen(final=rebuilt.built)
        return rebuilt

    def _post_build(self):
        super()._post_build()
        self._apply_frozen(final=True)

    def _apply_frozen(self, final):
        """Freezes the pending layers that exist by now; with `final` (built: no layer is
        made later), refuses any that do not."""
        pending = getattr(self, "_frozen_pending", ())
        if not pending:
            return
        layers = dict(named_layers(self))
        for path in pending:
            if path in layers:
                layers[path].trainable = False
        self._frozen_pending = tuple(path for path in pending if path not in layers)
        if final and self._frozen_pending:
            raise ValueError(
                f"{type(self).__name__}: the saved config names frozen layers that the one "
                f"rebuilt from it does not have: {', '.join(self._frozen_pending)}")
