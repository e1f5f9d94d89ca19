"""seqlab: sequence modelling on Keras 3.

Recurrent (SimpleRNN, LSTM, GRU) and Transformer layers that implement the textbook equations
(`seqlab.layers`), tf.data builders and readers (`seqlab.data`), task models usable in your own
`model.fit` code (`seqlab.models`), and one pipeline per task behind the `seqlab` command line
(`seqlab.pipelines`, `seqlab.cli`).

Importing `seqlab` is cheap: TensorFlow loads only when a subpackage that needs it is imported.
It keeps TensorFlow's C++ log (load notices, `failed call to cuInit`) off the terminal as the
command line does, unless `TF_CPP_MIN_LOG_LEVEL` is set (`seqlab._tf_log`); import seqlab
before TensorFlow or Keras for that.
"""

from importlib.metadata import PackageNotFoundError, version

from seqlab import _tf_log

_tf_log.quiet_on_import()

try:
    __version__ = version("seqlab")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0+unknown"
