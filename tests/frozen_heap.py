"""Leave what a pytest worker holds when a test module starts (torch, the generator) out of garbage collection.

A worker holds torch's objects, hundreds of thousands of them; every full collection walks them
all, and a spec load allocates enough to set off such collections. A test module that runs the
generator in this process a hundred times paid about a quarter of its CPU for those walks
(tests/test_bad_input.py's check cases: 17 -> 13 CPU-s with the heap frozen, -n 0).

gc.freeze() moves the objects alive now to a generation no collection visits; what tests allocate
afterwards is collected as before. It changes no outcome: reference counting still frees what it
frees, and only cyclic garbage among the frozen objects, garbage once they die, is never reclaimed.
It is never undone (gc.unfreeze would also thaw what anyone else froze); a later module freezing
again adds what it finds alive then.
"""

import gc

import pytest


def heap_frozen_for_the_module():
    """An autouse fixture for a test module: assign it there, as `frozen_heap = heap_frozen_for_the_module()`."""

    @pytest.fixture(scope="module", autouse=True)
    def frozen_heap() -> None:
        gc.collect()  # today's garbage is collected, not frozen
        gc.freeze()

    return frozen_heap
