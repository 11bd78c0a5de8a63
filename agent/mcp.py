"""``python -m agent.mcp``: the command line keeps its name; the code lives in :mod:`agent.interfaces.mcp`."""

import sys

from agent.interfaces.mcp import main

if __name__ == "__main__":
    sys.exit(main())
