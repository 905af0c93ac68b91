"""Hostile input at every endpoint of the reference server: no 5xx, the error body always, 401 first, 405 complete."""
