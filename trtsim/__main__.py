"""``python -m trtsim`` is the ``trtsim`` command."""

import sys

from .app.cli import main

sys.exit(main())
