"""The sequential plan kind: its run, checks, text and writer."""
