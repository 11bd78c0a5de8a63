"""``python -m agent.cli``: the command line keeps its name; the code lives in :mod:`agent.interfaces.cli`."""

import sys

from agent.interfaces.cli import main

if __name__ == "__main__":
    sys.exit(main())
