"""The distribution-free interval of a median that the benchmarks print beside their figures."""

from __future__ import annotations

import math
from collections.abc import Sequence


def median_interval(samples: Sequence[float]) -> tuple[float, float]:
    """A distribution-free ~95 % confidence interval of the median: order statistics k and n-k+1,
    with k the largest rank such that P(Binomial(n, 1/2) < k) <= 2.5 %; the whole range when n is small."""
    ordered, n = sorted(samples), len(samples)
    k, below = 0, 0.0
    while below + math.comb(n, k) / 2**n <= 0.025:
        below, k = below + math.comb(n, k) / 2**n, k + 1
    k = max(k, 1)
    return ordered[k - 1], ordered[n - k]


def coverage(samples: int) -> float:
    """How often median_interval's interval holds the true median, for this many samples (below 10, the
    whole range: 50 % for 2, 97 % for 6)."""
    low, _ = median_interval(list(range(samples)))  # the interval is [X(k), X(n-k+1)], with k = low + 1
    below = sum(math.comb(samples, i) for i in range(low + 1)) / 2**samples  # P(fewer than k samples under the median)
    return 1 - 2 * below  # and as likely above
