"""What enters the graph, what leaves it and what gets compacted: the write filter, contradictions,
compression and summaries, capacity, expiry and eviction."""
