"""A module's source as the gate finder reads it: text by ``ast`` position, and the limit on
what is read."""

from __future__ import annotations

import ast

# A source file larger than this is refused (generated tables, not code a rank runs): parsing
# it would cost the budget of a whole package.
MAX_SOURCE_BYTES = 8 * 2 ** 20
MAX_CONDITION = 240                         # characters of a condition kept as its text


class SourceText:
    """The lines of one module, for the text of a node (``ast``'s columns are UTF-8 byte
    offsets, so each line is kept as bytes)."""

    def __init__(self, source: str):
        self.lines = [line.encode("utf-8") for line in source.splitlines()]

    def segment(self, node: ast.AST, limit: int = MAX_CONDITION) -> str:
        """The node's source text on one line (inner newlines and runs of blanks closed up),
        cut at ``limit`` characters."""
        first, last = node.lineno - 1, node.end_lineno - 1
        if first < 0 or last >= len(self.lines):
            return ast.unparse(node)[:limit]
        if first == last:
            raw = self.lines[first][node.col_offset:node.end_col_offset]
        else:
            parts = [self.lines[first][node.col_offset:], *self.lines[first + 1:last],
                     self.lines[last][:node.end_col_offset]]
            raw = b" ".join(p.strip() for p in parts)
        text = " ".join(raw.decode("utf-8", "replace").split())
        return text if len(text) <= limit else text[:limit - 3] + "..."

    def starts_with(self, node: ast.AST, word: str) -> bool:
        """Whether the node's first line begins (after indentation) with ``word``."""
        line = self.lines[node.lineno - 1] if 0 < node.lineno <= len(self.lines) else b""
        return line.lstrip().startswith(word.encode())
