"""Pure formulas: decay and weights, scoring and fusion, token budgets, time cues, metadata filters.

Functions of values only; they import `shared_core.values` and nothing else of the package.
"""
