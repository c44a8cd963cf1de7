"""Review: generated builders compared, field by field, with torch's or another revision's.

Owns the equality proof of two BackendConfigs (`equality`), the differences a
spec declares from its reference builder (`divergence`), the per-backend records
`diff` reports (`results`), building each side and comparing them (`diff`), and
how the results print (`formats`).

May import: the base modules, `generator.loading`, `generator.freshness` and `generator.build`.
"""
