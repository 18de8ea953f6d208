"""The mix plan kind: its run, checks, text and writer."""
