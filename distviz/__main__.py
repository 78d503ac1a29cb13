"""`python -m distviz ...` runs the command-line interface."""

from distviz.cli import main

raise SystemExit(main())
