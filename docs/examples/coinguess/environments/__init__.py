"""Environments of the example package."""
