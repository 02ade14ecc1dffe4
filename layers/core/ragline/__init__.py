"""ragline: knowledge-base question answering as an event-driven RAG pipeline.

The same library runs embedded (one process, SQLite, local models) and on AWS (one Lambda per stage,
Step Functions, DynamoDB). See SPEC.md in the project for the contracts.
"""

__version__ = "0.1.0"
