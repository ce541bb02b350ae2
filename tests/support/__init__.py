"""What the tests share: plain helpers (no fixtures; those live in tests/conftest.py).

Test files import from here and never from each other or from conftest.py."""
