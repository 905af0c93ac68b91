"""The playground page (playground/): its build, how the reference server serves it, and a real browser using it."""
