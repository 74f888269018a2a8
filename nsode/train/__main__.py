"""python -m nsode.train --data DIR --preset small --variant nsode-eps --out DIR (see nsode.train.run)."""
from odecore.arguments import run_command

if __name__ == "__main__":
    run_command("nsode.train.run:main")
