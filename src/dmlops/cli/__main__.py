"""`python -m dmlops.cli`."""

import sys

from . import main

sys.exit(main())
