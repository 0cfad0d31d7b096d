"""A run as files for other tools: the results table, the reference's results.csv, every call."""
