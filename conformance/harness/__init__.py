"""The run machinery: the target file, the environment and its provisioning, preflight, running the checks (retries,
transient errors, judging alone), the verdicts, the clean-up, the processes the suite starts, and run_and_report,
the one function every front-end (CLI, pytest plugin, the GNS3 and peers runners) calls."""
