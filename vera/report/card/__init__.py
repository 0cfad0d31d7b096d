"""The score card: built from a run, stored as card.json, rendered as Markdown, HTML, terminal text and plots."""
