"""python -m smartsearch_mcp"""

import sys

from smartsearch_mcp.cli import main

sys.exit(main())
