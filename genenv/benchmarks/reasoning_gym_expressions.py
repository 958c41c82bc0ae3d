"""Integer expressions for reasoning-gym's arithmetic families, written by the simulator itself.

reasoning-gym's ``basic_arithmetic``, ``chain_sum`` and ``products`` each ask for the value of one integer expression
(``Calculate -33 / 11 + -22.``). With the reasoning-gym adapter's ``task_spec="expression"`` the simulator writes that
expression, not a seed: the numbers and the length it picks set the task's difficulty item by item, which a seed, blind
to the item it draws, cannot. This module parses such an expression in each family's grammar, evaluates it exactly
(integers, with reasoning-gym's floor division; never Python's ``eval``), counts what reasoning-gym's curriculum
measures (terms and digits) and writes the question the way the family's own generator does, so a written task reads
and scores like one of the family's items.

Grammar (tokens separated by any whitespace; the canonical form separates them by one space, as reasoning-gym does):

* ``chain_sum``: non-negative integers joined by ``+`` and ``-``;
* ``products``: non-negative integers joined by ``*``;
* ``basic_arithmetic``: integers (a leading ``-`` makes a negative literal, ``-33``) joined by ``+ - * /``, with
  parentheses, a group negated by a leading ``-`` written ``-(``; ``*`` and ``/`` bind tighter than ``+`` and ``-``, all
  left to right, and ``/`` is floor division, as reasoning-gym computes its answers.

Numbers are written without leading zeros. A written task must divide exactly (:attr:`Expression.exact`): reasoning-gym
items do almost always, and ``7 / 2 = 3`` would teach floor division rather than arithmetic.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: the longest expression accepted (characters of the text as written)
MAX_CHARS = 200


@dataclass(frozen=True)
class ExpressionFamily:
    """What one reasoning-gym family's expressions may contain, and its question template."""

    operators: str
    parentheses: bool
    negative: bool
    question: str

    def format_question(self, expression: str) -> str:
        return self.question.format(expression)


#: the families whose items are one integer expression; templates as reasoning-gym 0.1.x writes their questions
FAMILIES: dict[str, ExpressionFamily] = {
    "basic_arithmetic": ExpressionFamily("+-*/", parentheses=True, negative=True, question="Calculate {}."),
    "chain_sum": ExpressionFamily(
        "+-",
        parentheses=False,
        negative=False,
        question="State the final answer to the following arithmetic problem: {} =",
    ),
    "products": ExpressionFamily(
        "*",
        parentheses=False,
        negative=False,
        question="Solve the following multiplication: {}. Give only the result as your final answer.",
    ),
}


@dataclass(frozen=True)
class Expression:
    """A parsed expression: canonical text, exact value and what reasoning-gym's curriculum measures."""

    text: str
    value: int
    terms: int
    digits: int
    exact: bool


_TOKEN = re.compile(r"\s*(?:(\d+)|(.))")


class _Parser:
    """Recursive descent over the tokens of one expression (see the module docstring for the grammar)."""

    def __init__(self, family: ExpressionFamily, text: str) -> None:
        self.family = family
        self.tokens: list[str] = []
        for number, other in _TOKEN.findall(text.strip()):
            token = number or other
            if number and len(number) > 1 and number.startswith("0"):
                raise ValueError(f"number {number} has a leading zero")
            if not number and token not in "+-*/()":
                raise ValueError(f"unexpected character {token!r}")
            if token in "+-*/" and token not in family.operators and not (token == "-" and family.negative):
                raise ValueError(f"operator {token!r} is not allowed here (allowed: {' '.join(family.operators)})")
            if token in "()" and not family.parentheses:
                raise ValueError("parentheses are not allowed here")
            self.tokens.append(token)
        self.at = 0
        self.out: list[str] = []
        self.literals: list[str] = []
        self.exact = True

    def peek(self) -> str | None:
        return self.tokens[self.at] if self.at < len(self.tokens) else None

    def take(self) -> str:
        token = self.peek()
        if token is None:
            raise ValueError("the expression ends where a number is expected")
        self.at += 1
        return token

    def expression(self) -> tuple[int, object]:
        """The value of the expression from here, and its tree (:func:`_reduce`'s nodes)."""
        value, node = self.product()
        while self.peek() in ("+", "-") and self.peek() in self.family.operators:
            operator = self.take()
            self.out.append(operator)
            right, right_node = self.product()
            value = value + right if operator == "+" else value - right
            node = (operator, node, right_node)
        return value, node

    def product(self) -> tuple[int, object]:
        value, node = self.operand()
        while self.peek() in ("*", "/") and self.peek() in self.family.operators:
            operator = self.take()
            self.out.append(operator)
            right, right_node = self.operand()
            if operator == "*":
                value *= right
            elif right == 0:
                raise ValueError("division by zero")
            else:
                self.exact = self.exact and value % right == 0
                value //= right
            node = (operator, node, right_node)
        return value, node

    def operand(self) -> tuple[int, object]:
        token = self.take()
        sign = ""
        if token == "-" and self.family.negative:
            sign, token = "-", self.take()
        if token.isdigit():
            self.out.append(sign + token)
            self.literals.append(token)
            value = -int(token) if sign else int(token)
            return value, value
        if token == "(":
            self.out.append(sign + "(")
            value, inner = self.expression()
            if self.peek() != ")":
                raise ValueError("a parenthesis is not closed")
            self.take()
            self.out.append(")")
            return (-value, ("neg", inner)) if sign else (value, ("paren", inner))
        raise ValueError(f"{token!r} where a number is expected")


