from fake_llm.cli import main

main(prog_name="python -m fake_llm")
