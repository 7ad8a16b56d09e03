"""mutmut's command line with one mutant per string literal (``"XX" + s + "XX"``) instead of
three (that one, and the literal in lower and in upper case): a changed string is caught or
not by the same tests whatever the change, and the case variants tripled the run time of the
message-heavy modules. Every other operator is mutmut's own."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

from mutmut.mutation import mutators

_ORIGINAL = mutators.operator_string


def operator_string(node: Any) -> Iterator[Any]:
    """The first of mutmut's string mutants only."""
    for mutated in _ORIGINAL(node):
        yield mutated
        return


mutators.mutation_operators[:] = [
    (kind, operator_string if operator is _ORIGINAL else operator)
    for kind, operator in mutators.mutation_operators
]

if __name__ == "__main__":
    from mutmut.__main__ import cli

    sys.argv[0] = "mutmut"
    cli()
