"""`python -m generator`: see generator.cli."""

import sys

try:
    from generator import heap

    heap.collect_rarely()  # before the imports, which allocate most of a run's objects
    from generator.cli import main
except KeyboardInterrupt:  # Ctrl-C while the generator starts: one line, as once it runs
    sys.stderr.write("error: interrupted; every file is its old or its new version\n")
    sys.exit(130)

sys.exit(main())
