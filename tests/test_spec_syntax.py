"""generator/loading/syntax.py: a spec of ordinary size stays parsed between runs in one process; a large one
does not."""

from generator.loading import syntax


def test_forget_keeps_small_trees_and_frees_large_ones():
    syntax._indexes.clear()  # what tests before kept in this process (in-process check runs) is not this test's
    small = b"x = dict(a=1)\n"
    large = b"".join(b"y%d = dict(a=%d)\n" % (i, i) for i in range(20_000))  # ~400 KB of source
    assert len(large) > syntax._KEPT_SOURCE_BYTES
    kept, freed = syntax.index_of(small, "small.py"), syntax.index_of(large, "large.py")
    syntax.forget()
    assert syntax.index_of(small, "small.py") is kept  # not parsed again
    assert syntax.index_of(large, "large.py") is not freed  # parsed again: its tree was let go
    syntax.forget()
    assert large not in syntax._indexes
