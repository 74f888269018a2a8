from bench.cli import main
from core.arguments import run_command


def entry() -> None:
    """The installed `bench` script."""
    run_command(main)


if __name__ == "__main__":
    entry()
