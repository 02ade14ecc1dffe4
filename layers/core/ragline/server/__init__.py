"""The HTTP API (FastAPI): the same routes in the embedded server and behind Lambda."""
