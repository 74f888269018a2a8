import sys

from bench.cli import main

if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:  # output piped into `head` and the like: stop quietly
        sys.stderr.close()
        sys.exit(1)
