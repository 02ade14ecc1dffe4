"""The HTTP API's routers, one module per resource."""
