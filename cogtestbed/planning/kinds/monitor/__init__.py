"""The monitor plan kind: its run, checks, text and writer."""
