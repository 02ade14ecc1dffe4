"""The pipeline's stages, one module per stage of the reference design, and the orchestrator that runs them."""
