"""The lowering matrix page (results/lowering-matrix.html) in a real browser."""
