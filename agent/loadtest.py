"""``python -m agent.loadtest``: the command line keeps its name; the code lives in :mod:`agent.runs.loadtest`."""

import sys

from agent.runs.loadtest import main

if __name__ == "__main__":
    sys.exit(main())
