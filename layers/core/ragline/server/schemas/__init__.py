"""The HTTP request bodies of the routes: one module per router of server/routes, of the same name."""
