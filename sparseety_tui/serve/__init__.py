"""`sparseety-tui serve`: the followed logs over a loopback HTTP API and a Prometheus exporter.

Beside ``ui``: it follows logs with the same ingest as ``tail`` (``ingest.worker``) and
answers with the same core functions as ``extract`` and ``summary --json``; it never
imports Textual. ``settings`` is import-light (the CLI checks arguments with it before the
ASGI stack loads); ``app`` builds the Starlette application, ``metrics`` the exporter.
"""
