"""Code generated from spec/ by tools/generate.py. Never edit by hand: run `python3 tasks.py generate`."""
