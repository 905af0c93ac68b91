"""Running the conformance suite against the real gns3-server (3.1.0a7, `ai-features` extra).

`python3 tasks.py gns3` (this package's `run` module) installs the pinned server into a cached virtual
environment, enters a network namespace with loopback only, and runs the suite with the target file
`conformance/targets/gns3-3.1.0a7.yaml`, whose start command is `python -m conformance.gns3.serve`: it writes
the server's configuration and a minimal skills repository of our own text, then becomes the server.
"""

VERSION = "3.1.0a7"
