"""Named, reproducible studies (paper tables) run as `distviz study NAME [--options] [--json]`.

Each study lives in its own module of this package and registers itself with
:func:`distviz.experiments.registry.study`; the CLI imports every module here.
"""
