"""The real-engine test (tests/e2e/run.py) and its fast checks."""
