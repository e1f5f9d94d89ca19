"""setup.cfg installs every package of the checkout (an editable install would hide one that is
missing: a fresh `pip install .` then fails to import it)."""

import configparser
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOT_INSTALLED = {"tests", "benchmarks", "docs", "build", "dist"}


def test_every_package_folder_is_listed_in_setup_cfg():
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    listed = set(config["options"]["packages"].split())
    found = {"seqlab"}
    for init in ROOT.rglob("__init__.py"):
        parts = init.parent.relative_to(ROOT).parts
        if not parts or parts[0] in NOT_INSTALLED or any(p.startswith(".") for p in parts):
            continue
        found.add(".".join(("seqlab", *parts)))
    assert found - listed == set(), f"missing from setup.cfg's packages: {sorted(found - listed)}"
    assert listed - found == set(), f"listed but not in the checkout: {sorted(listed - found)}"
