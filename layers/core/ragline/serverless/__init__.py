"""The AWS runtime: the generated state machine, the per-stage step, DynamoDB and S3 adapters."""
