"""Model seams: embedders, token counters and LLM calls (each a protocol with offline defaults)."""
