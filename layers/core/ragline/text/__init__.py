"""Text utilities below every other package: word cutting and the stop-word lists (imports nothing of ragline)."""
