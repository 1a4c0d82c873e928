"""Changing files as an answer asks: whole files and edits checked and applied (`changes`), a Python
fragment merged into its module (`py_merge`). Below the plan tools (edits) and the builder's rounds (whole files)."""
