"""`python -m bench` and the installed `bench` script: the command line is bench.cli, imported
once Ctrl-C can be answered in one line."""
from odecore.arguments import run_command


def entry() -> None:
    """The installed `bench` script."""
    run_command("bench.cli:main")


if __name__ == "__main__":
    entry()
