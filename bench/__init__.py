"""Benchmarks of the reference server, printed side by side in one run: `python -m bench [--quick]`.

It measures and prints; it never asserts a time. See bench/README.md for what each number means.
"""
