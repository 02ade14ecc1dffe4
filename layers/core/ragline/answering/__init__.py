"""The extractive answerer's reading: sentences of the passages, their terms, and which one answers."""
