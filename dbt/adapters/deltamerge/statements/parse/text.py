"""A statement's text, lexed once and parsed once: what every question about one statement shares.

The cursor asks several things of each statement dbt sends (which catalog names it reads, whether
it travels in time, which table it writes); each answer needs sqlglot's tokens or its syntax
trees. ``SqlText`` holds the text and computes both on first need, once: one lex, at most one parse
for a statement, however many questions are asked (``read_names``, ``travel_references``,
``parse_write_statement``). A text sqlglot cannot lex or parse answers None there, and each
question falls back as it documents (Spark reports a syntax error itself when it runs it).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import sqlglot.errors
from sqlglot import exp
from sqlglot.dialects.spark import Spark
from sqlglot.generators.spark import SparkGenerator
from sqlglot.tokens import Token

from dbt.adapters.deltamerge.common.sql import quiet_sqlglot


class _Spark4Generator(SparkGenerator):
    # sqlglot's Spark generator drops `parse_json(x)` to `x` (a string, not a VARIANT).
    PARSE_JSON_NAME = "PARSE_JSON"


class Spark4(Spark):
    """sqlglot's Spark dialect, regenerating what Spark 4 has that its generator drops."""

    Generator = _Spark4Generator


SPARK = Spark4()


@dataclass(frozen=True, eq=False)
class SqlText:
    """One statement's text (or a script of several), with its tokens and syntax trees on demand.

    >>> text = SqlText("select * from s.t; select 1")
    >>> len(text.tokens), [type(t).__name__ for t in text.trees], type(text.tree).__name__
    (9, ['Select', 'Select'], 'Block')
    >>> SqlText("select (").trees is None, SqlText("'open").tokens is None
    (True, True)
    """

    sql: str

    @cached_property
    def tokens(self) -> list[Token] | None:
        """sqlglot's Spark tokens of the text; None when it cannot be lexed."""
        try:
            return SPARK.tokenize(self.sql)
        except sqlglot.errors.SqlglotError:
            return None

    @cached_property
    def trees(self) -> list[exp.Expr] | None:
        """The syntax trees of the text's statements, parsed from ``tokens``; None when it does not
        parse. A statement sqlglot has no grammar for is an ``exp.Command``."""
        if self.tokens is None:
            return None
        try:
            with quiet_sqlglot():  # "falling back to parsing as a Command": the callers handle it
                parsed = SPARK.parser().parse(self.tokens, self.sql)
        except sqlglot.errors.SqlglotError:
            return None
        return [t for t in parsed if t is not None]

    @property
    def tree(self) -> exp.Expr | None:
        """The one statement's tree (several: a ``Block`` of them, as ``sqlglot.parse_one``)."""
        if not self.trees:
            return None
        return self.trees[0] if len(self.trees) == 1 else exp.Block(expressions=self.trees)
