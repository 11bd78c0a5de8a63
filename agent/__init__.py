"""Atelier's agent: the multi-turn loop, its service API and the interfaces other programs use."""

#: The release other programs see (MCP ``serverInfo.version``, the A2A card's ``version``).
__version__ = "0.9.0"
