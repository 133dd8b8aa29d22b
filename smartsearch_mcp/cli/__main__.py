"""python -m smartsearch_mcp.cli"""

import sys

from smartsearch_mcp.cli.main import main

sys.exit(main())
