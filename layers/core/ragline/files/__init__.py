"""Reading uploaded files: what every parser shares (decoding, refusals), below ingestion and tables."""
