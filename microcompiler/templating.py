"""The one jinja2 environment of the package: operator templates (``ops/templates``, the fast
kernels' templates beside their emitters in ``ops/fast``), the model library's templates
(``codegen/templates``) and the project templates (``project_templates/<template>``).

Every template is rendered with the same settings (undefined values are errors, block tags leave no
blank lines), the same filters and the same globals.
"""

from __future__ import annotations

from pathlib import Path

import jinja2
import numpy as np

from microcompiler import resources
from microcompiler.ir import c_type, np_dtype

_PACKAGE = Path(__file__).resolve().parent
# Searched in this order for a bare template name ("conv_2d_int.c.j2").
SEARCH_PATH = [_PACKAGE / "ops" / "templates", _PACKAGE / "ops" / "fast", _PACKAGE / "codegen" / "templates"]


def comment_text(text: str) -> str:
    """text made safe inside a C comment: no comment delimiters, one line (the ``comment`` filter)."""
    return " ".join(text.replace("*/", "* /").replace("/*", "/ *").split())


class _Loader(jinja2.FileSystemLoader):
    """The package's template folders, absolute paths (a project template's folder), and paths under
    project_templates (how a project template includes another: "models/runners.c.j2")."""

    def get_source(self, environment, template):
        path = Path(template)
        if not path.is_absolute():
            try:
                return super().get_source(environment, template)
            except jinja2.TemplateNotFound:
                path = resources.templates_dir() / template
        if not path.is_file():
            raise jinja2.TemplateNotFound(template)
        mtime = path.stat().st_mtime
        return path.read_text(), str(path), lambda: path.stat().st_mtime == mtime


def times(expr: str, k: int) -> str:
    """``expr * k`` as C, or ``expr`` alone when k is 1 (no ``* 1`` in the generated code)."""
    if k == 1:
        return expr
    simple = all(ch.isalnum() or ch in "_[]." for ch in expr)
    return f"{expr} * {k}" if simple else f"({expr}) * {k}"


def plus(k: int) -> str:
    """`` + k`` / `` - k`` after a C expression, or nothing when k is 0 (no ``+ 0``)."""
    return "" if k == 0 else (f" + {k}" if k > 0 else f" - {-k}")


def index_expr(*terms) -> str:
    """A flat C index: the sum of int constants and (loop variable, extent, stride) terms; constants
    0, terms of extent 1 (no loop) and of stride 0 drop out (``0`` when nothing is left), a stride of
    1 needs no multiplication (SVDF, LSTM; ``offset``)."""
    parts = []
    for term in terms:
        if isinstance(term, int):
            if term:
                parts.append(str(term))
        else:
            var, extent, stride = term
            if extent > 1 and stride:
                parts.append(times(var, stride))
    return " + ".join(parts) or "0"


def offset(terms) -> str:
    """`` + i * stride + ...`` of a flat index from (loop variable, extent, stride) terms
    (``index_expr``'s), or nothing when every term drops out."""
    expr = index_expr(*terms)
    return "" if expr == "0" else f" + {expr}"


def dedent(text: str, width: int) -> str:
    """Every line of text with up to ``width`` leading spaces removed."""
    return "".join(line[min(width, len(line) - len(line.lstrip(" "))) :] for line in text.splitlines(True))


ENV = jinja2.Environment(
    loader=_Loader([str(p) for p in SEARCH_PATH]),
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
    keep_trailing_newline=True,
)
ENV.filters["comment"] = comment_text
ENV.filters["dedent"] = dedent
ENV.filters["rstrip"] = lambda text: str(text).rstrip()
ENV.globals.update(
    c_type=c_type, itemsize=lambda d: np.dtype(np_dtype(d)).itemsize, times=times, plus=plus, offset=offset
)


def render(template: str, **values) -> str:
    """A package template (``ops/``, ``ops/fast/``, ``codegen/``) by its file name."""
    return ENV.get_template(template).render(**values)


def render_file(template_dir: Path, template: str, **values) -> str:
    """A template of a project template folder (``resources.templates_dir() / name``)."""
    return ENV.get_template(str(Path(template_dir).resolve() / template)).render(**values)
