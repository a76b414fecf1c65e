"""Values: errors, the memory model, the configuration and clocks. Imports nothing of the package above it."""
