"""python -m nsode.train --data DIR --preset small --variant nsode-eps --out DIR (see nsode.train.run)."""
import sys

from nsode.train.run import main

sys.exit(main())
