"""The public API: the functions :mod:`cogtestbed` exports (``import cogtestbed as ct``), each a
documented, typed function the command line is a thin layer over."""
