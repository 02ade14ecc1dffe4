"""Ingestion: parse, chunk, embed, index."""
