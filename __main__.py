"""`python -m seqlab ...` runs the command line."""

import sys

from seqlab.cli import main

sys.exit(main())
