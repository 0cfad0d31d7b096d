"""Pieces every report is built from: number formats, tables, terminal drawing, the ratings frames, a run's outcome and checks, conversation pages."""
