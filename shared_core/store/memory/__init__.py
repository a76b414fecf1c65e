"""The in-process store: a partition per namespace with its graph, vector, keyword, session and time indexes."""
