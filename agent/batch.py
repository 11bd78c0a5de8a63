"""``python -m agent.batch``: the command line keeps its name; the code lives in :mod:`agent.runs.batch`."""

import sys

from agent.runs.batch import main

if __name__ == "__main__":
    sys.exit(main())
