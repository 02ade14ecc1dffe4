"""Imported by Python at start-up in every function process the tests run (this directory is on their
PYTHONPATH): the grant checker wraps every AWS client before the function's own code creates one.

It is loaded by file path, so nothing of ``tests`` becomes importable by the function.
"""

import importlib.util
import os
import sys

_config = os.environ.get("SANDBOX_GRANTS_CONFIG")
if _config:
    _path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "grants.py")
    _spec = importlib.util.spec_from_file_location("_sandbox_grants", _path)
    assert _spec is not None
    assert _spec.loader is not None
    _grants = importlib.util.module_from_spec(_spec)
    sys.modules[_spec.name] = _grants
    _spec.loader.exec_module(_grants)
    _grants.install(_config)

# A test that controls how long reading a file takes (tests/support/extraction_gate.py).
_gate = os.environ.get("SANDBOX_EXTRACTION_GATE")
if _gate:
    _path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "extraction_gate.py")
    _spec = importlib.util.spec_from_file_location("_sandbox_extraction_gate", _path)
    assert _spec is not None
    assert _spec.loader is not None
    _gate_module = importlib.util.module_from_spec(_spec)
    sys.modules[_spec.name] = _gate_module
    _spec.loader.exec_module(_gate_module)
    _gate_module.install(_gate)
