"""Storage: the contract every backend serves, and its implementations (`memory`, `falkordb`)."""
