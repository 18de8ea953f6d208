"""The people plan kind: its run, checks, text and writer."""
