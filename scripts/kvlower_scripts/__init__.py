"""kvlower's Python: the live set-ups that produced evidence/ and the generator of the runtime
fixtures, one package run with `python -m` from the repository root with scripts/ on the
module search path (`PYTHONPATH=scripts`); see scripts/README.md."""
