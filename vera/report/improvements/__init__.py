"""The improvement report: which rubric questions each chatbot failed, with examples."""
