"""Every access to a third-party library's private internals, one module per library.

The package uses libraries through their public API.  Where a library offers no public hook for
something the package needs, the one place reaching into its internals is its shim here
(:mod:`~cogtestbed.shims.numba_shim`, :mod:`~cogtestbed.shims.nutpie_shim`,
:mod:`~cogtestbed.shims.pytensor_shim`, :mod:`~cogtestbed.shims.typer_shim`,
:mod:`~cogtestbed.shims.torch_shim`, :mod:`~cogtestbed.shims.ppi_shim`).  Each shim names the version it
was written against (``LOCKED``: the version in ``locks/*.txt``, torch's in the Makefile) and lists the
internals it relies on (:func:`problems`); ``tests/test_shims.py`` fails when the installed library is another
version or an internal changed shape, so an upgrade cannot silently change what runs.
"""
