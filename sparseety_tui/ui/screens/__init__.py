"""Screens: main (request table), detail, diagnostics, help."""
