"""The public conformance suite of an experiment (:mod:`cogtestbed.validation.conformance.suite`)."""
