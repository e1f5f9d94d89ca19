"""setup.cfg installs every package of the checkout (an editable install would hide one that is
missing: a fresh `pip install .` then fails to import it)."""

import configparser
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOT_INSTALLED = {"tests", "benchmarks", "docs", "build", "dist"}


def package_folders(root):
    """The packages `pip install .` of the checkout at `root` should install: every folder with
    an `__init__.py`, but the tests, benchmarks and docs, dot-folders and virtual environments."""
    found = {"seqlab"}
    for init in root.rglob("__init__.py"):
        parts = init.parent.relative_to(root).parts
        if not parts or parts[0] in NOT_INSTALLED or any(p.startswith(".") for p in parts):
            continue
        # A virtual environment kept in the checkout (`python3 -m venv venv`) is no package.
        if any((root.joinpath(*parts[:end]) / "pyvenv.cfg").is_file()
               for end in range(1, len(parts) + 1)):
            continue
        found.add(".".join(("seqlab", *parts)))
    return found


def test_every_package_folder_is_listed_in_setup_cfg():
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    listed = set(config["options"]["packages"].split())
    found = package_folders(ROOT)
    assert found - listed == set(), f"missing from setup.cfg's packages: {sorted(found - listed)}"
    assert listed - found == set(), f"listed but not in the checkout: {sorted(listed - found)}"


def test_a_virtual_environment_in_the_checkout_is_no_package(tmp_path):
    # `python3 -m venv venv` beside the code failed the test above with 90 site-packages.
    for folder in ("layers", "venv/lib/python3.11/site-packages/pip", "tests/data"):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "__init__.py").write_text("")
    (tmp_path / "venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    assert package_folders(tmp_path) == {"seqlab", "seqlab.layers"}
