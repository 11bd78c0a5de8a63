"""``python -m agent.synthesize``: the command line keeps its name; the code lives in :mod:`agent.runs.synthesize`."""

import sys

from agent.runs.synthesize import main

if __name__ == "__main__":
    sys.exit(main())
