"""``python -m sandbox.bench``: the same as ``sandbox bench``."""

import sys

from . import main

sys.exit(main())
