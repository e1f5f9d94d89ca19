"""Tests of pipelines/settings.py: configs from flags and files, and their checks."""

import dataclasses
import json

import pytest

from seqlab.pipelines.errors import UsageError
from seqlab.pipelines.settings import TrainConfig, make_config, option, read_config_file


@dataclasses.dataclass
class ToyConfig(TrainConfig):
    epochs: int = option(5, "epochs")
    model: str = option("lstm", "model kind", ("lstm", "gru"))
    rate: float = option(0.5, "a rate")
    columns: list[str] | None = option(None, "columns")


# --- configs -----------------------------------------------------------------------------------


def test_flags_win_over_the_config_file_which_wins_over_defaults(tmp_path):
    path = tmp_path / "settings.toml"
    path.write_text('epochs = 7\nbatch-size = 4\nmodel = "gru"\nrate = 1\ncolumns = "a"\n')
    config = make_config(ToyConfig, read_config_file(path), {"epochs": 9}, origin=str(path))
    assert (config.epochs, config.batch_size, config.model) == (9, 4, "gru")
    assert config.rate == 1.0 and isinstance(config.rate, float)
    assert config.columns == ["a"]
    assert config.seed == 42  # untouched default


def test_json_config_files_are_read_too(tmp_path):
    path = tmp_path / "settings.json"
    path.write_text(json.dumps({"batch_size": 8, "columns": ["a", "b"]}))
    config = make_config(ToyConfig, read_config_file(path))
    assert config.batch_size == 8 and config.columns == ["a", "b"]


@pytest.mark.parametrize(
    "file_values,flags,message",
    [
        ({"epoch": 3}, {}, r"unknown setting 'epoch'; the settings are: data, out, epochs"),
        ({"epochs": "3"}, {}, r"epochs must be int\. Received: '3'"),
        ({"epochs": True}, {}, r"epochs must be int"),
        ({}, {"model": "cnn"}, r"model must be one of lstm, gru\. Received: 'cnn'"),
        ({}, {"epochs": 0}, r"epochs must be at least 1\. Received: epochs=0"),
    ],
)
def test_bad_settings_raise_usage_errors(file_values, flags, message):
    with pytest.raises(UsageError, match=message):
        make_config(ToyConfig, file_values, flags)


def test_unreadable_config_files_raise_usage_errors(tmp_path):
    with pytest.raises(UsageError, match="config file not found"):
        read_config_file(tmp_path / "none.toml")
    broken = tmp_path / "broken.json"
    broken.write_text("{epochs: 3")
    with pytest.raises(UsageError, match=r"broken\.json: not a valid json file"):
        read_config_file(broken)