def parse_expression(family: str, text: str) -> Expression:
    """``text`` parsed in ``family``'s grammar; ``ValueError`` says what is wrong."""
    return _parse(family, text)[0]


def _parse(family: str, text: str) -> tuple[Expression, object]:
    """:func:`parse_expression`'s result and the expression's tree: an ``int``, ``("paren", node)`` for ``( ... )``,
    ``("neg", node)`` for ``-( ... )``, or ``(operator, left, right)``."""
    if family not in FAMILIES:
        raise ValueError(f"{family!r} has no expression grammar; families with one: {', '.join(FAMILIES)}")
    if not isinstance(text, str) or not text.strip():
        raise ValueError("the expression is empty")
    if len(text) > MAX_CHARS:
        raise ValueError(f"the expression is longer than {MAX_CHARS} characters")
    parser = _Parser(FAMILIES[family], text)
    try:
        value, tree = parser.expression()
    except RecursionError:
        raise ValueError("the expression nests too deeply") from None
    if parser.peek() is not None:
        raise ValueError(f"unexpected {parser.peek()!r} after a complete expression")
    if len(parser.literals) < 2:
        raise ValueError("the expression needs at least two numbers")
    expression = Expression(
        text=" ".join(parser.out),
        value=value,
        terms=len(parser.literals),
        digits=max(len(literal) for literal in parser.literals),
        exact=parser.exact,
    )
    return expression, tree


def expression_pattern(family: str, max_terms: int, max_digits: int) -> str:
    """A regular expression for ``family``'s canonical expressions of 2 to ``max_terms`` numbers of at most
    ``max_digits`` digits (parentheses are not balanced by it: :func:`parse_expression` checks them), for constrained
    decoding."""
    grammar = FAMILIES[family]
    number = ("-?" if grammar.negative else "") + f"(0|[1-9][0-9]{{0,{max_digits - 1}}})"
    operator = "[" + re.escape(grammar.operators) + "]"
    more = f"{{1,{max(max_terms - 1, 1)}}}"
    if not grammar.parentheses:
        return f"^{number}( {operator} {number}){more}$"
    opening = ("-?" if grammar.negative else "") + r"\("
    return rf"^({opening} )*{number}( \))*( {operator} ({opening} )*{number}( \))*){more}$"


# -- worked steps ---------------------------------------------------------------------------------

_PRECEDENCE = {"+": 1, "-": 1, "*": 2, "/": 2}


def _render(node: object, parent: int = 0, right_side: bool = False) -> str:
    """``node`` as canonical text; an operation made by a step (not written in parentheses) gets the parentheses its
    place in the parent needs."""
    if isinstance(node, int):
        return str(node)
    if node[0] in ("paren", "neg"):
        return f"{'-' if node[0] == 'neg' else ''}( {_render(node[1])} )"
    operator, left, right = node
    own = _PRECEDENCE[operator]
    text = f"{_render(left, own)} {operator} {_render(right, own, right_side=True)}"
    return f"( {text} )" if own < parent or (own == parent and right_side) else text


def _reduce(node: object) -> object:
    """``node`` with its first operation whose operands are numbers carried out (floor division, as reasoning-gym); a
    parenthesised group whose inside becomes a number becomes that number (negated after ``-(``) in the same step."""
    if isinstance(node, int):
        return node
    if node[0] in ("paren", "neg"):
        inner = node[1] if isinstance(node[1], int) else _reduce(node[1])
        if isinstance(inner, int):
            return -inner if node[0] == "neg" else inner
        return (node[0], inner)
    operator, left, right = node
    if not isinstance(left, int):
        return (operator, _reduce(left), right)
    if not isinstance(right, int):
        return (operator, left, _reduce(right))
    if operator == "+":
        return left + right
    if operator == "-":
        return left - right
    if operator == "*":
        return _long_multiplication(left, right) or left * right
    return left // right


def _long_multiplication(left: int, right: int) -> object | None:
    """``left * right`` split over the place values of ``right`` when both have two digits or more and ``right``
    has two non-zero digits or more (``58 * 26`` -> ``58 * 20 + 58 * 6``); ``None`` when it is one step."""
    digits = str(abs(right))
    parts = [int(d) * 10 ** (len(digits) - 1 - i) for i, d in enumerate(digits) if d != "0"]
    if abs(left) < 10 or len(parts) < 2:
        return None
    sign = -1 if right < 0 else 1
    node: object = ("*", left, sign * parts[0])
    for part in parts[1:]:
        node = ("+", node, ("*", left, sign * part))
    return node


def worked_steps(family: str, text: str) -> list[str]:
    """The working of ``text`` (an expression of ``family``), one operation a step: the expression, then each
    rewrite with one operation carried out, ending with the value (``["3 + 4 * 2", "3 + 8", "11"]``). A
    multiplication of two numbers of two digits or more is first split over the place values of its right factor
    (``58 * 26`` -> ``58 * 20 + 58 * 6``)."""
    node = _parse(family, text)[1]
    steps = [_render(node)]
    while not isinstance(node, int):
        node = _reduce(node)
        steps.append(_render(node))
    return steps


__all__ = ["FAMILIES", "Expression", "ExpressionFamily", "expression_pattern", "parse_expression", "worked_steps"]
