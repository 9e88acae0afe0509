"""``python -m trtsim`` is the ``trtsim`` command."""

import sys

from .cli import main

sys.exit(main())
