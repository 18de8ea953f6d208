"""Experiment declarations: one module per experiment, each with a module-level ``SPEC``.

``cogtestbed/experiments/<name>.py`` (``-`` in the experiment name becomes ``_``) declares an
:class:`~cogtestbed.experiments.spec.ExperimentSpec`; :mod:`cogtestbed.registry` discovers the
modules of this package (and the ``cogtestbed.experiments`` entry-point group of other installed
distributions) without a hand-written list.
"""
