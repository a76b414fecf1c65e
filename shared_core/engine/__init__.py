"""The engine's operations (writes, recall, context, events, stats, persistence, lifecycle) over an
explicit state object; the facade `shared_core.atlas` composes them."""
