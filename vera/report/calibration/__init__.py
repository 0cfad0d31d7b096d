"""Judges against humans: calibrated scores, agreement, ratings import and plans, simulated-user checks against clinicians."""
