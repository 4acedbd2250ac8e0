"""Run the dmlops benchmark suite (same as `dmlops bench`)."""

import sys

from dmlops.bench import main

if __name__ == "__main__":
    sys.exit(main())
