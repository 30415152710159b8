"""``python -m fpforge``: the same as the ``fpforge`` console script."""

import sys

from .cli import main

sys.exit(main())
