"""tf.data builders and file readers for seqlab's tasks. Imports no model code."""

from seqlab.data.errors import DataError

__all__ = ["DataError"]
