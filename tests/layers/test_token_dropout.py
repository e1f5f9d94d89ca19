import numpy as np
import pytest

from seqlab.layers import TokenDropout
from tests.conftest import run_layer_test


def test_token_dropout_replaces_real_tokens_by_unknown_only_while_training():
    ids = np.tile(np.array([[4, 7, 9, 12, 0, 0]], dtype="int64"), (500, 1))
    layer = TokenDropout(0.25, seed=3)
    np.testing.assert_array_equal(layer(ids).numpy(), ids)
    dropped = layer(ids, training=True).numpy()
    replaced = dropped != ids
    assert np.all(dropped[replaced] == 1) and not replaced[:, 4:].any()
    assert 0.2 < replaced[:, :4].mean() < 0.3


def test_layer_contract(tmp_path):
    ids = np.array([[4, 7, 0], [2, 0, 0]], dtype="int64")
    run_layer_test(TokenDropout, {"rate": 0.3, "unknown_id": 1, "seed": 2}, ids,
                   expected_output_shape=(2, 3), run_fit=False, tmp_path=tmp_path)


def test_bad_rate():
    with pytest.raises(ValueError, match="Received: rate=1.5"):
        TokenDropout(1.5)
