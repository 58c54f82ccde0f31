"""Ingestion: the live worker thread and its snapshots, batch and parallel readers, the demo
replayer. Drives core; imported by the UI and the CLI."""
