"""Test support: a scripted OpenAI-compatible model server and helpers to run servers on 127.0.0.1."""
