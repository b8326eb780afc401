"""One statement's text is lexed once and parsed once, however many questions the cursor asks."""

from __future__ import annotations

from collections import Counter

import pytest
import sqlglot.parser

from dbt.adapters.deltamerge.statements.parse.history import travel_references
from dbt.adapters.deltamerge.statements.parse.reads import read_names
from dbt.adapters.deltamerge.statements.parse.statement import InsertStatement, parse_write_statement
from dbt.adapters.deltamerge.statements.parse.text import SPARK, SqlText


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> Counter[tuple[str, str]]:
    """How often each text was lexed and parsed (by sqlglot, through any caller)."""
    calls: Counter[tuple[str, str]] = Counter()
    tokenize, parse = SPARK.tokenize, sqlglot.parser.Parser.parse

    def counting_tokenize(sql: str) -> list:
        calls["lex", sql] += 1
        return tokenize(sql)

    def counting_parse(self: sqlglot.parser.Parser, raw_tokens: list, sql: str = "") -> list:
        calls["parse", sql] += 1
        return parse(self, raw_tokens, sql)

    monkeypatch.setattr(SPARK, "tokenize", counting_tokenize)
    monkeypatch.setattr(sqlglot.parser.Parser, "parse", counting_parse)
    return calls


@pytest.mark.parametrize(
    "sql",
    [
        "insert into s.t select * from s.u join v using (k)",
        "/* dbt */ with x as (select * from s.u) insert into s.t select * from x",
        "create table s.t using delta as select * from s.u",
        "merge into s.t t using s.u u on t.k = u.k when matched then delete",
    ],
)
def test_the_cursors_questions_share_one_lex_and_one_parse(counted, sql):
    text = SqlText(sql)
    assert ("s", "u") in read_names(text)
    assert travel_references(text) == []
    assert parse_write_statement(text) is not None
    assert counted == {("lex", sql): 1, ("parse", sql): 1}


def test_a_statement_that_travels_is_lexed_and_parsed_once_as_a_whole(counted):
    sql = "insert into s.t select * from s.u version as of 3"
    text = SqlText(sql)
    assert read_names(text) == {("s", "t"), ("s", "u")}
    assert [r.parts for r in travel_references(text)] == [("s", "u")]
    assert isinstance(parse_write_statement(text), InsertStatement)
    # The AS OF value's end is found by parsing short runs of its tokens, never the whole text again.
    assert counted["lex", sql] == 1 and counted["parse", sql] == 1


def test_a_text_that_does_not_parse_is_asked_once_and_answers_none(counted):
    sql = "insert into s.t select * from s.u where ("
    text = SqlText(sql)
    assert text.trees is None and text.tree is None
    assert read_names(text) == {("s", "t"), ("s", "u")}  # scanned from the tokens instead
    assert parse_write_statement(text) is None  # Spark says what is wrong when it runs it
    assert counted == {("lex", sql): 1, ("parse", sql): 1}
