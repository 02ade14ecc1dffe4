#!/bin/sh
# stream_reader entry point: the AWS Lambda Web Adapter (AWS_LAMBDA_EXEC_WRAPPER=/opt/bootstrap) runs this
# script, waits for uvicorn on $PORT, then forwards each invocation to it as HTTP and streams the reply.
# A process started this way does not get the Lambda Python runtime's paths, so the layers' packages
# (/opt/python: ragline and its dependencies) and the runtime's own (boto3) are put on PYTHONPATH here.
PATH="${PATH}:${LAMBDA_TASK_ROOT:-.}/bin"
PYTHONPATH="${LAMBDA_TASK_ROOT:-.}:/opt/python${PYTHONPATH:+:${PYTHONPATH}}:${LAMBDA_RUNTIME_DIR:-/var/runtime}"
export PATH PYTHONPATH
exec python -m uvicorn app:app --host 0.0.0.0 --port "${PORT:-8080}"
