"""The public conformance suite of an experiment (:mod:`cogtestbed.conformance.suite`)."""
