"""Running turns: cancellation, the embedded runner."""
