"""Applications on the facade: the MCP server, the demo and the graph view."""
