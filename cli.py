"""The `seqlab` command line: argument parsing and dispatch to `pipelines/`.

Usage: seqlab <task> <action> [options]   (or: python cli.py ...)
"""

import argparse
import sys
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _dist_version

PROG = "seqlab"


def package_version():
    try:
        return _dist_version("seqlab")
    except PackageNotFoundError:
        return "0+unknown (not installed)"


def build_parser():
    parser = argparse.ArgumentParser(
        prog=PROG,
        description=(
            "Sequence modelling on Keras 3: recurrent and Transformer layers "
            "and five task pipelines."
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--version", action="version", version=f"{PROG} {package_version()}"
    )
    parser.add_subparsers(dest="task", metavar="<task>")
    return parser


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.task is None:
        parser.print_help()
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
