"""`python -m nsode` and the installed `nsode` script: the command line is nsode.cli, imported
once Ctrl-C can be answered in one line."""
from odecore.arguments import run_command


def entry() -> None:
    """The installed `nsode` script."""
    run_command("nsode.cli:main")


if __name__ == "__main__":
    entry()
